// Package authority is the one path by which a tool call runs, whatever
// started it: a chat turn, a channel message, a scheduled job, a watch, an
// Action Center step, a held call resumed after approval, a sub-agent, an
// MCP client session or the command line.
//
// Invoke applies, in order: the origin's tool list (a flow's declared
// tools, the tools offered to the model), argument validation, the path
// policy, deny prefixes and trust rules, the risk threshold and temporary
// modes, taint from everything the call descends from (the turn's reads and
// the origin's own provenance: the mail a plan or a watch message came
// from, a loaded skill), the active restrictions, a grant the user gave in
// advance, and then the approval card. Every decision, every start and
// every result is an audit row; a call whose start has no result when the
// daemon starts again is closed as unknown (CloseUnfinished).
//
// No other package calls a tool's Run: TestOnlyAuthorityRunsTools enforces
// it over the whole module.
package authority

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Kind is what started a call.
type Kind string

// Origins. Every one of them is a row of the adversarial matrix.
const (
	Chat     Kind = "chat"     // the user's turn in the web UI or the terminal
	Channel  Kind = "channel"  // a turn from a messaging channel (Telegram)
	CLI      Kind = "cli"      // a command run by the user (hestia docs …)
	Job      Kind = "job"      // a scheduled job's background turn
	Watch    Kind = "watch"    // a watch's delivery
	Action   Kind = "action"   // an Action Center step
	Held     Kind = "held"     // a held call asked again and resumed
	Subagent Kind = "subagent" // a delegate/research child turn
	MCP      Kind = "mcp"      // an MCP client's session on /api/mcp
)

// Kinds lists every origin, for the matrix and the docs.
var Kinds = []Kind{Chat, Channel, CLI, Job, Watch, Action, Held, Subagent, MCP}

// AskMode says what a gated call does.
type AskMode int

// Ask modes.
const (
	// AskUser shows the card and waits for the decision.
	AskUser AskMode = iota
	// Defer returns the gated call undecided (Deferred): the caller holds
	// it durably and asks later (a watch composing its message).
	Defer
	// Refuse returns the gated call as not run (Deferred) because nobody
	// can be asked from this origin (a sub-agent).
	Refuse
)

// Origin is where a call comes from and what it descends from.
type Origin struct {
	Kind Kind
	// ID identifies the origin within its kind: a watch id, an Action
	// Center item, a job, an MCP client.
	ID string
	// Label is the origin as the card shows it ("watch 3: train 9612").
	Label  string
	ChatID string
	TurnID string
	// Background requests never expire and, with Deps.Held and a
	// Call.HoldKey, are recorded durably before their card.
	Background bool
	// NoApprover: nobody attached could answer a card.
	NoApprover bool
	Ask        AskMode
	// AlwaysAsk shows a card even when the policy would allow the call:
	// a held call's user is asked about exactly that call.
	AlwaysAsk bool
	// Taint lists the untrusted sources the call descends from beyond
	// what the turn's tracker recorded: the mail an Action Center plan was
	// made from, the outside text a watch message quotes, a loaded skill.
	Taint []taint.Source
	// Tools, when non-nil, are the only tools this origin may call (a
	// flow's declared tools, the tools offered to the model this step).
	Tools []string
	// Grant is a pre-approval the user gave for this origin's calls. It
	// lifts a gate from the threshold or taint, never a deny, a trust rule,
	// a high-risk or undeclared-risk tool, or a restriction.
	Grant *Grant
}

// CommandOrigin is a command the user runs (hestia docs, doctor's own
// check): nobody is asked, so a gated call does not run.
func CommandOrigin(label string) Origin { return Origin{Kind: CLI, Label: label, Ask: Refuse} }

// Grant is a user's advance approval of a call (a watch rule's grant whose
// constraints the call matched).
type Grant struct {
	ID string // "watch 3 rule r1"
	// Allows says what the user approved, as the grant's card showed it.
	Allows string
}

