package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

type wireEvent struct {
	ID   string
	Type string
	Env  struct {
		Seq    int64           `json:"seq"`
		Type   string          `json:"type"`
		ChatID string          `json:"chat_id"`
		Data   json.RawMessage `json:"data"`
	}
}

func readEvents(t *testing.T, body *bufio.Scanner, out chan<- wireEvent) {
	var ev wireEvent
	var data string
	for body.Scan() {
		l := body.Text()
		switch {
		case l == "":
			if ev.Type != "" {
				json.Unmarshal([]byte(data), &ev.Env)
				out <- ev
			}
			ev, data = wireEvent{}, ""
		case strings.HasPrefix(l, "id: "):
			ev.ID = l[4:]
		case strings.HasPrefix(l, "event: "):
			ev.Type = l[7:]
		case strings.HasPrefix(l, "data: "):
			data = l[6:]
		}
	}
	close(out)
}

// TestProtocolEventSequence drives a gated turn through the real routes and
// checks the event stream documented in docs/protocol.md, then resumes it.
func TestProtocolEventSequence(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.Turn{Text: []string{"Let me ", "write."}, ToolCalls: []llmtest.ToolCall{writeCall("w1", "p.txt", "hi")}},
		llmtest.Text("Done."),
	)
	h.approve.Store(0) // the SSE subscriber below is the approver
	h.broker.SetApprovers(h.bus.Approvers)
	mux := http.NewServeMux()
	(&chat.API{Store: h.chats}).Routes(mux)
	h.agent.Routes(mux)
	h.broker.Routes(mux)
	h.bus.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?chat="+h.chatID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	evs := make(chan wireEvent, 256)
	go readEvents(t, bufio.NewScanner(resp.Body), evs)
	if ev := <-evs; ev.Type != "ready" {
		t.Fatalf("first event %s", ev.Type)
	}
	if r, err := http.Post(srv.URL+"/api/chats/"+h.chatID+"/messages", "application/json", strings.NewReader(`{"text":"write p.txt"}`)); err != nil || r.StatusCode != 202 {
		t.Fatalf("post: %v %v", r, err)
	}
	var types []string
	var lastID string
	for ev := range evs {
		types = append(types, ev.Type)
		lastID = ev.ID
		if ev.Env.Type != ev.Type || ev.Env.ChatID != h.chatID || ev.ID == "" {
			t.Errorf("envelope mismatch: %+v", ev)
		}
		switch ev.Type {
		case "approval.requested":
			var d struct {
				Approval struct {
					ID, Kind, Tool, Risk, Preview string
					Args                          map[string]any
				} `json:"approval"`
			}
			json.Unmarshal(ev.Env.Data, &d)
			if d.Approval.Kind != "approval" || d.Approval.Tool != "write_file" || d.Approval.Args["path"] != "p.txt" || d.Approval.Risk != "medium" {
				t.Errorf("approval payload %s", ev.Env.Data)
			}
			r, err := http.Post(srv.URL+"/api/approvals/"+d.Approval.ID, "application/json", strings.NewReader(`{"decision":"approve"}`))
			if err != nil || r.StatusCode != 200 {
				t.Fatalf("approve: %v %v", r, err)
			}
		case "tool.finished":
			if !strings.Contains(string(ev.Env.Data), `"decision":"approved"`) || !strings.Contains(string(ev.Env.Data), `"status":"ok"`) {
				t.Errorf("tool.finished %s", ev.Env.Data)
			}
		case "turn.finished":
			if !strings.Contains(string(ev.Env.Data), `"ok":true`) || !strings.Contains(string(ev.Env.Data), `"text":"Done."`) {
				t.Errorf("turn.finished %s", ev.Env.Data)
			}
		}
		if ev.Type == "turn.finished" {
			break
		}
	}
	want := "turn.queued turn.started message.created message.delta message.delta message.created approval.requested approval.resolved tool.started tool.finished message.created message.delta message.created turn.finished"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("event sequence\n got %s\nwant %s", got, want)
	}
	if h.read("p.txt") != "hi" {
		t.Error("approved write did not happen")
	}
	// Resume from the middle: everything after that id comes again.
	req2, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?chat="+h.chatID, nil)
	req2.Header.Set("Last-Event-ID", "3")
	resp2, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	evs2 := make(chan wireEvent, 256)
	go readEvents(t, bufio.NewScanner(resp2.Body), evs2)
	<-evs2 // ready
	n := 0
	for ev := range evs2 {
		n++
		if ev.ID == lastID {
			break
		}
	}
	if n != len(types)-3 { // seq 1-3 were turn.queued, turn.started, message.created
		t.Errorf("resume replayed %d events, want %d", n, len(types)-3)
	}
}
