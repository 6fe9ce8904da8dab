package budget

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/store"
)

type fakeLedger struct {
	mu    sync.Mutex
	calls []struct {
		at    time.Time
		spend Spend
	}
	err error
}

func (l *fakeLedger) add(at time.Time, cost float64, tokens int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, struct {
		at    time.Time
		spend Spend
	}{at, Spend{cost, tokens}})
}

func (l *fakeLedger) SpendSince(_ context.Context, since time.Time) (Spend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return Spend{}, l.err
	}
	var s Spend
	for _, c := range l.calls {
		if !c.at.Before(since) {
			s.CostUSD += c.spend.CostUSD
			s.Tokens += c.spend.Tokens
		}
	}
	return s, nil
}

type fakeBus struct {
	mu     sync.Mutex
	events []string
}

func (b *fakeBus) Publish(typ, _ string, data any) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := data.(Cap); ok {
		typ += ":" + c.Period + "/" + c.Metric
	}
	b.events = append(b.events, typ)
	return int64(len(b.events))
}

func (b *fakeBus) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.events
	b.events = nil
	return out
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

var loc = time.FixedZone("test", 2*3600)

func setup(t *testing.T, cfg config.BudgetConfig, db *store.DB) (*Guard, *fakeLedger, *fakeBus, *clock) {
	t.Helper()
	if cfg.WarnPercent == 0 {
		cfg.WarnPercent = 80
	}
	l, b := &fakeLedger{}, &fakeBus{}
	c := &clock{t: time.Date(2026, 3, 15, 10, 0, 0, 0, loc)}
	g, err := New(Options{Config: cfg, Ledger: l, DB: db, Events: b, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	return g, l, b, c
}

func openDB(t *testing.T, dir string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "budget.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func eq(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestNoCaps(t *testing.T) {
	t.Parallel()
	g, err := New(Options{Config: config.BudgetConfig{WarnPercent: 80}})
	if err != nil {
		t.Fatal(err)
	}
	if g.Enabled() || g.Check(context.Background(), Call{}) != nil {
		t.Fatal("a guard without caps must allow everything")
	}
	st, err := g.Status(context.Background())
	if err != nil || st.Enabled || len(st.Caps) != 0 {
		t.Fatalf("status %+v %v", st, err)
	}
	if _, err := New(Options{Config: config.BudgetConfig{DailyTokens: 10}}); err == nil || !strings.Contains(err.Error(), "ledger") {
		t.Fatalf("caps without a ledger: err = %v", err)
	}
}

func TestCrossingAndRefusal(t *testing.T) {
	t.Parallel()
	g, l, bus, c := setup(t, config.BudgetConfig{DailyCostUSD: 1, MonthlyCostUSD: 10, DailyTokens: 1000}, nil)
	ctx := context.Background()
	now := c.now()
	l.add(now.Add(-time.Hour), 0.5, 100)
	if err := g.Check(ctx, Call{}); err != nil {
		t.Fatalf("50%%: %v", err)
	}
	if ev := bus.take(); len(ev) != 0 {
		t.Fatalf("events below warning: %v", ev)
	}
	l.add(now, 0.3, 100) // 80 % of the daily cost cap
	if err := g.Check(ctx, Call{}); err != nil {
		t.Fatalf("80%%: %v", err)
	}
	if ev := bus.take(); !eq(ev, []string{"budget.warning:day/cost_usd"}) {
		t.Fatalf("events at 80%%: %v", ev)
	}
	if err := g.Check(ctx, Call{}); err != nil || len(bus.take()) != 0 {
		t.Fatal("a warning fires once per period")
	}
	l.add(now, 0.2, 900) // cost 100 %, tokens 110 %
	err := g.Check(ctx, Call{Service: "watch", Action: "poll"})
	if !errors.Is(err, ErrExceeded) || llm.CodeOf(err) != CodeExceeded {
		t.Fatalf("at 100%%: err = %v (code %q)", err, llm.CodeOf(err))
	}
	var le *llm.Error
	errors.As(err, &le)
	if !strings.Contains(le.Message, "daily cap of $1.00 (spent $1.00)") || !strings.Contains(le.Message, "Background model calls stop") {
		t.Fatalf("message %q", le.Message)
	}
	var xe *ExceededError
	if !errors.As(err, &xe) || xe.Kind != KindBackground || len(xe.Caps) != 2 {
		t.Fatalf("cause %+v", xe)
	}
	if ev := bus.take(); !eq(ev, []string{"budget.exceeded:day/cost_usd", "budget.warning:day/tokens", "budget.exceeded:day/tokens"}) {
		t.Fatalf("events at 100%%: %v", ev)
	}
	if g.Check(ctx, Call{}) == nil || len(bus.take()) != 0 {
		t.Fatal("still refused, no repeated events")
	}

	st, err := g.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Caps) != 3 || st.Caps[0].State != StateExceeded || st.Caps[0].Percent != 100 || st.Caps[2].State != StateOK || st.Caps[2].Percent != 10 {
		t.Fatalf("status %+v", st.Caps)
	}
	if !st.Caps[0].Resets.Equal(time.Date(2026, 3, 16, 0, 0, 0, 0, loc)) || !st.Caps[2].Resets.Equal(time.Date(2026, 4, 1, 0, 0, 0, 0, loc)) {
		t.Fatalf("resets %v %v", st.Caps[0].Resets, st.Caps[2].Resets)
	}

	// Next day: daily caps start over, the monthly one still has room.
	c.set(time.Date(2026, 3, 16, 0, 0, 1, 0, loc))
	if err := g.Check(ctx, Call{}); err != nil {
		t.Fatalf("next day: %v", err)
	}
	l.add(c.now(), 0.9, 0)
	if g.Check(ctx, Call{}); !eq(bus.take(), []string{"budget.warning:day/cost_usd"}) {
		t.Fatal("the warning fires again in a new period")
	}
}

func TestKindsAndOverride(t *testing.T) {
	t.Parallel()
	g, l, bus, c := setup(t, config.BudgetConfig{MonthlyTokens: 100}, nil)
	l.add(c.now(), 0, 100)
	base := context.Background()
	other, _, _, _ := setup(t, config.BudgetConfig{MonthlyTokens: 100}, nil)
	cases := []struct {
		name  string
		ctx   context.Context
		allow bool
		msg   string
	}{
		{"unmarked is background", base, false, "Background model calls stop"},
		{"scheduled", WithKind(base, KindScheduled), false, "Scheduled model calls stop"},
		{"subagent", WithKind(base, KindSubAgent), false, "Sub-agent model calls stop"},
		{"interactive without override", WithKind(base, KindInteractive), false, "--over-budget"},
		{"interactive with override", WithOverride(WithKind(base, KindInteractive), g.Override("cli")), true, ""},
		{"background with override", WithOverride(WithKind(base, KindBackground), g.Override("cli")), false, "Background"},
		{"scheduled with override", WithOverride(WithKind(base, KindScheduled), g.Override("web")), false, "Scheduled"},
		{"zero override", WithOverride(WithKind(base, KindInteractive), Override{}), false, "--over-budget"},
		{"override of another guard", WithOverride(WithKind(base, KindInteractive), other.Override("web")), false, "--over-budget"},
		//lint:ignore SA1029 the point: a plain string key from elsewhere must not count as an override
		{"raw value under a foreign key", context.WithValue(WithKind(base, KindInteractive), "budget_override", true), false, "--over-budget"},
	}
	for _, tc := range cases {
		err := g.Check(tc.ctx, Call{Service: "agent", Action: "chat-turn"})
		if tc.allow {
			if err != nil {
				t.Errorf("%s: refused: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrExceeded) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want a refusal mentioning %q", tc.name, err, tc.msg)
		}
	}
	ev := bus.take()
	if !eq(ev, []string{"budget.warning:month/tokens", "budget.exceeded:month/tokens", EventOverride}) {
		t.Fatalf("events %v", ev)
	}
	if (Override{}).Valid() || !g.Override("x").Valid() {
		t.Fatal("Valid")
	}
}

func TestLedgerFailureRefuses(t *testing.T) {
	t.Parallel()
	g, l, _, _ := setup(t, config.BudgetConfig{DailyTokens: 10}, nil)
	l.err = errors.New("disk I/O error")
	err := g.Check(context.Background(), Call{})
	if llm.CodeOf(err) != CodeExceeded || !strings.Contains(err.Error(), "disk I/O error") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l.err = ctx.Err()
	if err := g.Check(ctx, Call{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
}

func TestAlertsPersistAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openDB(t, dir)
	cfg := config.BudgetConfig{DailyCostUSD: 1}
	g, l, bus, c := setup(t, cfg, db)
	l.add(c.now(), 2, 0)
	g.Check(context.Background(), Call{})
	if n := len(bus.take()); n != 2 {
		t.Fatalf("%d events, want warning+exceeded", n)
	}
	// A second guard over the same database (a restart) stays quiet.
	bus2 := &fakeBus{}
	g2, err := New(Options{Config: config.BudgetConfig{DailyCostUSD: 1, WarnPercent: 80}, Ledger: l, DB: db, Events: bus2, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if g2.Check(context.Background(), Call{}) == nil {
		t.Fatal("still over the cap")
	}
	if ev := bus2.take(); len(ev) != 0 {
		t.Fatalf("restart repeated events: %v", ev)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM alerts`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("alerts rows %d %v", n, err)
	}
}

type fakeClient struct {
	calls int
	after func()
}

func (f *fakeClient) Stream(_ context.Context, req llm.Request, fn func(llm.Event) error) (llm.Response, error) {
	f.calls++
	if f.after != nil {
		f.after()
	}
	return llm.Response{Text: "hi", Tier: req.Tier}, fn(llm.Event{Kind: llm.EventDone})
}

func (f *fakeClient) Complete(_ context.Context, req llm.Request) (llm.Response, error) {
	f.calls++
	if f.after != nil {
		f.after()
	}
	return llm.Response{Text: "hi"}, nil
}

func (f *fakeClient) Embed(context.Context, llm.EmbedRequest) (llm.EmbedResponse, error) {
	f.calls++
	return llm.EmbedResponse{Dimension: 3}, nil
}

func TestClientWrapper(t *testing.T) {
	t.Parallel()
	g, l, bus, c := setup(t, config.BudgetConfig{DailyTokens: 1000}, nil)
	inner := &fakeClient{after: func() { l.add(c.now(), 0, 850) }}
	cl := &Client{Inner: inner, Guard: g}
	ctx := context.Background()
	resp, err := cl.Stream(ctx, llm.Request{Tier: llm.Tier3}, func(llm.Event) error { return nil })
	if err != nil || resp.Text != "hi" || inner.calls != 1 {
		t.Fatalf("allowed call: %v %+v", err, resp)
	}
	if ev := bus.take(); !eq(ev, []string{"budget.warning:day/tokens"}) {
		t.Fatalf("Observe did not publish the crossing right after the call: %v", ev)
	}
	if _, err := cl.Complete(ctx, llm.Request{}); err != nil || inner.calls != 2 {
		t.Fatalf("second call: %v", err)
	}
	// Now 1700 tokens: refused before reaching the provider.
	resp, err = cl.Stream(ctx, llm.Request{Tier: llm.Tier5}, func(llm.Event) error { t.Fatal("no events on refusal"); return nil })
	if !errors.Is(err, ErrExceeded) || inner.calls != 2 || resp.Tier != llm.Tier5 {
		t.Fatalf("refused stream: %v calls=%d", err, inner.calls)
	}
	if _, err := cl.Complete(ctx, llm.Request{}); !errors.Is(err, ErrExceeded) || inner.calls != 2 {
		t.Fatalf("refused complete: %v", err)
	}
	emb := &Embedder{Inner: inner, Guard: g}
	if _, err := emb.Embed(ctx, llm.EmbedRequest{Tier: llm.Tier3}); !errors.Is(err, ErrExceeded) || inner.calls != 2 {
		t.Fatalf("refused embed: %v", err)
	}
	if _, err := emb.Embed(ctx, llm.EmbedRequest{Tier: llm.LocalEmbed}); err != nil || inner.calls != 3 {
		t.Fatalf("local embeddings must keep working over budget: %v", err)
	}
	inner.calls = 2
	ov := WithOverride(WithKind(ctx, KindInteractive), g.Override("web"))
	if _, err := cl.Stream(ov, llm.Request{}, func(llm.Event) error { return nil }); err != nil || inner.calls != 3 {
		t.Fatalf("override: %v", err)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	g, l, _, c := setup(t, config.BudgetConfig{DailyCostUSD: 2}, nil)
	l.add(c.now(), 1.7, 10)
	mux := http.NewServeMux()
	g.Routes(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/budget", nil))
	var st Status
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &st) != nil {
		t.Fatalf("GET /api/budget: %d %s", rec.Code, rec.Body)
	}
	if !st.Enabled || len(st.Caps) != 1 || st.Caps[0].State != StateWarning || st.Caps[0].Percent != 85 || st.Day.Tokens != 10 {
		t.Fatalf("status %+v", st)
	}
	l.err = errors.New("database is locked")
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/budget", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), "database is locked") {
		t.Fatalf("ledger failure: %d %s", rec.Code, rec.Body)
	}
}