// Call is one invocation.
type Call struct {
	// ID is the caller's call id (the model's, a step index…); a fresh
	// one is made when empty.
	ID   string
	Tool string
	// Args is the raw JSON argument object.
	Args string
	// Ask lets a running tool put a question to the user (ask_user).
	Ask func(ctx context.Context, question string, choices []string) (string, error)
	// OnStart is called just before the tool runs, with the arguments it
	// runs with.
	OnStart func(args json.RawMessage)
	// HoldKey, for a background origin with Deps.Held, records a gated
	// call durably before its card under this key.
	HoldKey string
	// Begin, when set, must take the call before it runs (a held call's
	// waiting → running); false means it must not run (Skipped).
	Begin func(ctx context.Context) (bool, error)
	// Timeout overrides Deps.ToolTimeout.
	Timeout time.Duration
}

// Decisions recorded on every outcome.
const (
	Allowed    = "allowed"
	Granted    = "granted"
	Approved   = "approved"
	Edited     = "edited"
	Denied     = "denied"
	Revise     = "revise"
	Timeout    = "timeout"
	NoApprover = "no_approver"
	Blocked    = "blocked"
	Invalid    = "invalid"
	Deferred   = "deferred"
	Cancelled  = "cancelled"
	Skipped    = "skipped"
)

// Why a blocked call was blocked.
const (
	WhyPolicy     = "policy"
	WhyNotOffered = "not_offered"
	WhyUnknown    = "unknown_tool"
)

// Outcome is what happened to a call.
type Outcome struct {
	CallID   string
	Decision string
	// Why narrows Blocked.
	Why string
	// Source is who decided: a policy source, "grant" or "user".
	Source string
	Policy policy.Result
	Tool   tools.Tool // nil when unknown
	// Input is the validated argument object as proposed; Args the one
	// that ran (an edit on the card changes it).
	Input  json.RawMessage
	Args   json.RawMessage
	ArgErr error
	Note   string // the user's note on the card
	Ran    bool
	Result tools.Result
	Err    error
	// Duration is how long the tool ran.
	Duration time.Duration
}

// OK reports whether the call ran and succeeded.
func (o Outcome) OK() bool { return o.Ran && o.Err == nil && !o.Result.IsError }

// HeldCall is a background call recorded before its card.
type HeldCall struct {
	Key, Origin, ChatID, Tool, Reason string
	Args                              json.RawMessage
	TaintedBy                         []taint.Source
}

// HeldCalls is the durable record of background calls waiting for the
// user (internal/heldcall).
type HeldCalls interface {
	Hold(ctx context.Context, c HeldCall) error
	// Begin takes a waiting call to run it; false: it must not run.
	Begin(ctx context.Context, key string) (bool, error)
	Finish(ctx context.Context, key, state, result string) error
	// Adopt asks again about a call no turn waits for any more.
	Adopt(key string)
}

// Deps are the authority's collaborators.
type Deps struct {
	Tools     *tools.Registry
	Policy    *policy.Engine
	Paths     policy.PathResolver
	Approvals *approval.Broker
	Audit     *audit.Log // nil: nothing is recorded (tests only)
	Held      HeldCalls  // optional
	// Publish tells clients about policy changes (a temporary mode
	// started from a card). Optional.
	Publish     func(typ, chatID string, data map[string]any)
	Clock       func() time.Time
	ToolTimeout time.Duration
	Log         *slog.Logger
}

// Authority runs tool calls. It is safe for concurrent use.
type Authority struct{ d Deps }

// DefaultToolTimeout bounds one tool run when neither Deps nor Call say.
const DefaultToolTimeout = 2 * time.Minute

// New returns the authority over d.
func New(d Deps) *Authority {
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.ToolTimeout <= 0 {
		d.ToolTimeout = DefaultToolTimeout
	}
	return &Authority{d: d}
}

// SetHeld installs the durable held-call queue (wiring order: the queue
// itself runs its calls through this authority). Call before any Invoke.
func (a *Authority) SetHeld(h HeldCalls) { a.d.Held = h }

