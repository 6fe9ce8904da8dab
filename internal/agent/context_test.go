package agent

import (
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
)

func history(units int) []llm.Message {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "sys"}}
	for i := 0; i < units; i++ {
		msgs = append(msgs,
			llm.Message{Role: llm.RoleUser, Content: "question " + strings.Repeat("q", 100)},
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "probe"}, {ID: "b", Name: "probe"}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: "a", Content: strings.Repeat("r", 10000)},
			llm.Message{Role: llm.RoleTool, ToolCallID: "b", Content: strings.Repeat("s", 10000)},
			llm.Message{Role: llm.RoleAssistant, Content: "answer"},
		)
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: "current question"},
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Name: "probe"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c", Content: strings.Repeat("t", 10000)})
}

// paired checks every tool message follows an assistant message that made
// the call, with nothing else between.
func paired(t *testing.T, msgs []llm.Message) {
	t.Helper()
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleAssistant:
			open = map[string]bool{}
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
		case llm.RoleTool:
			if !open[m.ToolCallID] {
				t.Fatalf("message %d: tool result %s without its call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			if len(open) > 0 {
				t.Fatalf("message %d: calls %v left unanswered", i, open)
			}
		}
	}
}

func TestReducerTiers(t *testing.T) {
	t.Parallel()
	msgs := history(10)
	start := estimate(msgs, nil)
	prev := start
	for tier := 1; tier <= maxTier; tier++ {
		msgs = reduceContext(msgs, tier)
		again := reduceContext(msgs, tier)
		if tier != tierSummarise && estimate(again, nil) != estimate(msgs, nil) {
			t.Errorf("tier %d is not idempotent", tier)
		}
		est := estimate(msgs, nil)
		if est > prev {
			t.Errorf("tier %d grew the prompt: %d → %d", tier, prev, est)
		}
		prev = est
		paired(t, msgs)
		if msgs[0].Role != llm.RoleSystem {
			t.Fatalf("tier %d lost the system prompt", tier)
		}
		last := msgs[len(msgs)-1]
		if last.ToolCallID != "c" || !strings.HasPrefix(last.Content, "t") {
			t.Fatalf("tier %d lost the current turn: %+v", tier, last)
		}
		if tier < tierTruncateAll && len(last.Content) != 10000 {
			t.Errorf("tier %d cut the current turn's result", tier)
		}
	}
	if prev > start/10 {
		t.Errorf("all tiers together only went from %d to %d tokens", start, prev)
	}
	if !strings.Contains(msgs[1].Content, "omitted") {
		t.Errorf("last tier does not say history was omitted: %q", msgs[1].Content)
	}
}
