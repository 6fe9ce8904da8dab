package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hestia-dev/hestia/internal/authority"
	"strconv"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
	"github.com/hestia-dev/hestia/internal/usage"
)

// Authorization outcomes recorded on tool messages (chat.ToolRun.Decision).
const (
	DecAllowed    = "allowed"
	DecApproved   = "approved"
	DecEdited     = "edited"
	DecDenied     = "denied"
	DecRevise     = "revise"
	DecTimeout    = "timeout"
	DecNoApprover = "no_approver"
	DecBlocked    = "blocked"
	DecInvalid    = "invalid"
	DecSkipped    = "skipped"
)

// Tool run statuses.
const (
	StatusOK     = "ok"
	StatusError  = "error"
	StatusNotRun = "not_run"
)

// prepared is one call after validation and the policy decision.
type prepared struct {
	id, name   string
	raw        string
	dispatched json.RawMessage // what the transcript says was sent: canonical args, or {} when refused
	tool       tools.Tool
	checked    policy.Checked
	refusal    string // set: the call does not run and this is its result
	decision   string // decision to record with a refusal
}

type callResult struct {
	id, name     string
	run          chat.ToolRun
	modelContent string
}

func (r *callResult) message(turnID string) *chat.Message {
	run := r.run
	return &chat.Message{Role: chat.RoleTool, TurnID: turnID, ToolCallID: r.id, ToolName: r.name, Content: r.modelContent, Tool: &run}
}

func (a *Agent) prepare(st *turnState, i int, c llm.ToolCall, offer stepOffer) *prepared {
	p := &prepared{id: c.ID, name: c.Name, raw: c.Arguments, dispatched: json.RawMessage("{}")}
	if p.id == "" {
		// Some local servers omit ids; results must still pair with calls.
		p.id = "call_" + strconv.Itoa(st.steps) + "_" + strconv.Itoa(i)
	}
	if !offer.offered(c.Name) {
		p.refusal = fmt.Sprintf("tool %q is not available in this conversation; the call did not run.", c.Name)
		p.decision = DecBlocked
		p.checked.Result = policy.Result{Tool: c.Name, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: "not offered"}
		return p
	}
	// A preview of the decision, for the transcript and for choosing which
	// calls may run in parallel; authority.Invoke decides again (and
	// records the decision) when the call's turn to run comes.
	p.checked = a.auth.Check(st.ctx, a.origin(st, nil), c.Name, c.Arguments)
	p.tool = p.checked.Tool
	if p.tool == nil {
		// Offered at the start of this step but gone now: a dynamic source
		// (an MCP server changing its tool list) dropped it in between.
		p.refusal = fmt.Sprintf("tool %q is no longer available (its source removed it); the call did not run.", c.Name)
		p.decision = DecBlocked
		p.checked.Result = policy.Result{Tool: c.Name, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: "no longer registered"}
		return p
	}
	if p.checked.ArgErr != nil {
		p.refusal = p.checked.ArgErr.Error()
		if offer.lazy && !offer.full[c.Name] {
			p.refusal += loadHint(c.Name)
		}
		p.decision = DecInvalid
		return p
	}
	p.dispatched = p.checked.Args
	return p
}

// origin is this turn as an authority origin. offered, when non-nil, is
// the list of tools the model was offered in this step.
func (a *Agent) origin(st *turnState, offered []string) authority.Origin {
	return TurnOrigin(st.t.opts, st.t.ChatID, st.t.ID, offered)
}

// TurnOrigin is a turn's calls as the authority sees them (the origin
// matrix builds its chat, channel and job rows with it).
func TurnOrigin(o Options, chatID, turnID string, offered []string) authority.Origin {
	kind := o.Kind
	if kind == "" {
		kind = authority.Chat
		if o.Background {
			kind = authority.Job
		}
	}
	return authority.Origin{Kind: kind, ID: o.Origin, Label: o.OriginLabel, ChatID: chatID, TurnID: turnID,
		Background: o.Background, NoApprover: o.NoApprover, Taint: o.Provenance, Tools: offered}
}

// execute runs a model reply's calls. When every call is allowed and
// parallel-safe they run concurrently; otherwise one after another. Results
// are always returned in call order, one per call.
func (a *Agent) execute(st *turnState, ps []*prepared, offered []string) []*callResult {
	out := make([]*callResult, len(ps))
	parallel := len(ps) > 1
	for _, p := range ps {
		// Only pure reads run concurrently: a write or egress call is
		// decided when its turn comes, after an earlier call of the same
		// reply may have read untrusted content (taint).
		if p.refusal != "" || p.checked.Result.Decision != policy.Allow {
			parallel = false
			break
		}
		if spec := p.tool.Spec(); !spec.ParallelSafe || !spec.ReadOnly || spec.Egress {
			parallel = false
			break
		}
	}
	if parallel {
		sem := make(chan struct{}, a.cfg.ParallelLimit)
		var wg sync.WaitGroup
		for i, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if context.Cause(st.ctx) != nil {
					out[i] = a.skipped(st, p)
					return
				}
				out[i] = a.invoke(st, p, offered)
			}()
		}
		wg.Wait()
		return out
	}
	for i, p := range ps {
		if context.Cause(st.ctx) != nil {
			out[i] = a.skipped(st, p)
			continue
		}
		out[i] = a.invoke(st, p, offered)
	}
	return out
}

