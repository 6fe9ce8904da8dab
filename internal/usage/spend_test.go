package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

func TestSpendSince(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	ctx := context.Background()
	for _, rec := range []llm.CallRecord{
		{Start: now.Add(-time.Hour), Service: "agent", Provider: "x", Model: "paid", Usage: llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000}, Outcome: "ok"},
		{Start: now.Add(-2 * time.Hour), Service: "watch", Provider: "y", Model: "cheap-1", Usage: llm.Usage{InputTokens: 500_000, CacheReadTokens: 10}, Outcome: "rate_limited"},
		{Start: now.Add(-48 * time.Hour), Service: "agent", Provider: "x", Model: "paid", Usage: llm.Usage{InputTokens: 1_000_000}, Outcome: "ok"},
		{Start: now.Add(-30 * time.Minute), Kind: "embed", Provider: "ollama", Model: "nomic", Usage: llm.Usage{InputTokens: 99}, Outcome: "ok"},
	} {
		if err := l.AddCall(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	s, err := l.SpendSince(ctx, now.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// paid: 2 + 1 = 3 USD; cheap-1: 0.5 USD; ollama free.
	if !near(s.CostUSD, 3.5) || s.Tokens != 1_600_109 {
		t.Fatalf("spend %+v", s)
	}
	if s, _ := l.SpendSince(ctx, now.Add(time.Hour)); s.CostUSD != 0 || s.Tokens != 0 {
		t.Fatalf("future window: %+v", s)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.SpendSince(cctx, now); err == nil {
		t.Fatal("cancelled context: no error")
	}
}

// The built-in offline embedder's calls are local work: shown apart, never
// priced, and left out of totals and of what budgets count.
func TestLocalWorkIsNotBillable(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	ctx := context.Background()
	for _, rec := range []llm.CallRecord{
		{Start: now.Add(-time.Hour), Service: "agent", Provider: "x", Model: "paid", Usage: llm.Usage{InputTokens: 1_000_000}, Outcome: "ok"},
		{Start: now.Add(-time.Minute), Kind: "embed", Service: "mail", Action: "embed", Provider: "local", Model: llm.LocalEmbedModel, Usage: llm.Usage{InputTokens: 400_000}, Outcome: "ok"},
		{Start: now.Add(-2 * time.Minute), Kind: "embed", Service: "wiki", Action: "embed", Provider: "local", Model: llm.LocalEmbedModel, Usage: llm.Usage{InputTokens: 26_000}, Outcome: "ok"},
	} {
		if err := l.AddCall(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	s, err := l.SpendSince(ctx, now.Add(-24*time.Hour))
	if err != nil || !near(s.CostUSD, 2) || s.Tokens != 1_000_000 {
		t.Fatalf("budget spend counts local work: %+v %v", s, err)
	}
	sum, err := l.Summary(ctx, usage.Period7d)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Totals.Requests != 1 || sum.Totals.Tokens != 1_000_000 || sum.Local.Requests != 2 || sum.Local.Tokens != 426_000 || sum.Local.Cost != 0 {
		t.Fatalf("totals %+v, local %+v", sum.Totals, sum.Local)
	}
	for _, g := range sum.ByModel {
		if g.Key == "local/"+llm.LocalEmbedModel {
			t.Errorf("local work in the by-model breakdown: %+v", g)
		}
	}
}
