package agent

import (
	"context"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
)

var timeZero time.Time

// Notifier publishes approval requests and resolutions as events and audit
// rows. Install it on the approval broker.
type Notifier struct {
	Events Publisher
	Audit  *audit.Log
}

// Requested implements approval.Notifier.
func (n Notifier) Requested(r approval.Request) {
	if n.Events != nil {
		n.Events.Publish("approval.requested", r.ChatID, map[string]any{"approval": r})
	}
	if n.Audit != nil {
		n.Audit.Record(context.Background(), audit.Entry{Type: audit.TypeApprovalRequest, ChatID: r.ChatID, TurnID: r.TurnID, Tool: r.Tool,
			Summary: string(r.Kind) + " requested: " + snippet(r.Preview+r.Question, 200), Data: r})
	}
}

// Resolved implements approval.Notifier.
func (n Notifier) Resolved(r approval.Request, d approval.Decision) {
	if n.Events != nil {
		n.Events.Publish("approval.resolved", r.ChatID, map[string]any{"id": r.ID, "kind": r.Kind, "decision": d.Outcome, "note": d.Note})
	}
	if n.Audit != nil {
		n.Audit.Record(context.Background(), audit.Entry{Type: audit.TypeApprovalResolved, ChatID: r.ChatID, TurnID: r.TurnID, Tool: r.Tool,
			Summary: string(r.Kind) + " " + r.ID + " → " + string(d.Outcome), Data: map[string]any{"id": r.ID, "decision": d}})
	}
}