func (a *Agent) skipped(st *turnState, p *prepared) *callResult {
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": st.steps - 1, "call_id": p.id, "tool": p.name, "decision": DecSkipped, "status": StatusNotRun, "error": "", "duration_ms": 0, "output": ""})
	return &callResult{id: p.id, name: p.name, modelContent: fmt.Sprintf("NOT done: %s was skipped because the turn was interrupted before it ran.", p.name),
		run: chat.ToolRun{Input: inputOf(p), Decision: DecSkipped, Policy: string(p.checked.Result.Decision), Status: StatusNotRun}}
}

func inputOf(p *prepared) json.RawMessage {
	if p.checked.ArgErr == nil && len(p.checked.Args) > 0 {
		return p.checked.Args
	}
	// Keep what the model sent, as a JSON string, so the transcript shows it.
	b, _ := json.Marshal(p.raw)
	return b
}

func (a *Agent) refused(st *turnState, p *prepared, decision, content, note string) *callResult {
	r := &callResult{id: p.id, name: p.name, modelContent: content,
		run: chat.ToolRun{Input: inputOf(p), Decision: decision, DecisionSource: p.checked.Result.Source, Policy: string(p.checked.Result.Decision), PolicyRule: p.checked.Result.RuleID, Status: StatusNotRun, Note: note}}
	a.recordUsage(st, p.name, 0, "denied", decision)
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": st.steps - 1, "call_id": p.id, "tool": p.name, "decision": decision, "status": StatusNotRun, "error": "", "duration_ms": 0, "output": snippet(content, 2000), "note": note})
	return r
}

