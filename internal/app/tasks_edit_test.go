package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// Changing and deleting tasks end to end: the agent's tasks_update and
// tasks_delete wait for a card that says what changes (old → new) and
// write nothing until approved; the Agenda page's edit form and delete
// button (POST /api/tasks/update, /api/tasks/delete, the owner's token)
// run the same tools without a card; bad requests are said.
func TestAgentUpdatesAndDeletesTasksOnApproval(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC()
	in3 := today.AddDate(0, 0, 3)
	dir := filepath.Join(t.TempDir(), "home")
	writeTodo(t, dir, "rent", "SUMMARY:Pay the rent\nPRIORITY:1")
	writeTodo(t, dir, "milk", "SUMMARY:Buy milk")
	writeTodo(t, dir, "bins", "SUMMARY:Take the bins out\nDUE;VALUE=DATE:20260302\nRRULE:FREQ=WEEKLY;BYDAY=MO")
	writeTodo(t, dir, "plants", "SUMMARY:Water the plants")

	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "tasks_update", `{"text":"rent","due":"`+in3.Format("2006-01-02")+`","priority":2}`)),
		llmtest.Text("Moved."),
		llmtest.ToolCalls(llmtest.Call("c2", "tasks_delete", `{"text":"milk"}`)),
		llmtest.Text("Deleted."),
	)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "home", Path: dir}}
	a.Config.Calendar.Timezone = "UTC"
	base, stop := start(t, a)
	defer stop()
	call := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	waitFor("the task list to be indexed", func() bool {
		_, b := call("GET", "/api/tasks", "")
		return strings.Contains(b, `"uid":"rent"`)
	})
	// An open event stream is someone who can approve a card.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	evResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer evResp.Body.Close()
	go io.Copy(io.Discard, evResp.Body)

	code, body := call("POST", "/api/chats", `{}`)
	var ch struct{ ID string }
	if code >= 300 || json.Unmarshal([]byte(body), &ch) != nil {
		t.Fatalf("create chat: %d %s", code, body)
	}
	approveNext := func(text, tool, preview string, untouched string) {
		t.Helper()
		done := make(chan string, 1)
		go func() {
			_, b := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"`+text+`","wait":true}`)
			done <- b
		}()
		var card struct{ ID, Tool, Preview string }
		waitFor("the "+tool+" approval card", func() bool {
			_, b := call("GET", "/api/approvals", "")
			var l struct{ Approvals []json.RawMessage }
			json.Unmarshal([]byte(b), &l)
			return len(l.Approvals) > 0 && json.Unmarshal(l.Approvals[0], &card) == nil && card.ID != ""
		})
		if card.Tool != tool || card.Preview != preview {
			t.Fatalf("card: %+v, want %s with %q", card, tool, preview)
		}
		// Nothing is written before the approval.
		if data, err := os.ReadFile(filepath.Join(dir, untouched)); err != nil || strings.Contains(string(data), "SEQUENCE") {
			t.Fatalf("%s before approval: %v\n%s", untouched, err, data)
		}
		if code, b := call("POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != 200 {
			t.Fatalf("approve: %d %s", code, b)
		}
		var res struct{ OK bool }
		if b := <-done; json.Unmarshal([]byte(b), &res) != nil || !res.OK {
			t.Fatalf("%s turn: %s", tool, b)
		}
	}
	approveNext("move the rent to "+in3.Format("Monday"), "tasks_update",
		`update task "Pay the rent" (rent) in list "home": priority 1 → 2; due none → `+in3.Format("Mon 2006-01-02"), "rent.ics")
	approveNext("I have milk", "tasks_delete", `delete task "Buy milk" (milk) from list "home"`, "milk.ics")
	data, _ := os.ReadFile(filepath.Join(dir, "rent.ics"))
	if !strings.Contains(string(data), "DUE;VALUE=DATE:"+in3.Format("20060102")) || !strings.Contains(string(data), "PRIORITY:2") {
		t.Fatalf("updated file:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "milk.ics")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file: %v", err)
	}

	// The Agenda page's edit form and delete button: the owner's own
	// command, no card.
	code, b := call("POST", "/api/tasks/update", `{"uid":"plants","list":"home","summary":"Water the balcony plants","notes":"twice a week","due":"none"}`)
	if code != http.StatusConflict || !strings.Contains(b, "no due date to clear") {
		t.Fatalf("clearing a due the task lacks: %d %s", code, b)
	}
	code, b = call("POST", "/api/tasks/update", `{"uid":"plants","list":"home","summary":"Water the balcony plants","notes":"twice a week"}`)
	if code != 200 || !strings.Contains(b, `"kind":"task_update"`) || !strings.Contains(b, `"state":"done"`) {
		t.Fatalf("edit: %d %s", code, b)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "plants.ics"))
	if !strings.Contains(string(data), "SUMMARY:Water the balcony plants") || !strings.Contains(string(data), "DESCRIPTION:twice a week") {
		t.Fatalf("edited file:\n%s", data)
	}
	if code, b = call("POST", "/api/tasks/delete", `{"uid":"bins","list":"home"}`); code != http.StatusConflict || !strings.Contains(b, "series: true") {
		t.Fatalf("recurring delete without series: %d %s", code, b)
	}
	if code, b = call("POST", "/api/tasks/delete", `{"uid":"bins","list":"home","series":true}`); code != 200 || !strings.Contains(b, `"kind":"task_delete"`) {
		t.Fatalf("series delete: %d %s", code, b)
	}
	if code, b = call("POST", "/api/tasks/update", `{"uid":"plants","summary":"x","approved":true}`); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", code, b)
	}
	if code, b = call("POST", "/api/tasks/update", `{"uid":"plants","priority":12}`); code != http.StatusBadRequest || !strings.Contains(b, "priority") {
		t.Fatalf("bad priority: %d %s", code, b)
	}
	if code, b = call("POST", "/api/tasks/update", `{"uid":"plants"}`); code != http.StatusConflict || !strings.Contains(b, "nothing to change") {
		t.Fatalf("no change: %d %s", code, b)
	}
	_, b = call("GET", "/api/tasks", "")
	if strings.Contains(b, "Buy milk") || strings.Contains(b, "bins") || !strings.Contains(b, "Water the balcony plants") || !strings.Contains(b, `"priority":2`) {
		t.Fatalf("tasks after the writes: %s", b)
	}
	_, b = call("GET", "/api/calendar/ops", "")
	if strings.Count(b, `"task_update"`) != 2 || strings.Count(b, `"task_delete"`) != 2 {
		t.Fatalf("journal: %s", b)
	}
}

// The edit and delete routes stand as the user's approval of one call, so
// they need the approve scope too.
func TestTaskEditRoutesNeedApprove(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "home")
	writeTodo(t, dir, "milk", "SUMMARY:Buy milk")
	a := testApp(t, t.TempDir())
	defer a.Close()
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "home", Path: dir}}
	c, err := a.OpenCalendar(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.TaskRoutes(mux, func() *authority.Authority { return nil })
	phone := devices.WithIdentity(context.Background(), devices.Identity{DeviceID: "d1", Name: "phone", Scopes: []devices.Scope{devices.Chat, devices.Read}})
	owner := devices.WithIdentity(context.Background(), devices.Identity{Scopes: []devices.Scope{devices.Chat, devices.Read, devices.Approve}})
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		path   string
		status int
		want   string
	}{
		{"chat-scoped edit", phone, "/api/tasks/update", http.StatusForbidden, "lacks the approve scope"},
		{"chat-scoped delete", phone, "/api/tasks/delete", http.StatusForbidden, "lacks the approve scope"},
		{"no authority", owner, "/api/tasks/delete", http.StatusConflict, "not running"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(tc.ctx, "POST", tc.path, strings.NewReader(`{"uid":"milk","summary":"x"}`))
		if strings.HasSuffix(tc.path, "delete") {
			r = httptest.NewRequestWithContext(tc.ctx, "POST", tc.path, strings.NewReader(`{"uid":"milk"}`))
		}
		r.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want %d %q", tc.name, w.Code, w.Body, tc.status, tc.want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "milk.ics")); !strings.Contains(string(data), "SUMMARY:Buy milk") {
		t.Fatalf("milk changed:\n%s", data)
	}
}
