package agent

import (
	"testing"

	"github.com/hestia-dev/hestia/internal/chat"
)

// Servers that omit call ids get "call_0"-style ids filled in, so the same
// id appears in every step and every turn. Each call must still get the
// result stored right after it, not the newest result with that id.
func TestToLLMPairsReusedCallIDsByPosition(t *testing.T) {
	t.Parallel()
	ms := []chat.Message{
		{Role: chat.RoleUser, Content: "first"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "probe"}}},
		{Role: chat.RoleTool, ToolCallID: "call_0", ToolName: "probe", Content: "result one"},
		{Role: chat.RoleAssistant, Content: "done one"},
		{Role: chat.RoleUser, Content: "second"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "probe"}}},
		{Role: chat.RoleTool, ToolCallID: "call_0", ToolName: "probe", Content: "result two"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "call_0", Name: "probe"}}},
	}
	out := toLLM(ms)
	var got []string
	for _, m := range out {
		if m.Role == "tool" {
			got = append(got, m.Content)
		}
	}
	if len(got) != 3 || got[0] != "result one" || got[1] != "result two" {
		t.Fatalf("tool results sent in order %q, want result one, result two, then a NOT done stub", got)
	}
	if got[2] == "result two" {
		t.Fatalf("the unfinished last call was paired with an earlier call's result")
	}
}

func TestToLLMSameIDTwiceInOneReply(t *testing.T) {
	t.Parallel()
	ms := []chat.Message{
		{Role: chat.RoleUser, Content: "q"},
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "dup", Name: "probe"}, {ID: "dup", Name: "probe"}}},
		{Role: chat.RoleTool, ToolCallID: "dup", ToolName: "probe", Content: "r1"},
		{Role: chat.RoleTool, ToolCallID: "dup", ToolName: "probe", Content: "r2"},
	}
	out := toLLM(ms)
	if len(out) != 4 || out[2].Content != "r1" || out[3].Content != "r2" {
		t.Fatalf("%+v", out)
	}
}