// Tools returns the registry calls are resolved in.
func (a *Authority) Tools() *tools.Registry { return a.d.Tools }

// Policy returns the policy engine.
func (a *Authority) Policy() *policy.Engine { return a.d.Policy }

// Check decides a call the way Invoke would, with the origin's provenance
// and grant, without asking, running or recording anything (dry runs, and
// planning which calls of a reply may run in parallel).
func (a *Authority) Check(ctx context.Context, o Origin, name, raw string) policy.Checked {
	ctx = withProvenance(ctx, o.Taint)
	c := a.d.Policy.Check(ctx, a.d.Tools, a.d.Paths, name, raw, o.ChatID)
	if o.Tools != nil && !slices.Contains(o.Tools, name) {
		c.Result = policy.Result{Tool: name, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: notOffered(o, name)}
		return c
	}
	if c.Tool != nil && c.ArgErr == nil {
		c.Result = a.applyGrant(o, c.Tool.Spec(), c.Result)
	}
	return c
}

func notOffered(o Origin, name string) string {
	return fmt.Sprintf("%s may call only %s, not %s", describe(o), strings.Join(o.Tools, ", "), name)
}

// withProvenance adds the origin's taint to the turn's tracker (or a new
// one): what the call descends from taints it like a read in the turn.
func withProvenance(ctx context.Context, src []taint.Source) context.Context {
	if len(src) == 0 {
		return ctx
	}
	tr := taint.From(ctx)
	if tr == nil {
		tr = taint.NewTracker()
		ctx = taint.WithTracker(ctx, tr)
	}
	for _, s := range src {
		tr.Mark(s)
	}
	return ctx
}

// applyGrant lifts a gate the grant may lift. The high-risk floor, an
// undeclared risk, a trust rule's gate, a deny and a restriction stay.
func (a *Authority) applyGrant(o Origin, spec tools.Spec, r policy.Result) policy.Result {
	if o.Grant == nil || r.Decision != policy.Gate {
		return r
	}
	if spec.Risk == tools.RiskHigh || spec.Risk == tools.RiskUnknown {
		r.Reason += fmt.Sprintf("; %s cannot pre-approve a %s-risk tool", o.Grant.ID, spec.Risk)
		return r
	}
	if r.Source != policy.SourceThreshold && r.Source != policy.SourceTaint {
		r.Reason += fmt.Sprintf("; %s cannot lift this gate", o.Grant.ID)
		return r
	}
	r.Decision, r.Source = policy.Allow, "grant"
	r.Reason = fmt.Sprintf("pre-approved by %s (%s); otherwise: %s", o.Grant.ID, o.Grant.Allows, r.Reason)
	return r
}