// invoke hands one call to the authority (decision, card, run, audit) and
// turns its outcome into the tool message the model and transcript get.
func (a *Agent) invoke(st *turnState, p *prepared, offered []string) *callResult {
	c := authority.Call{ID: p.id, Tool: p.name, Args: p.raw, HoldKey: st.t.ID + ":" + p.id, Timeout: a.cfg.ToolTimeout,
		OnStart: func(args json.RawMessage) {
			a.publish("tool.started", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": st.steps - 1, "call_id": p.id, "tool": p.name, "args": args, "policy": string(p.checked.Result.Decision)})
		}}
	if !st.t.opts.NoApprover {
		c.Ask = a.asker(st, p.id)
	}
	out := a.auth.Invoke(st.ctx, a.origin(st, offered), c)
	if out.Tool != nil {
		p.tool = out.Tool
	}
	if out.Decision != authority.Invalid {
		p.checked.Result = out.Policy
	}
	switch out.Decision {
	case authority.Allowed, authority.Granted, authority.Approved, authority.Edited:
		return a.ran(st, p, out)
	case authority.Invalid:
		msg := p.refusal
		if msg == "" {
			msg = out.ArgErr.Error()
		}
		return a.refused(st, p, DecInvalid, msg, "")
	case authority.Blocked:
		switch out.Why {
		case authority.WhyNotOffered:
			return a.refused(st, p, DecBlocked, fmt.Sprintf("tool %q is not available in this conversation; the call did not run.", p.name), "")
		case authority.WhyUnknown:
			return a.refused(st, p, DecBlocked, fmt.Sprintf("tool %q is no longer available (its source removed it); the call did not run.", p.name), "")
		}
		// A policy refusal keeps its reason on the card ("outside the
		// folders Hestia may write: …"), not only in the model's text.
		return a.refused(st, p, DecBlocked, fmt.Sprintf("BLOCKED: %s was NOT run. Policy refuses this call: %s. Do not retry it in another form; tell the user it is not allowed.", p.name, out.Policy.Reason), out.Policy.Reason)
	case authority.Denied:
		msg := fmt.Sprintf("NOT done: the user denied %s; nothing was changed.", p.name)
		if out.Note != "" {
			msg += " The user's note: " + out.Note
		}
		return a.refused(st, p, DecDenied, msg, out.Note)
	case authority.Revise:
		msg := fmt.Sprintf("NOT done: the user asked you to revise this %s call before anything runs. Their feedback: %s. Propose a corrected call or ask what they want.", p.name, out.Note)
		return a.refused(st, p, DecRevise, msg, out.Note)
	case authority.Timeout:
		return a.refused(st, p, DecTimeout, fmt.Sprintf("NOT done: %s needed approval and nobody answered within %s, so it was treated as denied. The user did not refuse it; do not assume it happened.", p.name, a.d.Approvals.Timeout()), "")
	case authority.NoApprover, authority.Deferred:
		return a.refused(st, p, DecNoApprover, fmt.Sprintf("NOT done: %s needs the user's approval and nobody is attached who could give it, so it was denied. Tell the user what you wanted to do so they can do it from the app.", p.name), "")
	case authority.Skipped:
		return a.refused(st, p, DecSkipped, fmt.Sprintf("NOT run now: %s was already handled outside this turn (approved or denied from another card).", p.name), "")
	default: // cancelled with the turn
		return a.skipped(st, p)
	}
}

// ran turns a call that ran into its tool message.
func (a *Agent) ran(st *turnState, p *prepared, out authority.Outcome) *callResult {
	spec := p.tool.Spec()
	decision := out.Decision
	if decision == authority.Granted {
		decision = DecAllowed
	}
	args, res, err := out.Args, out.Result, out.Err
	run := chat.ToolRun{Input: p.dispatched, Decision: decision, DecisionSource: out.Source, Policy: string(p.checked.Result.Decision), PolicyRule: p.checked.Result.RuleID, DurationMS: out.Duration.Milliseconds(), Note: out.Note}
	if decision == DecEdited {
		run.EffectiveInput = args
	}
	var content string
	errCode := ""
	switch {
	case err != nil:
		run.Status, run.Error = StatusError, err.Error()
		errCode = "failed"
		if errors.Is(err, context.DeadlineExceeded) {
			errCode = "timeout"
			content = fmt.Sprintf("error: %s did not finish within %s.", p.name, a.cfg.ToolTimeout)
		} else if context.Cause(st.ctx) != nil {
			errCode = "cancelled"
			content = fmt.Sprintf("%s was interrupted while running; it may have partly happened.", p.name)
		} else {
			content = fmt.Sprintf("error: %s failed: %v", p.name, err)
		}
	case res.IsError:
		run.Status, run.Error = StatusError, snippet(res.Content, 500)
		errCode = "tool_error"
		content = "error: " + tools.Cap(res.Content, spec.MaxResultChars())
		if spec.UntrustedOutput { // an error page is outside content too
			content, _ = st.boundary.Wrap(p.name, content)
		}
	default:
		run.Status = StatusOK
		content = tools.Cap(res.Content, spec.MaxResultChars())
		if spec.UntrustedOutput {
			content, _ = st.boundary.Wrap(p.name, content)
		}
	}
	if decision == DecEdited {
		// The model must not believe its own proposal ran unchanged.
		content = fmt.Sprintf("Note: the user edited the arguments before approving; %s ran with %s\n%s", p.name, snippet(string(args), 2000), content)
	}
	a.recordUsage(st, p.name, out.Duration, errCode, run.Error)
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "step": st.steps - 1, "call_id": p.id, "tool": p.name, "decision": decision, "status": run.Status, "error": run.Error, "duration_ms": run.DurationMS, "output": snippet(res.Content, 2000)})
	return &callResult{id: p.id, name: p.name, run: run, modelContent: content}
}

func (a *Agent) asker(st *turnState, callID string) func(context.Context, string, []string) (string, error) {
	return func(ctx context.Context, q string, choices []string) (string, error) {
		_, d := a.d.Approvals.Ask(ctx, approval.Request{Kind: approval.KindQuestion, ChatID: st.t.ChatID, TurnID: st.t.ID, CallID: callID, Question: q, Choices: choices, NoExpiry: st.t.opts.Background}, st.t.opts.NoApprover)
		switch d.Outcome {
		case approval.Answer:
			return d.Answer, nil
		case approval.Deny:
			return "", errors.New("the user declined to answer")
		case approval.Timeout:
			return "", fmt.Errorf("nobody answered within %s", a.d.Approvals.Timeout())
		case approval.NoApprover:
			return "", errors.New("nobody is attached who could answer")
		}
		return "", context.Canceled
	}
}

// recordUsage writes the tool timing row; failures are logged, never fatal.
func (a *Agent) recordUsage(st *turnState, name string, d time.Duration, outcome, msg string) {
	if a.d.Usage == nil {
		return
	}
	if outcome == "" {
		outcome = "ok"
	}
	if err := a.d.Usage.RecordTool(st.bg, usage.ToolCall{Service: "agent", Tool: name, Duration: d, Outcome: outcome, Error: snippet(msg, 300), ChatID: st.t.ChatID}); err != nil {
		a.d.Log.Warn("recording tool usage", "tool", name, "err", err)
	}
}
