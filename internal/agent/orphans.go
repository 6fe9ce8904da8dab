package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/store"
)

// orphanTail bounds how much of a chat CloseOrphanedApprovals reads.
const orphanTail = 256

// DecExpired marks a call whose approval request was still waiting when the
// daemon stopped (crash, kill -9, power loss): nothing ran.
const DecExpired = "expired"

// ReasonDaemonRestart is the reason recorded when a request is closed at
// start because the daemon that asked is gone.
const ReasonDaemonRestart = "daemon_restart"

// CloseOrphanedApprovals closes every approval request that the audit trail
// shows as asked but never answered. Pending requests live only in the
// daemon's memory, so at start these are the ones a dead daemon left: each
// gets an approval.resolved audit row (reason daemon_restart) and, when its
// call is the chat's last unanswered one, a NOT-done tool result in the
// transcript, so the model and the UI see it expired instead of hanging.
// Call it once at start, before turns run; it returns how many it closed.
func (a *Agent) CloseOrphanedApprovals(ctx context.Context) (int, error) {
	if a.d.Audit == nil {
		return 0, nil
	}
	orphans, err := a.d.Audit.UnresolvedApprovals(ctx)
	if err != nil {
		return 0, err
	}
	closed := 0
	for _, e := range orphans {
		var req struct {
			ID     string `json:"id"`
			Kind   string `json:"kind"`
			CallID string `json:"call_id"`
			Tool   string `json:"tool"`
		}
		if err := json.Unmarshal(e.Data, &req); err != nil {
			continue // UnresolvedApprovals returns only rows with an id
		}
		stored, err := a.storeExpiredResult(ctx, e.ChatID, e.TurnID, req.CallID, req.Tool, req.Kind)
		if err != nil {
			return closed, err
		}
		if _, err := a.d.Audit.Append(ctx, audit.Entry{
			Type: audit.TypeApprovalResolved, ChatID: e.ChatID, TurnID: e.TurnID, Tool: req.Tool,
			Summary: req.Kind + " " + req.ID + " → " + DecExpired + " (the daemon restarted while it waited)",
			Data: map[string]any{"id": req.ID, "decision": map[string]any{"decision": DecExpired}, "reason": ReasonDaemonRestart,
				"requested_event": e.ID, "transcript_result": stored},
		}); err != nil {
			return closed, fmt.Errorf("closing approval %s: %w", req.ID, err)
		}
		closed++
	}
	if closed > 0 {
		a.d.Log.Info("closed approval requests left by a stopped daemon", "count", closed)
	}
	return closed, nil
}

// storeExpiredResult appends the NOT-done result for callID when the chat's
// transcript ends with that call's assistant message and its results so far
// (the shape a crash mid-approval leaves) and no result for it is stored.
// Anything else (the chat moved on, was deleted, or already has the result)
// is left alone: toLLM gives such calls a stub, and a result appended after
// later messages would pair with the wrong call.
func (a *Agent) storeExpiredResult(ctx context.Context, chatID, turnID, callID, tool, kind string) (bool, error) {
	if chatID == "" || callID == "" {
		return false, nil
	}
	// Only the transcript's tail matters (the call and its results); a
	// call further back than this is left to toLLM's stub.
	msgs, err := a.d.Chats.Messages(ctx, chatID, orphanTail)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading chat %s: %w", chatID, err)
	}
	i := len(msgs) - 1
	for i >= 0 && msgs[i].Role == chat.RoleTool {
		if msgs[i].ToolCallID == callID {
			return false, nil
		}
		i--
	}
	if i < 0 || msgs[i].Role != chat.RoleAssistant {
		return false, nil
	}
	var call *chat.ToolCall
	for j := range msgs[i].ToolCalls {
		if msgs[i].ToolCalls[j].ID == callID {
			call = &msgs[i].ToolCalls[j]
		}
	}
	if call == nil {
		return false, nil
	}
	content := fmt.Sprintf("NOT done: %s was waiting for the user's approval when Hestia stopped, so the request expired and nothing ran. Ask again if it is still wanted.", tool)
	if kind == "question" {
		content = "NOT answered: Hestia stopped while this question waited for the user, so it expired. Ask again if you still need the answer."
	}
	m := &chat.Message{Role: chat.RoleTool, TurnID: turnID, ToolCallID: callID, ToolName: call.Name, Content: content,
		Tool: &chat.ToolRun{Input: call.Arguments, Decision: DecExpired, Status: StatusNotRun, Note: ReasonDaemonRestart}}
	if err := a.d.Chats.Append(ctx, chatID, m); err != nil {
		return false, fmt.Errorf("storing the expired result in chat %s: %w", chatID, err)
	}
	return true, nil
}
