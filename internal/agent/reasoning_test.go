package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// The reasoning of each step is stored with its assistant message (a step
// that calls a tool and the final reply alike), a reload of the chat
// returns it, and it never reaches the model again: neither later in the
// same turn nor in the next turn's history, nor the audit trail.
func TestReasoningIsKeptButNeverSentBack(t *testing.T) {
	t.Parallel()
	const think1, think2 = "PRIVATE-THOUGHT-one: read the notes first.", "PRIVATE-THOUGHT-two: the notes say hello."
	// steppingClock (offer_test.go) advances at every reading: the span of
	// several reasoning deltas is known to be non-zero however fast the
	// machine is.
	h := newHarness(t, harnessOpts{clock: steppingClock()},
		llmtest.Turn{Reasoning: []string{"PRIVATE-THOUGHT-one: ", "read the notes ", "first."}, ToolCalls: []llmtest.ToolCall{call("c1", "read_file", `{"path":"~/notes/hello.txt"}`)}},
		llmtest.Turn{Reasoning: []string{"PRIVATE-THOUGHT-two: ", "the notes say hello."}, Text: []string{"They say ", "hello."}},
		llmtest.Text("You're welcome."),
	)
	sub := h.bus.Subscribe(events.SubscribeOptions{ChatID: h.chatID})
	defer sub.Close()
	if res := h.run("what do my notes say?", Options{}); !res.OK || res.Text != "They say hello." {
		t.Fatalf("res = %+v", res)
	}

	msgs, err := h.chats.Messages(context.Background(), h.chatID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var assistants []chat.Message
	for _, m := range msgs {
		if m.Role == chat.RoleAssistant {
			assistants = append(assistants, m)
		} else if m.Reasoning != "" {
			t.Errorf("%s message has reasoning %q", m.Role, m.Reasoning)
		}
	}
	if len(assistants) != 2 {
		t.Fatalf("%d assistant messages: %+v", len(assistants), msgs)
	}
	if a := assistants[0]; a.Reasoning != think1 || len(a.ToolCalls) != 1 || a.ReasoningMS < 1000 {
		t.Errorf("tool-calling step: reasoning %q (%d ms), calls %v", a.Reasoning, a.ReasoningMS, a.ToolCalls)
	}
	if a := assistants[1]; a.Reasoning != think2 || a.Content != "They say hello." || a.ReasoningMS < 1000 {
		t.Errorf("reply: reasoning %q (%d ms), content %q", a.Reasoning, a.ReasoningMS, a.Content)
	}

	// The persisted message published to the UI carries it too, so the
	// live view keeps it once the streamed step is replaced.
	published := 0
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		if ev.Type != "message.created" {
			continue
		}
		d, _ := ev.Data.(map[string]any)
		if m, _ := d["message"].(*chat.Message); m != nil && m.Reasoning == think2 {
			published++
		}
	}
	if published != 1 {
		t.Errorf("message.created carried the reply's reasoning %d times, want 1", published)
	}

	// A reload: the chat's GET returns the reasoning with each message.
	mux := http.NewServeMux()
	(&chat.API{Store: h.chats}).Routes(mux)
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/api/chats/"+h.chatID, nil))
	var got struct {
		Messages []struct {
			Role        string `json:"role"`
			Reasoning   string `json:"reasoning"`
			ReasoningMS int64  `json:"reasoning_ms"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("GET chat: %d %s", w.Code, w.Body)
	}
	var reloaded []string
	for _, m := range got.Messages {
		if m.Reasoning != "" {
			reloaded = append(reloaded, m.Role+": "+m.Reasoning)
		}
	}
	if want := []string{"assistant: " + think1, "assistant: " + think2}; fmt.Sprint(reloaded) != fmt.Sprint(want) {
		t.Errorf("reloaded reasoning %q, want %q", reloaded, want)
	}

	if res := h.run("thanks", Options{}); !res.OK {
		t.Fatalf("second turn: %+v", res)
	}
	reqs := h.srv.ChatRequests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3", len(reqs))
	}
	// Request 1 follows the reasoning step within the turn; request 2 is
	// the next turn, built from the stored history.
	for i, rq := range reqs[1:] {
		if bytes.Contains(rq.Body, []byte("PRIVATE-THOUGHT")) {
			t.Errorf("request %d sends reasoning back to the model: %s", i+1, rq.Body)
		}
		if bytes.Contains(rq.Body, []byte(`"reasoning`)) {
			t.Errorf("request %d has a reasoning field: %s", i+1, rq.Body)
		}
	}
	// The stored history still reached the model (the check above is not
	// passing on an empty request).
	if body := string(reqs[2].Body); !strings.Contains(body, "They say hello.") || !strings.Contains(body, "hello from the notes") {
		t.Errorf("the next turn's history lost the conversation: %s", body)
	}

	evs, err := h.audit.List(context.Background(), auditFilter(h.chatID))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if strings.Contains(string(e.Data), "PRIVATE-THOUGHT") || strings.Contains(e.Summary, "PRIVATE-THOUGHT") {
			t.Errorf("reasoning in the audit trail (%s): %s", e.Type, e.Data)
		}
	}
}

// Reasoning over chat.MaxReasoning is stored cut, with its head and a note.
func TestLongReasoningIsCapped(t *testing.T) {
	t.Parallel()
	var deltas []string
	size := 0
	for i := 0; size < chat.MaxReasoning+20_000; i++ {
		// Varied text: a periodic stream would be stopped as a runaway loop.
		d := fmt.Sprintf("step %d weighs option %d against %d. ", i, i*7919%1009, i*i%997)
		deltas = append(deltas, d)
		size += len(d)
	}
	h := newHarness(t, harnessOpts{}, llmtest.Turn{Reasoning: deltas, Text: []string{"Decided."}})
	if res := h.run("decide", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	msgs, err := h.chats.Messages(context.Background(), h.chatID, 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("messages %+v %v", msgs, err)
	}
	r := msgs[1].Reasoning
	full := strings.Join(deltas, "")
	head, note, cut := strings.Cut(r, "\n[reasoning cut")
	if !cut || len(r) > chat.MaxReasoning || !strings.HasPrefix(full, head) || !strings.HasPrefix(r, "step 0 ") {
		t.Fatalf("stored %d of %d bytes, cut=%v", len(r), len(full), cut)
	}
	if !strings.Contains(note, fmt.Sprint(len(full))) {
		t.Errorf("the note %q does not give the full size %d", note, len(full))
	}
}
