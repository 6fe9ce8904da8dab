// Package policy decides, in deterministic code, whether a tool call runs
// (allow), waits for the user (gate) or is refused (deny). The model's text
// never takes part: the inputs are the tool's declared spec, the validated
// arguments, persistent trust rules, configured deny prefixes, the risk
// threshold and the chat's temporary mode.
//
// Order of evaluation, first match wins:
//  1. deny prefixes (whole namespaces such as mcp__) → deny;
//  2. trust rules, highest priority first, deny > gate > allow on ties;
//  3. the risk threshold: risk at or below auto_approve → allow, else gate;
//     a tool without a declared risk, or unknown to the registry → gate;
//  4. a temporary mode for the chat turns gate into allow; it never turns a
//     deny into anything else.
package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Decision is the outcome for one call.
type Decision string

// Decisions.
const (
	Allow Decision = "allow"
	Gate  Decision = "gate"
	Deny  Decision = "deny"
)

func (d Decision) valid() bool { return d == Allow || d == Gate || d == Deny }

// strength orders decisions for tie-breaking: deny beats gate beats allow.
func (d Decision) strength() int {
	switch d {
	case Deny:
		return 3
	case Gate:
		return 2
	}
	return 1
}

// Sources say which step decided.
const (
	SourceDenyPrefix    = "deny_prefix"
	SourceRule          = "rule"
	SourceThreshold     = "threshold"
	SourceUnknownTool   = "unknown_tool"
	SourceTemporaryMode = "temporary_mode"
	SourceInvalidArgs   = "invalid_args"
	SourcePathPolicy    = "path_policy"
)

// Threshold is the highest risk that runs without asking.
type Threshold string

// Thresholds.
const (
	ThresholdNone   Threshold = "none"
	ThresholdLow    Threshold = "low"
	ThresholdMedium Threshold = "medium"
	ThresholdHigh   Threshold = "high"
)

func (t Threshold) max() tools.Risk {
	switch t {
	case ThresholdLow:
		return tools.RiskLow
	case ThresholdMedium:
		return tools.RiskMedium
	case ThresholdHigh:
		return tools.RiskHigh
	}
	return tools.RiskUnknown // none: nothing is auto-approved
}

// ParseThreshold validates a threshold name.
func ParseThreshold(s string) (Threshold, error) {
	switch Threshold(s) {
	case ThresholdNone, ThresholdLow, ThresholdMedium, ThresholdHigh:
		return Threshold(s), nil
	}
	return "", fmt.Errorf("auto-approve threshold %q is not one of none, low, medium, high", s)
}

// Config is the static part of the policy.
type Config struct {
	AutoApprove  Threshold
	DenyPrefixes []string
	// NoTaint turns off taint tightening ([safety] taint = false); the
	// zero value keeps it on.
	NoTaint bool
}

// Input is one call to decide. Tool is nil for names the registry does not
// know.
type Input struct {
	ToolName string
	Tool     tools.Tool
	Args     json.RawMessage // canonical, validated
	ChatID   string
	// Paths are the call's path arguments, resolved by the caller where
	// possible (absolute paths); path scopes compare against them.
	Paths []string
	// Target overrides the pattern target (normally derived from the tool).
	Target string
}

// Result is a decision with its reason.
type Result struct {
	Tool     string   `json:"tool"`
	Decision Decision `json:"decision"`
	Source   string   `json:"source"`
	RuleID   string   `json:"rule_id"`
	Rule     *Rule    `json:"rule,omitempty"`
	Risk     string   `json:"risk"`
	Reason   string   `json:"reason"`
	// TaintedBy lists the untrusted sources this turn read, when they
	// tightened or annotated the decision (see taint.go).
	TaintedBy []taint.Source `json:"tainted_by,omitempty"`
}

// Engine evaluates calls. It is safe for concurrent use.
type Engine struct {
	mu    sync.RWMutex // guards cfg (the threshold can change live)
	cfg   Config
	rules *RuleStore
	modes *Modes
	log   *slog.Logger
	// OnChange is called after rules or modes change (the server publishes
	// a policy.changed event).
	onChange func()
}

// New builds an engine over a rule store and a mode table.
func New(cfg Config, rules *RuleStore, modes *Modes, log *slog.Logger) (*Engine, error) {
	if cfg.AutoApprove == "" {
		cfg.AutoApprove = ThresholdLow
	}
	if _, err := ParseThreshold(string(cfg.AutoApprove)); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{cfg: cfg, rules: rules, modes: modes, log: log}, nil
}

// SetOnChange installs the change callback.
func (e *Engine) SetOnChange(fn func()) { e.onChange = fn }

func (e *Engine) changed() {
	if e.onChange != nil {
		e.onChange()
	}
}

// Modes returns the temporary mode table.
func (e *Engine) Modes() *Modes { return e.modes }

// Rules returns the rule store.
func (e *Engine) Rules() *RuleStore { return e.rules }

// Config returns the configuration in force.
func (e *Engine) Config() Config {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.cfg
}

// SetAutoApprove changes the auto-approve threshold of the running engine
// (Settings applies a saved threshold without a restart). A bad value is
// refused and the threshold in force stays.
func (e *Engine) SetAutoApprove(t Threshold) error {
	if _, err := ParseThreshold(string(t)); err != nil {
		return err
	}
	e.mu.Lock()
	changed := e.cfg.AutoApprove != t
	e.cfg.AutoApprove = t
	e.mu.Unlock()
	if changed {
		e.changed()
	}
	return nil
}

