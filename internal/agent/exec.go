package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/taint"
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

func (a *Agent) prepare(st *turnState, i int, c llm.ToolCall, offered map[string]bool) *prepared {
	p := &prepared{id: c.ID, name: c.Name, raw: c.Arguments, dispatched: json.RawMessage("{}")}
	if p.id == "" {
		// Some local servers omit ids; results must still pair with calls.
		p.id = "call_" + strconv.Itoa(st.steps) + "_" + strconv.Itoa(i)
	}
	if !offered[c.Name] {
		p.refusal = fmt.Sprintf("tool %q is not available in this conversation; the call did not run.", c.Name)
		p.decision = DecBlocked
		p.checked.Result = policy.Result{Tool: c.Name, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: "not offered"}
		return p
	}
	p.checked = a.d.Policy.Check(st.ctx, a.d.Tools, a.d.Paths, c.Name, c.Arguments, st.t.ChatID)
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
		p.decision = DecInvalid
		return p
	}
	p.dispatched = p.checked.Args
	r := p.checked.Result
	a.audit(st.bg, audit.Entry{Type: audit.TypePolicyDecision, ChatID: st.t.ChatID, TurnID: st.t.ID, Tool: c.Name,
		Summary: fmt.Sprintf("%s → %s (%s)", c.Name, r.Decision, r.Source), Data: map[string]any{"call_id": p.id, "args": json.RawMessage(p.dispatched), "result": r}})
	if r.Decision == policy.Deny {
		p.refusal = fmt.Sprintf("BLOCKED: %s was NOT run. Policy refuses this call: %s. Do not retry it in another form; tell the user it is not allowed.", c.Name, r.Reason)
		p.decision = DecBlocked
	}
	return p
}

// execute runs a model reply's calls. When every call is allowed and
// parallel-safe they run concurrently; otherwise one after another. Results
// are always returned in call order, one per call.
func (a *Agent) execute(st *turnState, ps []*prepared) []*callResult {
	out := make([]*callResult, len(ps))
	parallel := len(ps) > 1
	for _, p := range ps {
		// Only pure reads run concurrently: a write or egress call goes
		// through authorizeAndRun, which re-decides it if an earlier call of
		// the same reply read untrusted content (taint).
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
				out[i] = a.runAllowed(st, p, p.dispatched, DecAllowed, "policy", "")
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
		out[i] = a.authorizeAndRun(st, p)
	}
	return out
}

func (a *Agent) skipped(st *turnState, p *prepared) *callResult {
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "call_id": p.id, "tool": p.name, "decision": DecSkipped, "status": StatusNotRun, "error": "", "duration_ms": 0, "output": ""})
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
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "call_id": p.id, "tool": p.name, "decision": decision, "status": StatusNotRun, "error": "", "duration_ms": 0, "output": snippet(content, 2000), "note": note})
	return r
}

