package agent

import (
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func TestProfileMemoryInSystemPromptInFixedOrder(t *testing.T) {
	t.Parallel()
	profile := func() (string, string) {
		return "# Your voice and style (AGENT.md)\nBe brief.\n\n", "\n\n# About the user (USER.md)\n- Lives in Ghent."
	}
	h := newHarness(t, harnessOpts{profile: profile}, llmtest.Text("one"), llmtest.Text("two"))
	h.run("hi", Options{})
	h.run("again", Options{})
	reqs := h.srv.ChatRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	sys := func(i int) string { return reqs[i].Messages[0].Content }
	s := sys(0)
	if !strings.HasPrefix(s, "# Your voice and style (AGENT.md)\nBe brief.") || strings.Index(s, DefaultSystemPrompt) > strings.Index(s, "Lives in Ghent.") ||
		!strings.HasSuffix(s, "Lives in Ghent.") {
		t.Fatalf("system prompt order:\n%s", s)
	}
	// The whole system prompt is the same bytes turn after turn; the time
	// rides on the latest user message (TestPrefixStableAcrossTurnsAndChats).
	if sys(0) != sys(1) {
		t.Fatal("the system prompt changed between turns")
	}
}

func TestCompactionCallsOnCompactOncePerTurn(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	h := newHarness(t, harnessOpts{cfg: Config{ContextTokens: 1200}, onCompact: func(id string) {
		mu.Lock()
		got = append(got, id)
		mu.Unlock()
	}}, llmtest.Text("a"), llmtest.Text("b"), llmtest.Text("c"), llmtest.Text("d"), llmtest.Text("e"), llmtest.Text("f"), llmtest.Text("g"), llmtest.Text("h"), llmtest.Text("i"))
	long := strings.Repeat("many words of history ", 60)
	for range 8 {
		h.run(long, Options{})
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || len(got) > 8 || got[0] != h.chatID {
		t.Fatalf("OnCompact calls %v", got)
	}
}