// Decide evaluates one call. It never fails: an unreadable rule set is
// treated as no rules, which still leaves deny prefixes and the threshold.
func (e *Engine) Decide(ctx context.Context, in Input) Result {
	res := e.decide(ctx, in)
	if res.Decision == Gate && in.ChatID != "" && e.modes != nil {
		if m := e.modes.Get(in.ChatID); m.Mode != ModeOff {
			res.Decision = Allow
			res.Reason = fmt.Sprintf("temporary mode %s for this chat (would otherwise gate: %s)", m.Mode, res.Reason)
			res.Source = SourceTemporaryMode
		}
	}
	return e.restrict(ctx, in, e.tighten(ctx, in, res))
}

func (e *Engine) decide(ctx context.Context, in Input) Result {
	cfg := e.Config()
	res := Result{Tool: in.ToolName, Risk: tools.RiskUnknown.String()}
	var spec tools.Spec
	if in.Tool != nil {
		spec = in.Tool.Spec()
		res.Risk = spec.Risk.String()
	}
	for _, p := range cfg.DenyPrefixes {
		if p != "" && strings.HasPrefix(in.ToolName, p) {
			res.Decision, res.Source = Deny, SourceDenyPrefix
			res.Reason = fmt.Sprintf("tools starting with %q are disabled by configuration", p)
			return res
		}
	}
	if in.Tool == nil {
		res.Decision, res.Source = Gate, SourceUnknownTool
		res.Reason = "unknown tools need approval"
		return res
	}
	target := in.Target
	if target == "" {
		if t, ok := in.Tool.(tools.Targeter); ok {
			target = t.Target(in.Args)
		} else {
			target = string(in.Args)
		}
	}
	if r := e.rules.match(ctx, in.ToolName, target, in.Paths); r != nil {
		rc := *r
		res.Decision, res.Source, res.RuleID, res.Rule = r.Decision, SourceRule, r.ID, &rc
		res.Reason = fmt.Sprintf("rule %s (priority %d) says %s", r.ID, r.Priority, r.Decision)
		if r.Note != "" {
			res.Reason += ": " + r.Note
		}
		return res
	}
	if spec.Risk == tools.RiskUnknown {
		res.Decision, res.Source = Gate, SourceUnknownTool
		res.Reason = "the tool declares no risk level, so it needs approval"
		return res
	}
	res.Source = SourceThreshold
	if spec.Risk <= cfg.AutoApprove.max() {
		res.Decision = Allow
		res.Reason = fmt.Sprintf("risk %s is within the auto-approve threshold %s", spec.Risk, cfg.AutoApprove)
	} else {
		res.Decision = Gate
		res.Reason = fmt.Sprintf("risk %s is above the auto-approve threshold %s", spec.Risk, cfg.AutoApprove)
	}
	return res
}

// Mode names.
const (
	ModeOff       = "off"
	ModeAllow10m  = "allow_10m"
	ModeAllowChat = "allow_chat"
)

// ModeState is a chat's current temporary mode.
type ModeState struct {
	Mode      string     `json:"mode"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Modes holds temporary per-chat modes in memory only: they must not outlive
// the daemon, so they are never written anywhere.
type Modes struct {
	clock func() time.Time
	mu    sync.Mutex // guards m
	m     map[string]ModeState
}

// NewModes returns an empty mode table.
func NewModes(clock func() time.Time) *Modes {
	if clock == nil {
		clock = time.Now
	}
	return &Modes{clock: clock, m: map[string]ModeState{}}
}

// Get returns the chat's mode, expiring timed modes lazily.
func (m *Modes) Get(chatID string) ModeState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.m[chatID]
	if !ok {
		return ModeState{Mode: ModeOff}
	}
	if s.ExpiresAt != nil && !m.clock().Before(*s.ExpiresAt) {
		delete(m.m, chatID)
		return ModeState{Mode: ModeOff}
	}
	return s
}

// ErrBadMode is wrapped by Set for unknown modes or durations.
var ErrBadMode = errors.New("bad temporary mode")

// Set starts or clears a mode. d applies to allow_10m (0 means 10 minutes,
// at most 24 hours).
func (m *Modes) Set(chatID, mode string, d time.Duration) (ModeState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch mode {
	case ModeOff:
		delete(m.m, chatID)
		return ModeState{Mode: ModeOff}, nil
	case ModeAllowChat:
		s := ModeState{Mode: mode}
		m.m[chatID] = s
		return s, nil
	case ModeAllow10m:
		if d == 0 {
			d = 10 * time.Minute
		}
		if d < 0 || d > 24*time.Hour {
			return ModeState{}, fmt.Errorf("%w: duration %s must be between 1m and 24h", ErrBadMode, d)
		}
		exp := m.clock().Add(d)
		s := ModeState{Mode: mode, ExpiresAt: &exp}
		m.m[chatID] = s
		return s, nil
	}
	return ModeState{}, fmt.Errorf("%w: %q is not one of off, allow_10m, allow_chat", ErrBadMode, mode)
}

// Clear drops a chat's mode (chat deleted).
func (m *Modes) Clear(chatID string) {
	m.mu.Lock()
	delete(m.m, chatID)
	m.mu.Unlock()
}

// Schema is the policy database (trust rules).
var Schema = store.Schema{Name: "policy", Migrations: []string{`
CREATE TABLE rules (
	id TEXT PRIMARY KEY,
	tool TEXT NOT NULL,
	pattern TEXT NOT NULL DEFAULT '',
	path_scope TEXT NOT NULL DEFAULT '',
	decision TEXT NOT NULL CHECK (decision IN ('allow','gate','deny')),
	priority INTEGER NOT NULL DEFAULT 100,
	note TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL
);`}}