func (a *Agent) authorizeAndRun(st *turnState, p *prepared) *callResult {
	a.recheckTaint(st, p) // taint.go
	if p.refusal != "" {
		// A policy refusal keeps its reason on the card ("outside the
		// folders Hestia may write: …"), not only in the model's text.
		note := ""
		if p.decision == DecBlocked {
			note = p.checked.Result.Reason
		}
		return a.refused(st, p, p.decision, p.refusal, note)
	}
	r := p.checked.Result
	if r.Decision == policy.Allow {
		return a.runAllowed(st, p, p.dispatched, DecAllowed, r.Source, "")
	}
	// Gate: ask. The request carries the exact arguments the tool would run.
	spec := p.tool.Spec()
	req := approval.Request{
		Kind: approval.KindApproval, ChatID: st.t.ChatID, TurnID: st.t.ID, CallID: p.id,
		Tool: p.name, Args: p.dispatched, Risk: spec.Risk.String(), Reason: r.Reason, Schema: spec.Schema,
		TaintedBy: r.TaintedBy,
		NoExpiry:  st.t.opts.Background,
		Preview:   a.preview(st.ctx, p),
		Diff:      diffOf(st.ctx, p),
		Validate: func(edited json.RawMessage) (json.RawMessage, error) {
			c := a.d.Policy.Check(st.bg, a.d.Tools, a.d.Paths, p.name, string(edited), st.t.ChatID)
			if c.ArgErr != nil {
				return nil, c.ArgErr
			}
			if c.Result.Decision == policy.Deny {
				return nil, fmt.Errorf("the edited arguments are refused by policy: %s", c.Result.Reason)
			}
			return c.Args, nil
		},
	}
	held := a.hold(st, p, req)
	_, d := a.d.Approvals.Ask(st.ctx, req, st.t.opts.NoApprover)
	if held != "" {
		if r := a.settleHeld(st, p, held, d); r != nil {
			return r
		}
	}
	switch d.Outcome {
	case approval.Approve:
		a.applyMode(st, d)
		return a.finishHeld(st, held, a.runAllowed(st, p, p.dispatched, DecApproved, "user", d.Note))
	case approval.Edit:
		a.applyMode(st, d)
		return a.finishHeld(st, held, a.runAllowed(st, p, d.Args, DecEdited, "user", d.Note))
	case approval.Deny:
		msg := fmt.Sprintf("NOT done: the user denied %s; nothing was changed.", p.name)
		if d.Note != "" {
			msg += " The user's note: " + d.Note
		}
		return a.refused(st, p, DecDenied, msg, d.Note)
	case approval.Revise:
		msg := fmt.Sprintf("NOT done: the user asked you to revise this %s call before anything runs. Their feedback: %s. Propose a corrected call or ask what they want.", p.name, d.Note)
		return a.refused(st, p, DecRevise, msg, d.Note)
	case approval.Timeout:
		return a.refused(st, p, DecTimeout, fmt.Sprintf("NOT done: %s needed approval and nobody answered within %s, so it was treated as denied. The user did not refuse it; do not assume it happened.", p.name, a.d.Approvals.Timeout()), "")
	case approval.NoApprover:
		return a.refused(st, p, DecNoApprover, fmt.Sprintf("NOT done: %s needs the user's approval and nobody is attached who could give it, so it was denied. Tell the user what you wanted to do so they can do it from the app.", p.name), "")
	default: // cancelled with the turn
		return a.skipped(st, p)
	}
}

func (a *Agent) applyMode(st *turnState, d approval.Decision) {
	if d.Mode == "" {
		return
	}
	if _, err := a.d.Policy.Modes().Set(st.t.ChatID, d.Mode, 0); err == nil {
		a.publish("policy.changed", st.t.ChatID, map[string]any{})
		a.audit(st.bg, audit.Entry{Type: "policy.mode_changed", ChatID: st.t.ChatID, TurnID: st.t.ID, Summary: "temporary mode " + d.Mode + " started from an approval", Data: map[string]any{"mode": d.Mode}})
	}
}

func (a *Agent) preview(ctx context.Context, p *prepared) string {
	if pv, ok := p.tool.(tools.Previewer); ok {
		if s := pv.Preview(ctx, p.dispatched); s != "" {
			return snippet(s, 300)
		}
	}
	return snippet(p.name+" "+string(p.dispatched), 300)
}

// diffOf asks a text-editing tool for the unified diff its call would make.
func diffOf(ctx context.Context, p *prepared) string {
	if d, ok := p.tool.(tools.Differ); ok {
		return d.Diff(ctx, p.dispatched)
	}
	return ""
}

// runAllowed runs an authorized call with args and records the outcome.
func (a *Agent) runAllowed(st *turnState, p *prepared, args json.RawMessage, decision, source, note string) *callResult {
	spec := p.tool.Spec()
	a.publish("tool.started", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "call_id": p.id, "tool": p.name, "args": json.RawMessage(args), "policy": string(p.checked.Result.Decision)})
	call := tools.Call{ID: p.id, ChatID: st.t.ChatID, TurnID: st.t.ID, Args: args}
	if !st.t.opts.NoApprover {
		call.Ask = a.asker(st, p.id)
	}
	ctx, cancel := context.WithTimeout(st.ctx, a.cfg.ToolTimeout)
	start := time.Now()
	res, err := runSafely(ctx, p.tool, call)
	a.markTaint(st, p, args)
	dur := time.Since(start)
	cancel()
	run := chat.ToolRun{Input: p.dispatched, Decision: decision, DecisionSource: source, Policy: string(p.checked.Result.Decision), PolicyRule: p.checked.Result.RuleID, DurationMS: dur.Milliseconds(), Note: note}
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
			st.taint.Mark(taint.Source{Tool: p.name, Detail: taintDetail(p.tool, args), CallID: p.id, At: a.d.Clock()})
		}
	}
	if decision == DecEdited {
		// The model must not believe its own proposal ran unchanged.
		content = fmt.Sprintf("Note: the user edited the arguments before approving; %s ran with %s\n%s", p.name, snippet(string(args), 2000), content)
	}
	a.recordUsage(st, p.name, dur, errCode, run.Error)
	a.audit(st.bg, audit.Entry{Type: audit.TypeToolRun, ChatID: st.t.ChatID, TurnID: st.t.ID, Tool: p.name,
		Summary: fmt.Sprintf("%s %s in %dms (%s)", p.name, run.Status, run.DurationMS, decision),
		Data:    map[string]any{"call_id": p.id, "input": json.RawMessage(p.dispatched), "effective_input": json.RawMessage(rawOrEmpty(args)), "decision": decision, "status": run.Status, "error": run.Error, "output": res.Content}})
	a.publish("tool.finished", st.t.ChatID, map[string]any{"turn_id": st.t.ID, "call_id": p.id, "tool": p.name, "decision": decision, "status": run.Status, "error": run.Error, "duration_ms": run.DurationMS, "output": snippet(res.Content, 2000)})
	return &callResult{id: p.id, name: p.name, run: run, modelContent: content}
}

