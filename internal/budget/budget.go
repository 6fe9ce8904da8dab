// Package budget enforces hard spend caps on model calls.
//
// Caps are per local calendar day and month, on estimated cost (US dollars,
// from the usage ledger's rates) and on tokens. Spend is read from the usage
// ledger, so every model call that the ledger records counts, whoever made
// it: interactive turns, background work, scheduled jobs and sub-agents.
//
// The Guard is asked before every call (the Client and Embedder wrappers do
// that for the router). Crossing the warning share (80 % by default) and
// 100 % of a cap publishes an event once per period; the once is kept in the
// budget database so a restart does not repeat it. At 100 % a
// non-interactive call fails with a classified error (llm code
// "budget_exceeded"); an interactive call fails the same way unless the
// user's request carried an explicit override.
//
// The override is a capability, not a flag in model-visible data: only code
// holding the Guard can mint one (Guard.Override), the server or CLI mints
// it from the user's own request ("continue over budget" in the UI,
// --over-budget on the command line), and it travels in the Go context of
// that one request. Nothing the model writes — tool arguments, reply text —
// is ever turned into a context value, so the model cannot set it.
package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/store"
)

// CodeExceeded is the llm error code of a refused call. The agent and the
// services switch on llm.CodeOf(err) like on any other model failure.
const CodeExceeded llm.Code = "budget_exceeded"

// ErrExceeded matches (errors.Is) every refusal.
var ErrExceeded = errors.New("model budget exceeded")

// Event types published on the bus.
const (
	EventWarning  = "budget.warning"
	EventExceeded = "budget.exceeded"
	EventOverride = "budget.override_used"
)

// Spend is what the ledger has recorded since some instant.
type Spend struct {
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
}

// Ledger is the part of the usage ledger the guard reads. SpendSince sums
// every recorded model call (chat and embeddings) started at or after
// since.
type Ledger interface {
	SpendSince(ctx context.Context, since time.Time) (Spend, error)
}

// LedgerFunc adapts a function to Ledger.
type LedgerFunc func(ctx context.Context, since time.Time) (Spend, error)

// SpendSince implements Ledger.
func (f LedgerFunc) SpendSince(ctx context.Context, since time.Time) (Spend, error) {
	return f(ctx, since)
}

// Publisher is the event bus (events.Bus implements it).
type Publisher interface {
	Publish(typ, chatID string, data any) int64
}

// Kind says who is waiting on a model call.
type Kind string

// Call kinds. Only KindInteractive may use an override.
const (
	KindInteractive Kind = "interactive" // a user is waiting on this turn
	KindBackground  Kind = "background"  // watches, indexing, distillation
	KindScheduled   Kind = "scheduled"   // scheduler jobs
	KindSubAgent    Kind = "subagent"    // a sub-agent not run on a user's behalf
)

type ctxKey int

const (
	kindKey ctxKey = iota
	overrideKey
)

// WithKind marks the calls made under ctx. Unmarked calls are treated as
// background: failing closed means an unlabelled caller can never use an
// override.
func WithKind(ctx context.Context, k Kind) context.Context {
	return context.WithValue(ctx, kindKey, k)
}

// KindOf returns the kind marked on ctx (KindBackground when none).
func KindOf(ctx context.Context) Kind {
	if k, ok := ctx.Value(kindKey).(Kind); ok && k != "" {
		return k
	}
	return KindBackground
}

// Override lets an interactive request spend past a cap. Its fields are
// unexported: the zero value is invalid and only Guard.Override makes a
// valid one.
type Override struct {
	guard *Guard
	by    string
	at    time.Time
}

// Valid reports whether o was minted by a guard.
func (o Override) Valid() bool { return o.guard != nil }

// WithOverride attaches an override to ctx (the server does this for the
// one request whose user asked to continue over budget).
func WithOverride(ctx context.Context, o Override) context.Context {
	return context.WithValue(ctx, overrideKey, o)
}

func overrideOf(ctx context.Context) (Override, bool) {
	o, ok := ctx.Value(overrideKey).(Override)
	return o, ok && o.Valid()
}

// Options configure a Guard.
type Options struct {
	Config config.BudgetConfig
	Ledger Ledger
	// DB keeps which alerts fired in which period; nil keeps them in
	// memory only (a restart may then repeat an event).
	DB     *store.DB
	Events Publisher
	Log    *slog.Logger
	Now    func() time.Time
}

// Guard decides whether a model call may run. It is safe for concurrent use.
type Guard struct {
	cfgMu  sync.RWMutex // guards cfg (caps can change live)
	cfg    config.BudgetConfig
	ledger Ledger
	db     *store.DB
	pub    Publisher
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex      // guards fired and pub
	fired map[string]bool // alert keys already published (memory copy)
}

// SetEvents installs the event bus when it is built after the guard.
func (g *Guard) SetEvents(p Publisher) {
	g.mu.Lock()
	g.pub = p
	g.mu.Unlock()
}

