package agent

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
)

// TypeRewind is the audit event of an edit-and-resend or a regenerate: which
// messages were superseded and by which turn.
const TypeRewind = "chat.rewind"

// rewind supersedes the part of the chat that t replaces (Options.EditOf or
// Options.Regenerate) before t is queued. The messages stay in the store
// (marked superseded_by t.ID, kept in exports), the audit trail records the
// ids, and a chat.rewound event tells open clients to drop them. a.mu is
// held, and no turn runs or waits in the chat.
func (a *Agent) rewind(ctx context.Context, t *Turn) error {
	msgs, err := a.d.Chats.Messages(ctx, t.ChatID, 0)
	if err != nil {
		return err
	}
	from, summary := -1, ""
	if t.opts.EditOf != "" {
		for _, m := range msgs {
			if m.ID == t.opts.EditOf && m.Role == chat.RoleUser {
				from = m.Seq
			}
		}
		if from < 0 {
			return fmt.Errorf("message %s: %w", t.opts.EditOf, chat.ErrNotRewindable)
		}
		summary = "user message edited and sent again"
	} else {
		for i := len(msgs) - 1; i >= 0; i-- {
			if msgs[i].Role == chat.RoleUser {
				// Everything after the last user message is the reply being
				// regenerated; the user's message itself stays.
				from = msgs[i].Seq + 1
				break
			}
		}
		if from < 0 {
			return ErrNothingToRegenerate
		}
		summary = "reply regenerated"
		// The regenerated turn runs on the stored history, which now ends
		// in the user's message: exactly a retry.
		t.opts.Retry = true
	}
	ids, err := a.d.Chats.Rewind(ctx, t.ChatID, from, t.ID)
	if err != nil {
		return err
	}
	if ids == nil {
		ids = []string{}
	}
	data := map[string]any{"superseded": ids, "from_seq": from, "edit_of": t.opts.EditOf, "regenerate": t.opts.Regenerate}
	a.audit(context.WithoutCancel(ctx), audit.Entry{Type: TypeRewind, ChatID: t.ChatID, TurnID: t.ID, Summary: fmt.Sprintf("%s: %d message(s) superseded", summary, len(ids)), Data: data})
	a.publish("chat.rewound", t.ChatID, map[string]any{"turn_id": t.ID, "message_ids": ids, "edit_of": t.opts.EditOf, "regenerate": t.opts.Regenerate})
	return nil
}
