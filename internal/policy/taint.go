package policy

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/taint"
)

// SourceTaint says a decision was tightened because the turn had read
// untrusted content.
const SourceTaint = "taint"

// tighten is the last step of Decide. When the turn's tracker (in ctx) has
// seen untrusted content and the tool writes or sends data off the machine,
// an allow — from the threshold, a trust rule or a temporary mode — becomes
// a gate, and a gate carries the tainting sources so the approval card can
// name them. A deny is never loosened. Nothing here reads model text: the
// inputs are tool metadata and what the agent recorded as read.
func (e *Engine) tighten(ctx context.Context, in Input, res Result) Result {
	if e.Config().NoTaint || res.Decision == Deny {
		return res
	}
	tr := taint.From(ctx)
	if tr == nil || !tr.Tainted() || !taint.Sensitive(in.Tool) {
		return res
	}
	res.TaintedBy = tr.Sources()
	desc := tr.Describe()
	if res.Decision == Allow {
		res.Decision, res.Source = Gate, SourceTaint
		res.Reason = fmt.Sprintf("this turn read untrusted content from %s, so %s (which writes or sends data) needs approval; otherwise: %s", desc, in.ToolName, res.Reason)
		return res
	}
	res.Reason = fmt.Sprintf("%s; this turn also read untrusted content from %s", res.Reason, desc)
	return res
}
