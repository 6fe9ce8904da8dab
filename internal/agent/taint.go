package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/policy"
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

// markTaint records that an untrusted-output tool ran in this turn, before
// its result reaches the model. It marks on failures too (an error text can
// carry outside content as well); the success path marks the same call
// again, which the tracker counts once.
func (a *Agent) markTaint(st *turnState, p *prepared, args json.RawMessage) {
	if !taint.Untrusted(p.tool) {
		return
	}
	tr := taint.From(st.ctx)
	if tr == nil {
		return
	}
	tr.Mark(taint.Source{Tool: p.name, Detail: taintDetail(p.tool, args), CallID: p.id, At: a.d.Clock()})
}

// recheckTaint re-decides an allowed call that was decided before an
// untrusted read of the same model reply ran: calls of one reply are all
// decided first and run in order afterwards, so "mail_read, mail_send" in
// one reply would otherwise send under a decision made while the turn was
// still clean.
func (a *Agent) recheckTaint(st *turnState, p *prepared) {
	if p.refusal != "" || p.tool == nil || p.checked.Result.Decision != policy.Allow || len(p.checked.Result.TaintedBy) > 0 {
		return
	}
	tr := taint.From(st.ctx)
	if tr == nil || !tr.Tainted() || !taint.Sensitive(p.tool) {
		return
	}
	c := a.d.Policy.Check(st.ctx, a.d.Tools, a.d.Paths, p.name, p.raw, st.t.ChatID)
	if c.ArgErr != nil {
		return // validated once already; keep the first outcome
	}
	p.checked = c
	if c.Result.Decision == policy.Deny {
		p.refusal = fmt.Sprintf("BLOCKED: %s was NOT run. Policy refuses this call: %s.", p.name, c.Result.Reason)
		p.decision = DecBlocked
	}
}
