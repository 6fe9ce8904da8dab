package app

import (
	"bufio"
	"context"
	"encoding/json"
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

func writeTodo(t *testing.T, dir, uid, body string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	data := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\nBEGIN:VTODO\r\nUID:" + uid + "\r\nDTSTAMP:20260101T000000Z\r\n" +
		strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(filepath.Join(dir, uid+".ics"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Tasks end to end through the agent: the scripted model lists what is
// due (the tool's answer reaches it as outside content), proposes
// tasks_add and tasks_complete, each waits for an approval card and writes
// nothing until approved; approved, the task is written once, journaled
// done and read back; the Agenda page's GET /api/tasks shows the result,
// and its checkbox (POST /api/tasks/complete, the owner's token) completes
// a task without a card.
func TestAgentAddsAndCompletesTasksOnApproval(t *testing.T) {
	t.Parallel()
	today := time.Now().UTC()
	yesterday := today.AddDate(0, 0, -1).Format("20060102")
	tomorrow := today.AddDate(0, 0, 1).Format("2006-01-02")
	dir := filepath.Join(t.TempDir(), "home")
	writeTodo(t, dir, "rent", "SUMMARY:Pay the rent\nDUE;VALUE=DATE:"+yesterday+"\nPRIORITY:1")
	writeTodo(t, dir, "milk", "SUMMARY:Buy milk")

	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "tasks_list", `{"due":"today"}`)),
		llmtest.Text("The rent is overdue."),
		llmtest.ToolCalls(llmtest.Call("c2", "tasks_add", `{"summary":"Call the plumber","due":"`+tomorrow+`","priority":2}`)),
		llmtest.Text("Added."),
		llmtest.ToolCalls(llmtest.Call("c3", "tasks_complete", `{"text":"rent"}`)),
		llmtest.Text("Marked done."),
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	evResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer evResp.Body.Close()
	go io.Copy(io.Discard, bufio.NewReader(evResp.Body))

	code, body := call("POST", "/api/chats", `{}`)
	var ch struct{ ID string }
	if code >= 300 || json.Unmarshal([]byte(body), &ch) != nil {
		t.Fatalf("create chat: %d %s", code, body)
	}
	var res struct {
		OK   bool
		Text string
	}
	_, body = call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"what is due today?","wait":true}`)
	if json.Unmarshal([]byte(body), &res) != nil || !res.OK {
		t.Fatalf("list turn: %s", body)
	}
	var toolOut string
	for _, m := range up.ChatRequests()[1].Messages {
		if m.ToolCallID == "c1" {
			toolOut = m.Content
		}
	}
	if !strings.Contains(toolOut, `"uid":"rent"`) || !strings.Contains(toolOut, `"overdue":true`) || strings.Contains(toolOut, "Buy milk") || !strings.Contains(toolOut, "untrusted_content") {
		t.Fatalf("tasks_list result given to the model: %s", toolOut)
	}

	// approveNext waits for the turn's card, checks it and approves it.
	approveNext := func(text, tool, preview string) {
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
		if card.Tool != tool || !strings.Contains(card.Preview, preview) {
			t.Fatalf("card: %+v, want %s with %q", card, tool, preview)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 2 && tool == "tasks_add" {
			t.Fatalf("%d files before approval", len(ents))
		}
		if code, b := call("POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != 200 {
			t.Fatalf("approve: %d %s", code, b)
		}
		if b := <-done; json.Unmarshal([]byte(b), &res) != nil || !res.OK {
			t.Fatalf("%s turn: %s", tool, b)
		}
	}
	approveNext("add calling the plumber for tomorrow", "tasks_add", `add task "Call the plumber" due `)
	approveNext("I paid the rent", "tasks_complete", `complete task "Pay the rent" (rent) in list "home"`)

	_, b := call("GET", "/api/calendar/ops", "")
	var ops struct {
		Operations []struct{ Kind, UID, State, Calendar, Href string }
	}
	if json.Unmarshal([]byte(b), &ops) != nil || len(ops.Operations) != 2 || ops.Operations[0].Kind != "task_complete" || ops.Operations[1].Kind != "task_create" ||
		ops.Operations[0].State != "done" || ops.Operations[1].State != "done" {
		t.Fatalf("journal: %s", b)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ops.Operations[1].Href))
	if strings.Count(string(data), "UID:"+ops.Operations[1].UID) != 1 || !strings.Contains(string(data), "SUMMARY:Call the plumber") {
		t.Fatalf("added file:\n%s", data)
	}
	data, _ = os.ReadFile(filepath.Join(dir, "rent.ics"))
	if !strings.Contains(string(data), "STATUS:COMPLETED") {
		t.Fatalf("completed file:\n%s", data)
	}
	_, b = call("GET", "/api/tasks", "")
	if strings.Contains(b, "Pay the rent") || !strings.Contains(b, "Call the plumber") || !strings.Contains(b, "Buy milk") {
		t.Fatalf("tasks after the turns: %s", b)
	}
	// The Agenda page's checkbox: the owner's own tap, no card.
	code, b = call("POST", "/api/tasks/complete", `{"uid":"milk"}`)
	if code != 200 || !strings.Contains(b, `"state":"done"`) {
		t.Fatalf("tap: %d %s", code, b)
	}
	code, b = call("POST", "/api/tasks/complete", `{"uid":"milk"}`)
	if code != http.StatusConflict || !strings.Contains(b, "already completed") {
		t.Fatalf("second tap: %d %s", code, b)
	}
	if code, b = call("POST", "/api/tasks/complete", `{"uid":"milk","approved":true}`); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", code, b)
	}
	if code, b = call("GET", "/api/tasks?due=someday", ""); code != http.StatusBadRequest {
		t.Fatalf("bad due: %d %s", code, b)
	}
}

// The POST routes stand as the user's approval of one call, so they need
// the approve scope; outside the daemon (no authority) they say so.
func TestTaskRoutesNeedApprove(t *testing.T) {
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
	if _, err := c.SyncAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	c.TaskRoutes(mux, func() *authority.Authority { return nil })
	phone := devices.WithIdentity(context.Background(), devices.Identity{DeviceID: "d1", Name: "phone", Scopes: []devices.Scope{devices.Chat, devices.Read}})
	owner := devices.WithIdentity(context.Background(), devices.Identity{Scopes: []devices.Scope{devices.Chat, devices.Read, devices.Approve}})
	for _, tc := range []struct {
		name         string
		ctx          context.Context
		method, path string
		status       int
		want         string
	}{
		{"list", phone, "GET", "/api/tasks", 200, `"summary":"Buy milk"`},
		{"chat-scoped tap", phone, "POST", "/api/tasks/complete", http.StatusForbidden, "lacks the approve scope"},
		{"chat-scoped add", phone, "POST", "/api/tasks", http.StatusForbidden, "lacks the approve scope"},
		{"no authority", owner, "POST", "/api/tasks/complete", http.StatusConflict, "not running"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(tc.ctx, tc.method, tc.path, strings.NewReader(`{"uid":"milk"}`))
		r.Header.Set("Content-Type", "application/json")
		mux.ServeHTTP(w, r)
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want %d %q", tc.name, w.Code, w.Body, tc.status, tc.want)
		}
	}
}
