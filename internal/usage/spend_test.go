package usage_test

import (
	"context"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
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
