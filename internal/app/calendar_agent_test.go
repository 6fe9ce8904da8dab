package app

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// nextThursday is the first Thursday at least two days after now (UTC), so
// the fixture never straddles the current day.
func nextThursday(now time.Time) time.Time {
	d := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 2)
	for d.Weekday() != time.Thursday {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

// "Am I free Thursday?": the scripted model asks calendar_free_slots, the
// tool's answer (the dentist at 10:00 busy, the gaps around it) reaches the
// model as untrusted content, the model answers from it; then it proposes
// calendar_create, which waits for an approval card and writes nothing
// until approved; approved, the event is written once to the vdir, the
// journal records it done, and it reads back by UID.
func TestAgentAnswersAvailabilityAndCreatesEventOnApproval(t *testing.T) {
	t.Parallel()
	thu := nextThursday(time.Now())
	day := thu.Format("2006-01-02")
	dir := filepath.Join(t.TempDir(), "work")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "dentist.ics"), []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:test\r\nBEGIN:VEVENT\r\nUID:dentist-1\r\nDTSTAMP:20260101T000000Z\r\n"+
		"DTSTART:"+thu.Add(10*time.Hour).Format("20060102T150405Z")+"\r\nDTEND:"+thu.Add(11*time.Hour).Format("20060102T150405Z")+"\r\nSUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), 0o644)

	createArgs := `{"summary":"Lunch with Anna","start":"` + day + `T12:30","duration_minutes":60,"calendar":"work"}`
	up := llmtest.New(t,
		llmtest.ToolCalls(llmtest.Call("c1", "calendar_free_slots", `{"from":"`+day+`","to":"`+thu.AddDate(0, 0, 1).Format("2006-01-02")+`","day_start":"09:00","day_end":"18:00"}`)),
		llmtest.Text("On Thursday you have the dentist 10:00–11:00; you are free 09:00–10:00 and 11:00–18:00."),
		llmtest.ToolCalls(llmtest.Call("c2", "calendar_create", createArgs)),
		llmtest.Text("Booked: lunch with Anna on Thursday at 12:30."),
	)
	a := testApp(t, t.TempDir())
	a.Config.LLM.BaseURL, a.Config.LLM.Model = up.URL, "llama3"
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "work", Path: dir}}
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
	// The reconcile worker indexes the vdir at start; wait for it rather
	// than racing the model's first tool call.
	waitFor("the vdir to be indexed", func() bool {
		_, b := call("GET", "/api/calendar/agenda?from="+day+"&to="+thu.AddDate(0, 0, 1).Format("2006-01-02"), "")
		return strings.Contains(b, "dentist-1")
	})
	// An attached client makes approvals answerable.
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
	_, body = call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"am I free Thursday?","wait":true}`)
	if json.Unmarshal([]byte(body), &res) != nil || !res.OK || !strings.Contains(res.Text, "free 09:00–10:00") {
		t.Fatalf("availability turn: %s", body)
	}
	// The model's second request carried the tool's real answer: the
	// dentist busy 10–11 and the free gaps, wrapped as untrusted content.
	reqs := up.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests after the first turn, want 2", len(reqs))
	}
	var toolOut string
	for _, m := range reqs[1].Messages {
		if m.ToolCallID == "c1" {
			toolOut = m.Content
		}
	}
	busy := `"start":"` + day + `T10:00:00Z","end":"` + day + `T11:00:00Z"`
	free := `"start":"` + day + `T11:00:00Z","end":"` + day + `T18:00:00Z"`
	if !strings.Contains(toolOut, busy) || !strings.Contains(toolOut, free) || !strings.Contains(toolOut, "untrusted_content") {
		t.Fatalf("calendar_free_slots result given to the model: %s", toolOut)
	}

	done := make(chan string, 1)
	go func() {
		_, b := call("POST", "/api/chats/"+ch.ID+"/messages", `{"text":"book lunch with Anna at 12:30 then","wait":true}`)
		done <- b
	}()
	var card struct{ ID, Tool, Preview string }
	waitFor("the calendar_create approval card", func() bool {
		_, b := call("GET", "/api/approvals", "")
		var l struct{ Approvals []json.RawMessage }
		json.Unmarshal([]byte(b), &l)
		if len(l.Approvals) == 0 {
			return false
		}
		return json.Unmarshal(l.Approvals[0], &card) == nil && card.ID != ""
	})
	if card.Tool != "calendar_create" || !strings.Contains(card.Preview, "Lunch with Anna") || !strings.Contains(card.Preview, "12:30–13:30") ||
		!strings.Contains(card.Preview, `"work"`) || !strings.Contains(card.Preview, "no conflicts") {
		t.Fatalf("card: %+v", card)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the vdir before approval, want 1", len(ents))
	}
	if code, b := call("POST", "/api/approvals/"+card.ID, `{"decision":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, b)
	}
	b := <-done
	if json.Unmarshal([]byte(b), &res) != nil || !res.OK || !strings.Contains(res.Text, "Booked") {
		t.Fatalf("create turn: %s", b)
	}

	// Written once: one new file, holding the UID the journal recorded.
	_, b = call("GET", "/api/calendar/ops", "")
	var ops struct {
		Operations []struct{ Kind, UID, State, Calendar string }
	}
	if json.Unmarshal([]byte(b), &ops) != nil || len(ops.Operations) != 1 || ops.Operations[0].Kind != "create" ||
		ops.Operations[0].State != "done" || ops.Operations[0].UID == "" || ops.Operations[0].Calendar != "work" {
		t.Fatalf("journal: %s", b)
	}
	uid := ops.Operations[0].UID
	ents, _ := os.ReadDir(dir)
	var written []string
	for _, e := range ents {
		if e.Name() != "dentist.ics" {
			written = append(written, e.Name())
		}
	}
	if len(written) != 1 {
		t.Fatalf("vdir after approval: %v, want one new file", ents)
	}
	data, _ := os.ReadFile(filepath.Join(dir, written[0]))
	if strings.Count(string(data), "UID:"+uid) != 1 || !strings.Contains(string(data), "SUMMARY:Lunch with Anna") {
		t.Fatalf("written file:\n%s", data)
	}
	// Read back by UID from the index the daemon maintains.
	st, err := calendar.Open(context.Background(), calendar.Options{DBPath: a.Paths.DB(calendar.Schema.Name), Floating: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if f, err := st.FileOf(context.Background(), "work", uid); err != nil || f != written[0] {
		t.Fatalf("FileOf(%s) = %q, %v", uid, f, err)
	}
	_, b = call("GET", "/api/calendar/agenda?from="+day+"&to="+thu.AddDate(0, 0, 1).Format("2006-01-02"), "")
	if !strings.Contains(b, `"uid":"`+uid+`"`) || !strings.Contains(b, `"start":"`+day+`T12:30:00Z"`) {
		t.Fatalf("agenda after the write: %s", b)
	}
	// The tool result the model saw says done with that UID.
	reqs = up.ChatRequests()
	last := reqs[len(reqs)-1]
	raw, _ := json.Marshal(last)
	if !strings.Contains(string(raw), uid) || !strings.Contains(string(raw), `\"state\":\"done\"`) {
		t.Fatalf("create result not given to the model: %s", raw)
	}
}
