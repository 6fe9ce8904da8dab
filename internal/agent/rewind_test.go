package agent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func contents(ms []chat.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Role+":"+m.Content)
	}
	return out
}

// Regenerate replaces the last reply and edit-and-resend replaces a user
// message and what followed; both keep the replaced messages in the export
// and record them in the audit trail.
func TestRegenerateAndEditSupersedeButKeepTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, harnessOpts{},
		llmtest.Text("A1"), llmtest.Text("A2"), llmtest.Text("A2 again"), llmtest.Text("E1"))
	h.run("first question", Options{})
	h.run("second question", Options{})
	msgs, _ := h.chats.Messages(ctx, h.chatID, 0)
	firstUser := msgs[0].ID
	oldReply := msgs[3].ID

	if res := h.run("", Options{Regenerate: true}); !res.OK || res.Text != "A2 again" {
		t.Fatalf("regenerate: %+v", res)
	}
	msgs, _ = h.chats.Messages(ctx, h.chatID, 0)
	if got := strings.Join(contents(msgs), "|"); got != "user:first question|assistant:A1|user:second question|assistant:A2 again" {
		t.Fatalf("after regenerate: %s", got)
	}
	// The model saw the history up to the user's message, not the old reply.
	reqs := h.srv.ChatRequests()
	sent := reqs[2].Messages
	if last := sent[len(sent)-1]; last.Role != "user" || userText(last.Content) != "second question" {
		t.Fatalf("regenerate sent %+v", last)
	}
	for _, m := range sent {
		if m.Content == "A2" {
			t.Fatal("the superseded reply reached the model")
		}
	}

	// Only a live user message can be edited.
	for _, bad := range []string{oldReply, msgs[1].ID, "m_missing"} {
		if _, err := h.agent.Submit(ctx, h.chatID, "x", Options{EditOf: bad}); !errors.Is(err, chat.ErrNotRewindable) {
			t.Errorf("edit of %s: %v", bad, err)
		}
	}
	if res := h.run("first question, edited", Options{EditOf: firstUser}); !res.OK || res.Text != "E1" {
		t.Fatalf("edit: %+v", res)
	}
	msgs, _ = h.chats.Messages(ctx, h.chatID, 0)
	if got := strings.Join(contents(msgs), "|"); got != "user:first question, edited|assistant:E1" {
		t.Fatalf("after edit: %s", got)
	}
	sent = h.srv.ChatRequests()[3].Messages
	if len(sent) != 2 || userText(sent[1].Content) != "first question, edited" {
		t.Fatalf("edit sent %+v", sent)
	}

	// The export is the full record: nothing was deleted.
	ex, err := h.chats.Export(ctx, h.chatID)
	if err != nil {
		t.Fatal(err)
	}
	superseded := 0
	for _, m := range ex.Messages {
		if m.SupersededBy != "" {
			superseded++
		}
	}
	if len(ex.Messages) != 7 || superseded != 5 {
		t.Fatalf("export has %d messages, %d superseded; want 7 and 5: %+v", len(ex.Messages), superseded, ex.Messages)
	}
	evs, err := h.audit.List(ctx, audit.Filter{Type: TypeRewind, ChatID: h.chatID})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("audit has %d rewind events, want 2: %+v", len(evs), evs)
	}
	var sum []string
	for _, e := range evs {
		sum = append(sum, e.Summary)
	}
	joined := strings.Join(sum, "; ")
	if !strings.Contains(joined, "reply regenerated: 1 message(s)") || !strings.Contains(joined, "edited and sent again: 4 message(s)") {
		t.Errorf("audit summaries: %s", joined)
	}
}

// A message sent with Queue while an approval waits keeps the approval, is
// listed by the status (so a reloaded page shows it), can be cancelled on
// its own, and runs after the turn ends. Edits wait for an idle chat.
func TestQueuedMessageKeepsThePendingApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(writeCall("w", "out.txt", "hi")), llmtest.Text("written"), llmtest.Text("later reply"))
	mux := http.NewServeMux()
	h.agent.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 8192)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	first, err := h.agent.Submit(ctx, h.chatID, "write it", Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := h.waitPending()
	base := "/api/chats/" + h.chatID
	if code, body := do("POST", base+"/messages", `{"text":"and then this","queue":true}`); code != 202 {
		t.Fatalf("queue: %d %s", code, body)
	}
	code, body := do("POST", base+"/messages", `{"text":"never mind","queue":true}`)
	var drop struct {
		TurnID string `json:"turn_id"`
	}
	json.Unmarshal([]byte(body), &drop)
	if code != 202 || drop.TurnID == "" {
		t.Fatalf("second queue: %d %s", code, body)
	}
	// Still waiting: queueing did not interrupt the turn.
	if p := h.broker.Pending(h.chatID); len(p) != 1 || p[0].ID != req.ID {
		t.Fatalf("pending after queueing: %+v", p)
	}
	for b, want := range map[string]string{
		`{"queue":true,"regenerate":true}`: "queue cannot be combined",
		`{"regenerate":true,"text":"x"}`:   "leave text empty",
		`{"regenerate":true,"retry":true}`: "cannot be combined",
		`{"edit_of":"m_1","retry":true}`:   "cannot be combined",
	} {
		if code, body := do("POST", base+"/messages", b); code != 400 || !strings.Contains(body, want) {
			t.Errorf("%s → %d %s", b, code, body)
		}
	}
	// An edit or regenerate needs an idle chat.
	if code, body := do("POST", base+"/messages", `{"regenerate":true}`); code != 409 || !strings.Contains(body, "stop it or wait") {
		t.Errorf("regenerate while busy: %d %s", code, body)
	}
	if code, body := do("DELETE", base+"/queue/"+drop.TurnID, ``); code != 200 {
		t.Fatalf("cancel queued: %d %s", code, body)
	}
	if code, body := do("DELETE", base+"/queue/"+drop.TurnID, ``); code != 404 || !strings.Contains(body, "not waiting") {
		t.Errorf("cancel twice: %d %s", code, body)
	}
	if code, _ := do("DELETE", "/api/chats/c_missing/queue/t_x", ``); code != 404 {
		t.Errorf("missing chat: %d", code)
	}
	_, body = do("GET", base+"/status", "")
	var st Status
	json.Unmarshal([]byte(body), &st)
	if !st.Running || st.Queued != 1 || len(st.QueuedTurns) != 1 || st.QueuedTurns[0].Text != "and then this" {
		t.Fatalf("status: %s", body)
	}
	if _, err := h.broker.Decide(req.ID, approval.Decision{Outcome: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	if res := first.Wait(ctx); !res.OK || res.Text != "written" {
		t.Fatalf("first turn: %+v", res)
	}
	deadline := time.Now().Add(20 * time.Second)
	for h.agent.Running(h.chatID) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	msgs, _ := h.chats.Messages(ctx, h.chatID, 0)
	got := strings.Join(contents(msgs), "|")
	if !strings.HasSuffix(got, "user:and then this|assistant:later reply") || strings.Contains(got, "never mind") {
		t.Fatalf("transcript: %s", got)
	}
	if h.read("out.txt") != "hi" {
		t.Error("the approved write did not run")
	}
}