func describe(o Origin) string {
	if o.Label != "" {
		return o.Label
	}
	if o.ID != "" {
		return fmt.Sprintf("%s %s", o.Kind, o.ID)
	}
	return string(o.Kind)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Invoke decides, asks where needed, runs and records one call. It never
// panics on a broken tool and never runs a call that was not decided.
func (a *Authority) Invoke(ctx context.Context, o Origin, c Call) Outcome {
	if c.ID == "" {
		c.ID = string(o.Kind) + "_" + newID()
	}
	out := Outcome{CallID: c.ID, Input: json.RawMessage("{}"), Args: json.RawMessage("{}")}
	bg := context.WithoutCancel(ctx)
	ctx = withProvenance(ctx, o.Taint)
	if o.Tools != nil && !slices.Contains(o.Tools, c.Tool) {
		out.Decision, out.Why = Blocked, WhyNotOffered
		out.Policy = policy.Result{Tool: c.Tool, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: notOffered(o, c.Tool)}
		a.recordDecision(bg, o, c, out)
		return out
	}
	chk := a.d.Policy.Check(ctx, a.d.Tools, a.d.Paths, c.Tool, c.Args, o.ChatID)
	out.Tool, out.Policy = chk.Tool, chk.Result
	if chk.Tool == nil {
		out.Decision, out.Why = Blocked, WhyUnknown
		out.Policy = policy.Result{Tool: c.Tool, Decision: policy.Deny, Source: policy.SourceUnknownTool, Reason: "no such tool is registered"}
		a.recordDecision(bg, o, c, out)
		return out
	}
	if chk.ArgErr != nil {
		out.Decision, out.ArgErr = Invalid, chk.ArgErr
		a.recordDecision(bg, o, c, out)
		return out
	}
	out.Input, out.Args = chk.Args, chk.Args
	spec := chk.Tool.Spec()
	r := a.applyGrant(o, spec, chk.Result)
	if o.AlwaysAsk && r.Decision == policy.Allow {
		r.Decision = policy.Gate
		r.Reason = "asked again: " + r.Reason
	}
	out.Policy = r
	out.Source = r.Source
	a.recordDecision(bg, o, c, out)
	switch r.Decision {
	case policy.Deny:
		out.Decision, out.Why = Blocked, WhyPolicy
		return out
	case policy.Allow:
		dec := Allowed
		if r.Source == "grant" {
			dec = Granted
		}
		return a.run(ctx, o, c, out, chk.Args, dec)
	}
	switch o.Ask {
	case Defer, Refuse:
		out.Decision = Deferred
		return out
	}
	return a.ask(ctx, o, c, out)
}

// ask shows the card for a gated call and runs it if the user approves.
func (a *Authority) ask(ctx context.Context, o Origin, c Call, out Outcome) Outcome {
	bg := context.WithoutCancel(ctx)
	t, r := out.Tool, out.Policy
	spec := t.Spec()
	req := approval.Request{
		Kind: approval.KindApproval, ChatID: o.ChatID, TurnID: o.TurnID, CallID: c.ID,
		Tool: c.Tool, Args: out.Input, Risk: spec.Risk.String(), Reason: r.Reason, Schema: spec.Schema,
		TaintedBy: r.TaintedBy, NoExpiry: o.Background,
		Preview: preview(ctx, t, c.Tool, out.Input), Diff: diff(ctx, t, out.Input),
		Validate: func(edited json.RawMessage) (json.RawMessage, error) {
			e := a.Check(ctx, o, c.Tool, string(edited))
			if e.ArgErr != nil {
				return nil, e.ArgErr
			}
			if e.Result.Decision == policy.Deny {
				return nil, fmt.Errorf("the edited arguments are refused by policy: %s", e.Result.Reason)
			}
			return e.Args, nil
		},
	}
	if o.Kind != Chat {
		req.Origin = describe(o)
	}
	if o.Grant != nil {
		req.Grant = o.Grant.ID
	}
	held := ""
	if o.Background && a.d.Held != nil && c.HoldKey != "" {
		origin := o.ID
		if origin == "" {
			origin = "turn:" + o.TurnID
		}
		if err := a.d.Held.Hold(bg, HeldCall{Key: c.HoldKey, Origin: origin, ChatID: o.ChatID, Tool: c.Tool, Reason: r.Reason, Args: out.Input, TaintedBy: r.TaintedBy}); err != nil {
			a.d.Log.Warn("holdCall", "tool", c.Tool, "err", err)
		} else {
			held = c.HoldKey
		}
	}
	_, d := a.d.Approvals.Ask(ctx, req, o.NoApprover)
	out.Note = d.Note
	if held != "" {
		switch d.Outcome {
		case approval.Approve, approval.Edit:
			ok, err := a.d.Held.Begin(bg, held)
			if err != nil || !ok {
				out.Decision = Skipped
				return out
			}
		case approval.Deny, approval.Revise:
			if err := a.d.Held.Finish(bg, held, "denied", "the user denied it: "+d.Note); err != nil {
				a.d.Log.Warn("holdCall", "tool", c.Tool, "err", err)
			}
		default:
			// The turn stopped waiting (cancelled, the job's timeout):
			// the held call is asked again without it.
			a.d.Held.Adopt(held)
		}
	}
	switch d.Outcome {
	case approval.Approve, approval.Edit:
		a.applyMode(bg, o, d)
		out.Source = "user"
		dec, args := Approved, out.Input
		if d.Outcome == approval.Edit && len(d.Args) > 0 {
			dec, args = Edited, d.Args
		}
		res := a.run(ctx, o, c, out, args, dec)
		if held != "" {
			a.finishHeld(ctx, held, res)
		}
		return res
	case approval.Deny:
		out.Decision = Denied
	case approval.Revise:
		out.Decision = Revise
	case approval.Timeout:
		out.Decision = Timeout
	case approval.NoApprover:
		out.Decision = NoApprover
	default:
		out.Decision = Cancelled
	}
	return out
}

// finishHeld records how a held call ended. One stopped mid-run stays
// running, so the next start marks it unknown rather than guessing.
func (a *Authority) finishHeld(ctx context.Context, key string, res Outcome) {
	state, result := "done", ""
	if !res.OK() {
		if context.Cause(ctx) != nil {
			return
		}
		state = "failed"
		if res.Err != nil {
			result = res.Err.Error()
		} else {
			result = res.Result.Content
		}
	}
	if err := a.d.Held.Finish(context.WithoutCancel(ctx), key, state, result); err != nil {
		a.d.Log.Warn("holdCall", "key", key, "err", err)
	}
}

func (a *Authority) applyMode(ctx context.Context, o Origin, d approval.Decision) {
	if d.Mode == "" || o.ChatID == "" {
		return
	}
	if _, err := a.d.Policy.Modes().Set(o.ChatID, d.Mode, 0); err != nil {
		return
	}
	if a.d.Publish != nil {
		a.d.Publish("policy.changed", o.ChatID, map[string]any{})
	}
	a.d.Audit.Record(ctx, audit.Entry{Type: "policy.mode_changed", ChatID: o.ChatID, TurnID: o.TurnID,
		Summary: "temporary mode " + d.Mode + " started from an approval", Data: map[string]any{"mode": d.Mode, "origin": o.Kind}})
}

func preview(ctx context.Context, t tools.Tool, name string, args json.RawMessage) string {
	if pv, ok := t.(tools.Previewer); ok {
		if s := pv.Preview(ctx, args); s != "" {
			return clip(s, 300)
		}
	}
	return clip(name+" "+string(args), 300)
}

func diff(ctx context.Context, t tools.Tool, args json.RawMessage) string {
	if d, ok := t.(tools.Differ); ok {
		return d.Diff(ctx, args)
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// run executes a decided call: start row, the tool under its timeout with
// panics recovered, taint for untrusted output, result row.
func (a *Authority) run(ctx context.Context, o Origin, c Call, out Outcome, args json.RawMessage, decision string) Outcome {
	bg := context.WithoutCancel(ctx)
	out.Decision, out.Args = decision, args
	if c.Begin != nil {
		ok, err := c.Begin(bg)
		if err != nil || !ok {
			out.Decision = Skipped
			return out
		}
	}
	t := out.Tool
	key := string(o.Kind) + ":" + o.ID + ":" + o.TurnID + ":" + c.ID + ":" + newID()
	a.d.Audit.Record(bg, audit.Entry{Type: audit.TypeToolStarted, ChatID: o.ChatID, TurnID: o.TurnID, Tool: c.Tool,
		Summary: fmt.Sprintf("%s started (%s, %s)", c.Tool, decision, describe(o)),
		Data:    map[string]any{"call_key": key, "call_id": c.ID, "origin": originData(o), "decision": decision, "args": args}})
	if c.OnStart != nil {
		c.OnStart(args)
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = a.d.ToolTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	start := a.d.Clock()
	res, err := runSafely(rctx, t, tools.Call{ID: c.ID, ChatID: o.ChatID, TurnID: o.TurnID, Args: args, Ask: c.Ask})
	out.Duration = a.d.Clock().Sub(start)
	cancel()
	out.Ran, out.Result, out.Err = true, res, err
	if taint.Untrusted(t) {
		// Marked on failures too: an error page is outside content.
		if tr := taint.From(ctx); tr != nil {
			tr.Mark(taint.Source{Tool: c.Tool, Detail: Detail(t, args), CallID: c.ID, At: a.d.Clock()})
		}
	}
	status, errText := "ok", ""
	switch {
	case err != nil:
		status, errText = "error", err.Error()
	case res.IsError:
		status, errText = "error", clip(res.Content, 500)
	}
	a.d.Audit.Record(bg, audit.Entry{Type: audit.TypeToolRun, ChatID: o.ChatID, TurnID: o.TurnID, Tool: c.Tool,
		Summary: fmt.Sprintf("%s %s in %dms (%s, %s)", c.Tool, status, out.Duration.Milliseconds(), decision, describe(o)),
		Data: map[string]any{"call_key": key, "call_id": c.ID, "origin": originData(o), "input": out.Input, "effective_input": args,
			"decision": decision, "status": status, "error": errText, "output": res.Content}})
	return out
}

func originData(o Origin) map[string]any {
	m := map[string]any{"kind": o.Kind}
	if o.ID != "" {
		m["id"] = o.ID
	}
	if o.Label != "" {
		m["label"] = o.Label
	}
	if o.Grant != nil {
		m["grant"] = o.Grant.ID
	}
	if len(o.Taint) > 0 {
		m["taint"] = o.Taint
	}
	return m
}

// recordDecision writes the policy.decision row.
func (a *Authority) recordDecision(ctx context.Context, o Origin, c Call, out Outcome) {
	dec := out.Policy.Decision
	if out.Decision == Invalid {
		dec = policy.Deny
	}
	src := out.Policy.Source
	if out.Decision == Invalid {
		src = policy.SourceInvalidArgs
	}
	a.d.Audit.Record(ctx, audit.Entry{Type: audit.TypePolicyDecision, ChatID: o.ChatID, TurnID: o.TurnID, Tool: c.Tool,
		Summary: fmt.Sprintf("%s → %s (%s, %s)", c.Tool, dec, src, describe(o)),
		Data:    map[string]any{"call_id": c.ID, "origin": originData(o), "args": out.Input, "result": out.Policy}})
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

// Detail names what an untrusted read read: the path for file-like tools,
// else the argument that names the source (a URL or an id).
func Detail(t tools.Tool, args json.RawMessage) string {
	if v := t.Spec().PathValues(args); len(v) > 0 {
		return v[0]
	}
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

// CloseUnfinished records every call that started and has no result as
// ended unknown: the daemon stopped (or was killed) while it ran, so it may
// or may not have happened. Run once at start-up, before any call.
func (a *Authority) CloseUnfinished(ctx context.Context) (int, error) {
	if a.d.Audit == nil {
		return 0, nil
	}
	open, err := a.d.Audit.UnfinishedCalls(ctx)
	if err != nil {
		return 0, err
	}
	for _, e := range open {
		var d struct {
			Key    string          `json:"call_key"`
			CallID string          `json:"call_id"`
			Origin json.RawMessage `json:"origin"`
			Args   json.RawMessage `json:"args"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			continue
		}
		if _, err := a.d.Audit.Append(ctx, audit.Entry{Type: audit.TypeToolRun, ChatID: e.ChatID, TurnID: e.TurnID, Tool: e.Tool,
			Summary: fmt.Sprintf("%s unknown: the daemon stopped while it ran (started %s)", e.Tool, e.TS.Format(time.RFC3339)),
			Data: map[string]any{"call_key": d.Key, "call_id": d.CallID, "origin": d.Origin, "input": d.Args,
				"status": "unknown", "error": "the daemon stopped while it ran: it may or may not have happened"}}); err != nil {
			return 0, fmt.Errorf("closing call %s: %w", d.Key, err)
		}
	}
	return len(open), nil
}

// ErrNoAuthority is returned by wiring that was built without one.
var ErrNoAuthority = errors.New("no tool authority configured")