// runSafely turns a tool panic into an error so one broken connector cannot
// take the daemon down.
func runSafely(ctx context.Context, t tools.Tool, c tools.Call) (res tools.Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the tool panicked: %v", p)
		}
	}()
	return t.Run(ctx, c)
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

// taintDetail names what was read: the path for file-like tools, else empty.
func taintDetail(t tools.Tool, args json.RawMessage) string {
	if v := t.Spec().PathValues(args); len(v) > 0 {
		return v[0]
	}
	// Otherwise the argument that names the source: a URL or an id.
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		for _, k := range []string{"url", "uri", "id", "message_id", "query", "q"} {
			switch v := m[k].(type) {
			case string:
				if v != "" {
					return k + " " + v
				}
			case float64:
				return fmt.Sprintf("%s %g", k, v)
			}
		}
	}
	return ""
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

// hold records a background turn's gated call durably before its card is
// shown (Deps.Held) and returns its key; "" when calls are not held.
func (a *Agent) hold(st *turnState, p *prepared, req approval.Request) string {
	if a.d.Held == nil || !st.t.opts.Background {
		return ""
	}
	key := st.t.ID + ":" + p.id
	origin := st.t.opts.Origin
	if origin == "" {
		origin = "turn:" + st.t.ID
	}
	if err := a.d.Held.Hold(st.bg, HeldCall{Key: key, Origin: origin, ChatID: st.t.ChatID, Tool: p.name, Reason: req.Reason, Args: req.Args, TaintedBy: req.TaintedBy}); err != nil {
		a.d.Log.Warn("holdCall", "tool", p.name, "err", err)
		return ""
	}
	return key
}

// settleHeld applies the card's decision to a held call. An approval runs
// only if Held.Begin takes the call (it cannot run twice); a denial closes
// it; a card the turn stopped waiting for (cancelled, the job's timeout)
// is handed over to be asked again. A non-nil result ends the call here.
func (a *Agent) settleHeld(st *turnState, p *prepared, key string, d approval.Decision) *callResult {
	switch d.Outcome {
	case approval.Approve, approval.Edit:
		ok, err := a.d.Held.Begin(st.bg, key)
		if err != nil || !ok {
			return a.refused(st, p, DecSkipped, fmt.Sprintf("NOT run now: %s was already handled outside this turn (approved or denied from another card).", p.name), "")
		}
	case approval.Deny, approval.Revise:
		if err := a.d.Held.Finish(st.bg, key, "denied", "the user denied it: "+d.Note); err != nil {
			a.d.Log.Warn("holdCall", "tool", p.name, "err", err)
		}
	default:
		a.d.Held.Adopt(key)
	}
	return nil
}

// finishHeld records how a held call ended.
func (a *Agent) finishHeld(st *turnState, key string, r *callResult) *callResult {
	if key == "" {
		return r
	}
	state, result := "done", r.run.Error
	if r.run.Status != StatusOK {
		if context.Cause(st.ctx) != nil {
			// Stopped mid-run: it stays running, and the next start marks
			// it unknown rather than guessing whether it happened.
			return r
		}
		state = "failed"
	}
	if err := a.d.Held.Finish(st.bg, key, state, result); err != nil {
		a.d.Log.Warn("holdCall", "tool", r.name, "err", err)
	}
	return r
}
