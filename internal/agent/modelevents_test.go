package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// A prompt that cannot shrink (the fixed prompt alone is over the window)
// is sent once, not retried identically (issue 31 item 3; before: four
// identical requests).
func TestOverflowThatCannotShrinkIsSentOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	h.srv.SetWindow("llama.cpp", 50)
	res := h.run("hi", Options{})
	if res.OK || res.Error == nil || res.Error.Code != CodeContextTooLarge {
		t.Fatalf("res = %+v", res)
	}
	if n := len(h.srv.ChatRequests()); n != 1 {
		t.Errorf("%d chat requests, want 1", n)
	}
}

// With a known window the budget follows it: a long history that fits the
// default 32k budget is shortened for a 4k window before it is sent.
func TestBudgetFollowsTheWindow(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.Text("one"), llmtest.Text("two"))
	h.agent.d.Window = func(context.Context, llm.Tier) int { return 4096 }
	long := strings.Repeat("a long line of the user's own text. ", 600) // ~5k tokens
	if res := h.run(long, Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	if res := h.run("and now?", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	reqs := h.srv.ChatRequests()
	for _, m := range reqs[1].Messages {
		if len(m.Content) >= len(long) {
			t.Fatalf("the second request still carries the %d-byte message for a 4096-token window", len(long))
		}
	}
	if got := h.agent.contextBudget(context.Background()); got >= 4096 || got < 2500 {
		t.Errorf("budget %d for a 4096-token window", got)
	}
}

// Reasoning is published apart from the text and never sent back.
func TestReasoningIsPublishedAndNotSentBack(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{}, llmtest.Turn{Reasoning: []string{"The user ", "greets me."}, Text: []string{"Hello!"}}, llmtest.Text("Fine."))
	sub := h.bus.Subscribe(events.SubscribeOptions{ChatID: h.chatID})
	defer sub.Close()
	if res := h.run("hi", Options{}); !res.OK || res.Text != "Hello!" {
		t.Fatalf("res = %+v", res)
	}
	var reasoning, text string
	for len(sub.C()) > 0 {
		ev := <-sub.C()
		d, _ := ev.Data.(map[string]any)
		s, _ := d["text"].(string)
		switch ev.Type {
		case "message.reasoning":
			reasoning += s
		case "message.delta":
			text += s
		}
	}
	if reasoning != "The user greets me." || text != "Hello!" {
		t.Errorf("reasoning %q, text %q", reasoning, text)
	}
	if res := h.run("how are you?", Options{}); !res.OK {
		t.Fatalf("res = %+v", res)
	}
	for _, m := range h.srv.ChatRequests()[1].Messages {
		if strings.Contains(m.Content, "greets me") {
			t.Errorf("reasoning sent back in %s message %q", m.Role, m.Content)
		}
	}
}

func TestFixedPromptTokens(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	n := h.agent.FixedPromptTokens(context.Background())
	if n < len(DefaultSystemPrompt)/4 || n > 50_000 {
		t.Errorf("fixed prompt estimate %d", n)
	}
}
