package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// Orphaned requests are closed once each; a transcript result is stored
// only where it pairs with its call (the chat ends with that call).
func TestCloseOrphanedApprovals(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, harnessOpts{})
	request := func(chatID, id, call string) {
		t.Helper()
		h.audit.Append(ctx, audit.Entry{Type: audit.TypeApprovalRequest, ChatID: chatID, TurnID: "t1", Tool: "write_file",
			Data: approval.Request{ID: id, Kind: approval.KindApproval, ChatID: chatID, TurnID: "t1", CallID: call, Tool: "write_file"}})
	}
	assistant := func(chatID string, calls ...string) {
		t.Helper()
		m := &chat.Message{Role: chat.RoleAssistant, TurnID: "t1"}
		for _, c := range calls {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: c, Name: "write_file", Arguments: json.RawMessage(`{"path":"a","content":"b"}`)})
		}
		if err := h.chats.Append(ctx, chatID, &chat.Message{Role: chat.RoleUser, Content: "go"}, m); err != nil {
			t.Fatal(err)
		}
	}
	// 1: the crash shape — two parallel calls, one answered, one waiting.
	crashed := h.chatID
	assistant(crashed, "c1", "c2")
	h.chats.Append(ctx, crashed, &chat.Message{Role: chat.RoleTool, TurnID: "t1", ToolCallID: "c1", ToolName: "write_file", Content: "ok", Tool: &chat.ToolRun{Decision: DecAllowed, Status: "ok"}})
	request(crashed, "a_1", "c2")
	// 2: a chat that moved on after the orphan (an older daemon's leftover).
	moved, _ := h.chats.Create(ctx, "moved")
	assistant(moved.ID, "c3")
	request(moved.ID, "a_2", "c3")
	h.chats.Append(ctx, moved.ID, &chat.Message{Role: chat.RoleUser, Content: "later"})
	// 3: a resolved request is not an orphan; 4: a deleted chat.
	request(crashed, "a_3", "c9")
	h.audit.Append(ctx, audit.Entry{Type: audit.TypeApprovalResolved, Data: map[string]any{"id": "a_3"}})
	request("c_gone", "a_4", "c4")

	n, err := h.agent.CloseOrphanedApprovals(ctx)
	if err != nil || n != 3 {
		t.Fatalf("closed %d (%v), want 3", n, err)
	}
	msgs, _ := h.chats.Messages(ctx, crashed, 0)
	last := msgs[len(msgs)-1]
	if last.ToolCallID != "c2" || last.Tool.Decision != DecExpired || !strings.Contains(last.Content, "NOT done") {
		t.Errorf("crashed chat: %+v", last)
	}
	if got := toLLM(msgs); got[len(got)-1].ToolCallID != "c2" || !strings.Contains(got[len(got)-1].Content, "expired") {
		t.Errorf("model history: %+v", got[len(got)-1])
	}
	if ms, _ := h.chats.Messages(ctx, moved.ID, 0); len(ms) != 3 {
		t.Errorf("a chat that moved on was changed: %+v", ms)
	}
	evs, _ := h.audit.List(ctx, audit.Filter{Type: audit.TypeApprovalResolved})
	reasons := 0
	for _, e := range evs {
		if strings.Contains(string(e.Data), ReasonDaemonRestart) {
			reasons++
		}
	}
	if reasons != 3 {
		t.Errorf("%d daemon_restart resolutions, want 3", reasons)
	}
	if n, err := h.agent.CloseOrphanedApprovals(ctx); n != 0 || err != nil {
		t.Errorf("second pass closed %d (%v)", n, err)
	}
	if res, err := h.audit.Verify(ctx); err != nil || !res.OK {
		t.Errorf("audit chain after closing: %+v %v", res, err)
	}
}

// A policy refusal keeps its reason in the stored tool run, so the card can
// say why (outside the allowed folders) without opening the model's text.
func TestBlockedCallKeepsReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{},
		llmtest.ToolCalls(llmtest.Call("w", "write_file", `{"path":"/srv/elsewhere/x.txt","content":"x"}`)),
		llmtest.Text("I could not."))
	h.run("write it", Options{})
	msgs := h.toolMessages()
	if len(msgs) != 1 || msgs[0].Tool.Decision != DecBlocked || !strings.Contains(msgs[0].Tool.Note, "allowed folders are "+h.home) {
		t.Fatalf("blocked call: %+v", msgs[0].Tool)
	}
}
