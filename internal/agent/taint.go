package agent

import (
	"context"
	"strings"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/untrusted"
)

// withTaint gives the turn its taint tracker (read by policy.Decide). The
// tracker starts tainted when the history the model will see already holds
// untrusted content from earlier turns: that text is still in the model's
// context and can still steer it, so a new user message does not wash it
// out.
func (a *Agent) withTaint(ctx context.Context, history []chat.Message) context.Context {
	tr := taint.From(ctx)
	if tr == nil {
		tr = taint.NewTracker()
		ctx = taint.WithTracker(ctx, tr)
	}
	for _, m := range history {
		// A message composed from outside content (a watch message
		// quoting a mail) taints like the read it came from.
		for _, src := range m.Provenance {
			src.Detail = "earlier in this chat: " + src.Detail
			tr.Mark(src)
		}
		if m.Role != chat.RoleTool {
			continue
		}
		t, _ := a.d.Tools.Get(m.ToolName)
		if taint.Untrusted(t) || strings.Contains(m.Content, untrusted.OpenTag) {
			tr.Mark(taint.Source{Tool: m.ToolName, Detail: "earlier in this chat", CallID: m.ToolCallID, At: m.CreatedAt})
		}
	}
	return ctx
}