func (g *Guard) publish(typ string, data any) {
	g.mu.Lock()
	p := g.pub
	g.mu.Unlock()
	if p != nil {
		p.Publish(typ, "", data)
	}
}

// New returns a guard. The ledger is required when any cap is set.
func New(opts Options) (*Guard, error) {
	g := &Guard{cfg: opts.Config, ledger: opts.Ledger, db: opts.DB, pub: opts.Events, log: opts.Log, now: opts.Now, fired: map[string]bool{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.ledger == nil && g.Enabled() {
		return nil, errors.New("budget: caps are configured but no usage ledger was given")
	}
	return g, nil
}

// config returns the caps in force.
func (g *Guard) config() config.BudgetConfig {
	g.cfgMu.RLock()
	defer g.cfgMu.RUnlock()
	return g.cfg
}

// SetConfig replaces the caps of the running guard (Settings applies saved
// budgets without a restart). Turning caps on needs the ledger the guard was
// built with.
func (g *Guard) SetConfig(c config.BudgetConfig) error {
	if g.ledger == nil && (c.DailyCostUSD > 0 || c.MonthlyCostUSD > 0 || c.DailyTokens > 0 || c.MonthlyTokens > 0) {
		return errors.New("budget: caps need a usage ledger, and this guard has none")
	}
	g.cfgMu.Lock()
	g.cfg = c
	g.cfgMu.Unlock()
	return nil
}

// Enabled reports whether any cap is set.
func (g *Guard) Enabled() bool {
	c := g.config()
	return c.DailyCostUSD > 0 || c.MonthlyCostUSD > 0 || c.DailyTokens > 0 || c.MonthlyTokens > 0
}

// Override mints an override for one interactive request. by names who
// asked ("web", "cli") for the log and the event.
func (g *Guard) Override(by string) Override {
	return Override{guard: g, by: by, at: g.now()}
}

// Cap states.
const (
	StateOK       = "ok"
	StateWarning  = "warning"
	StateExceeded = "exceeded"
)

// Cap is one configured cap and where spend stands against it.
type Cap struct {
	Period  string    `json:"period"` // "day" or "month"
	Metric  string    `json:"metric"` // "cost_usd" or "tokens"
	Limit   float64   `json:"limit"`
	Used    float64   `json:"used"`
	Percent float64   `json:"percent"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	Resets  time.Time `json:"resets"`
}

// Status is every configured cap; Caps is empty when none is configured.
type Status struct {
	Enabled     bool  `json:"enabled"`
	WarnPercent int   `json:"warn_percent"`
	Caps        []Cap `json:"caps"`
	Day         Spend `json:"day"`
	Month       Spend `json:"month"`
}

// Exceeded returns the caps at or over 100 %.
func (s Status) Exceeded() []Cap {
	var out []Cap
	for _, c := range s.Caps {
		if c.State == StateExceeded {
			out = append(out, c)
		}
	}
	return out
}

// periods returns the local day and month windows containing now.
func periods(now time.Time) (dayStart, dayEnd, monthStart, monthEnd time.Time) {
	y, m, d := now.Date()
	loc := now.Location()
	dayStart = time.Date(y, m, d, 0, 0, 0, 0, loc)
	dayEnd = dayStart.AddDate(0, 0, 1)
	monthStart = time.Date(y, m, 1, 0, 0, 0, 0, loc)
	monthEnd = monthStart.AddDate(0, 1, 0)
	return
}

// Status reads spend from the ledger and evaluates every cap.
func (g *Guard) Status(ctx context.Context) (Status, error) {
	cfg := g.config()
	st := Status{Enabled: g.Enabled(), WarnPercent: cfg.WarnPercent, Caps: []Cap{}}
	if !st.Enabled {
		return st, nil
	}
	now := g.now()
	ds, de, ms, me := periods(now)
	var err error
	if st.Day, err = g.ledger.SpendSince(ctx, ds); err != nil {
		return st, fmt.Errorf("reading today's model spend: %w", err)
	}
	if st.Month, err = g.ledger.SpendSince(ctx, ms); err != nil {
		return st, fmt.Errorf("reading this month's model spend: %w", err)
	}
	add := func(period, metric string, limit, used float64, since, resets time.Time) {
		if limit <= 0 {
			return
		}
		c := Cap{Period: period, Metric: metric, Limit: limit, Used: used, Since: since, Resets: resets, State: StateOK}
		c.Percent = math.Round(used/limit*1000) / 10
		switch {
		case used >= limit:
			c.State = StateExceeded
		case used >= limit*float64(cfg.WarnPercent)/100:
			c.State = StateWarning
		}
		st.Caps = append(st.Caps, c)
	}
	add("day", "cost_usd", cfg.DailyCostUSD, st.Day.CostUSD, ds, de)
	add("day", "tokens", float64(cfg.DailyTokens), float64(st.Day.Tokens), ds, de)
	add("month", "cost_usd", cfg.MonthlyCostUSD, st.Month.CostUSD, ms, me)
	add("month", "tokens", float64(cfg.MonthlyTokens), float64(st.Month.Tokens), ms, me)
	return st, nil
}

// Call names the model call being checked, for errors, logs and events.
type Call struct {
	Service string
	Action  string
}

// ExceededError is the cause inside the *llm.Error of a refusal.
type ExceededError struct {
	Kind Kind
	Caps []Cap
}

func (e *ExceededError) Error() string { return ErrExceeded.Error() }

// Is makes errors.Is(err, ErrExceeded) true.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

func describe(c Cap) string {
	if c.Metric == "cost_usd" {
		return fmt.Sprintf("the %s cap of $%.2f (spent $%.2f)", periodWord(c.Period), c.Limit, c.Used)
	}
	return fmt.Sprintf("the %s cap of %.0f tokens (used %.0f)", periodWord(c.Period), c.Limit, c.Used)
}

func periodWord(p string) string {
	if p == "day" {
		return "daily"
	}
	return "monthly"
}

// Check decides whether a call may run now and publishes crossing events.
// It returns nil, or an *llm.Error with Code CodeExceeded whose Message is
// safe to show the user. If the ledger cannot be read the call is refused
// too: a cap that silently stops working is no cap.
func (g *Guard) Check(ctx context.Context, call Call) error {
	if !g.Enabled() {
		return nil
	}
	st, err := g.Status(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &llm.Error{Code: CodeExceeded, Message: "Model spend cannot be checked against the configured budget, so the call was not made: " + err.Error(), Err: err}
	}
	g.alert(ctx, st)
	over := st.Exceeded()
	if len(over) == 0 {
		return nil
	}
	kind := KindOf(ctx)
	if o, ok := overrideOf(ctx); ok && kind == KindInteractive && o.guard == g {
		g.log.Info("budget override used", "by", o.by, "service", call.Service, "action", call.Action)
		g.publish(EventOverride, map[string]any{"by": o.by, "service": call.Service, "action": call.Action, "caps": over})
		return nil
	}
	msg := "Model budget reached: " + describe(over[0]) + "."
	if kind == KindInteractive {
		msg += " Continue over budget explicitly (the override in the chat, or --over-budget) or raise the cap in [budget]."
	} else {
		msg += fmt.Sprintf(" %s model calls stop until the cap resets at %s or is raised in [budget].", kindWord(kind), over[0].Resets.Format("2006-01-02 15:04"))
	}
	return &llm.Error{Code: CodeExceeded, Message: msg, Err: &ExceededError{Kind: kind, Caps: over}}
}

func kindWord(k Kind) string {
	switch k {
	case KindScheduled:
		return "Scheduled"
	case KindSubAgent:
		return "Sub-agent"
	}
	return "Background"
}

// Observe re-evaluates after a call finished so the crossing event fires
// as soon as the ledger shows it, not only at the next call.
func (g *Guard) Observe(ctx context.Context) {
	if !g.Enabled() {
		return
	}
	st, err := g.Status(ctx)
	if err != nil {
		g.log.Warn("reading model spend after a call", "err", err)
		return
	}
	g.alert(ctx, st)
}

// alert publishes warning and exceeded events once per cap and period.
func (g *Guard) alert(ctx context.Context, st Status) {
	for _, c := range st.Caps {
		levels := []struct {
			name string
			typ  string
			hit  bool
		}{
			{"warning", EventWarning, c.State == StateWarning || c.State == StateExceeded},
			{"exceeded", EventExceeded, c.State == StateExceeded},
		}
		for _, l := range levels {
			if !l.hit {
				continue
			}
			key := fmt.Sprintf("%s/%s/%s/%s", c.Period, c.Since.Format("2006-01-02"), c.Metric, l.name)
			if !g.firstTime(ctx, key) {
				continue
			}
			g.log.Warn("model budget "+l.name, "period", c.Period, "metric", c.Metric, "limit", c.Limit, "used", c.Used)
			g.publish(l.typ, c)
		}
	}
}

// firstTime records key and reports whether it was new.
func (g *Guard) firstTime(ctx context.Context, key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fired[key] {
		return false
	}
	if g.db != nil {
		res, err := g.db.ExecContext(ctx, `INSERT OR IGNORE INTO alerts(key, fired_at) VALUES (?, ?)`, key, g.now().UTC().Format(time.RFC3339Nano))
		if err != nil {
			// Better a repeated event than a lost one.
			g.log.Warn("recording budget alert", "err", err)
		} else if n, _ := res.RowsAffected(); n == 0 {
			g.fired[key] = true
			return false
		}
	}
	g.fired[key] = true
	return true
}

// Schema is the budget database: which alerts fired.
var Schema = store.Schema{
	Name: "budget",
	Migrations: []string{
		`CREATE TABLE alerts (
			key      TEXT PRIMARY KEY, -- period/start/metric/level
			fired_at TEXT NOT NULL
		) STRICT;`,
	},
}
