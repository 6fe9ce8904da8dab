package usage_test

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/usage"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func newLedger(t *testing.T) *usage.Ledger {
	t.Helper()
	return newLedgerRates(t, []usage.Rate{
		{Model: "paid", Input: 2, Output: 10, CacheRead: 0.5, CacheWrite: 4},
		{Model: "cheap*", Input: 1, Output: 1},
		{Provider: "ollama", Model: "*"},
	})
}

func newLedgerRates(t *testing.T, rates []usage.Rate) *usage.Ledger {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "usage.db"), usage.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return usage.New(db, nil, func() time.Time { return now }, rates)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLedgerArithmetic(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	ctx := context.Background()
	day := 24 * time.Hour
	calls := []llm.CallRecord{
		// 1M input + 100k output + 200k cache read + 50k cache write on "paid":
		// 2 + 1 + 0.1 + 0.2 = 3.3 USD.
		{Start: now.Add(-time.Hour), Service: "agent", Action: "chat-turn", Tier: llm.Tier5, Provider: "x", Model: "paid",
			Usage: llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 200_000, CacheWriteTokens: 50_000, ReasoningTokens: 30_000}, Outcome: "ok", Attempts: 1},
		// cheap-2 via prefix: 500k in + 500k out = 1.0 USD, two days ago.
		{Start: now.Add(-2 * day), Service: "mail", Action: "triage", Provider: "y", Model: "cheap-2", Usage: llm.Usage{InputTokens: 500_000, OutputTokens: 500_000}, Outcome: "ok"},
		// Unlabelled, failed, local model: free, counted as unknown and as an error.
		{Start: now.Add(-3 * day), Provider: "ollama", Model: "qwen3", Usage: llm.Usage{InputTokens: 10}, Outcome: "rate_limited"},
		// Unpriced model: tokens counted, cost 0, flagged.
		{Start: now.Add(-4 * day), Service: "agent", Action: "chat-turn", Provider: "z", Model: "mystery", Usage: llm.Usage{OutputTokens: 7}, Outcome: "ok"},
		// Outside 7d, inside 30d.
		{Start: now.Add(-10 * day), Service: "agent", Action: "chat-turn", Provider: "x", Model: "paid", Usage: llm.Usage{InputTokens: 1_000_000}, Outcome: "ok"},
	}
	for _, c := range calls {
		if err := l.AddCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []usage.ToolCall{
		{Tool: "mail.search", Duration: 100 * time.Millisecond},
		{Tool: "mail.search", Duration: 300 * time.Millisecond, Error: "imap down"},
		{Tool: "files.read", Duration: 5 * time.Millisecond, Outcome: "denied"},
	} {
		if err := l.RecordTool(ctx, tc); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RecordTool(ctx, usage.ToolCall{}); err == nil || !strings.Contains(err.Error(), "tool name") {
		t.Fatalf("empty tool accepted: %v", err)
	}

	s, err := l.Summary(ctx, usage.Period7d)
	if err != nil {
		t.Fatal(err)
	}
	if s.Totals.Requests != 4 || s.Totals.Errors != 1 || !near(s.Totals.Cost, 4.3) {
		t.Fatalf("totals %+v", s.Totals)
	}
	if s.Totals.InputTokens != 1_500_010 || s.Totals.OutputTokens != 600_007 || s.Totals.ReasoningTokens != 30_000 || s.Totals.Tokens != 1_500_010+600_007+200_000+50_000 {
		t.Fatalf("token totals %+v", s.Totals)
	}
	if s.UnattributedRequests != 1 {
		t.Fatalf("unattributed %d", s.UnattributedRequests)
	}
	if s.ByService[0].Key != "agent" || !near(s.ByService[0].Cost, 3.3) || s.ByService[0].Requests != 2 {
		t.Fatalf("by service %+v", s.ByService)
	}
	var sawUnknown bool
	for _, g := range s.ByService {
		sawUnknown = sawUnknown || (g.Key == "unknown" && g.Requests == 1)
	}
	if !sawUnknown {
		t.Fatalf("unknown service missing: %+v", s.ByService)
	}
	if s.ByAction[0].Key != "chat-turn" || s.ByAction[0].Service != "agent" || s.ByAction[1].Key != "triage" {
		t.Fatalf("by action %+v", s.ByAction)
	}
	if len(s.ByDay) != 4 || s.ByDay[3].Key != "2026-12-02" || !near(s.ByDay[3].Cost, 3.3) || s.ByDay[0].Key != "2026-11-28" {
		t.Fatalf("by day %+v", s.ByDay)
	}
	var mystery *usage.Group
	for i, g := range s.ByModel {
		if g.Key == "z/mystery" {
			mystery = &s.ByModel[i]
		}
		if g.Key == "ollama/qwen3" && g.Unpriced {
			t.Error("ollama wildcard rate not applied")
		}
	}
	if s.ByModel[0].Key != "x/paid" || mystery == nil || !mystery.Unpriced || mystery.Cost != 0 {
		t.Fatalf("by model %+v", s.ByModel)
	}
	wantTypes := map[string][2]float64{"input": {1_500_010, 2.5}, "output": {600_007, 1.5}, "cache_read": {200_000, 0.1}, "cache_write": {50_000, 0.2}}
	for _, tt := range s.ByTokenType {
		w := wantTypes[tt.Type]
		if float64(tt.Tokens) != w[0] || !near(tt.Cost, w[1]) {
			t.Errorf("token type %s: %+v want %v", tt.Type, tt, w)
		}
	}
	if len(s.Tools) != 2 || s.Tools[0].Tool != "mail.search" || s.Tools[0].Calls != 2 || s.Tools[0].Errors != 1 || s.Tools[0].AvgMS != 200 || s.Tools[0].MaxMS != 300 || s.Tools[0].TotalMS != 400 || s.Tools[1].Errors != 1 {
		t.Fatalf("tools %+v", s.Tools)
	}
	if len(s.Recent) != 4 || s.Recent[0].Model != "paid" || !near(s.Recent[0].Cost, 3.3) {
		t.Fatalf("recent %+v", s.Recent)
	}

	s30, err := l.Summary(ctx, usage.Period30d)
	if err != nil || s30.Totals.Requests != 5 || !near(s30.Totals.Cost, 6.3) {
		t.Fatalf("30d %+v %v", s30.Totals, err)
	}
	all, err := l.Summary(ctx, usage.PeriodAll)
	if err != nil || all.Totals.Requests != 5 || !all.From.IsZero() {
		t.Fatalf("all %+v %v", all.Totals, err)
	}
}

func TestRecordCallFromRouter(t *testing.T) {
	t.Parallel()
	l := newLedgerRates(t, nil) // the default table prices the local embedder at 0
	r, err := llm.NewRouter(llm.RouterConfig{Recorder: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Embed(context.Background(), llm.EmbedRequest{Inputs: []string{"a b c"}}); err != nil {
		t.Fatal(err)
	}
	s, err := l.Summary(context.Background(), usage.PeriodAll)
	// The router records the offline embedder's call; the summary shows it
	// as local work, apart from billable requests.
	if err != nil || s.Totals.Requests != 0 || s.Local.Requests != 1 || len(s.ByService) != 0 || s.Recent[0].Model != llm.LocalEmbedModel {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestUsageHandler(t *testing.T) {
	t.Parallel()
	l := newLedger(t)
	mux := http.NewServeMux()
	l.Routes(mux)
	for _, tc := range []struct {
		query  string
		status int
		want   string
	}{
		{"", 200, `"period":"7d"`},
		{"?period=30d", 200, `"period":"30d"`},
		{"?period=all", 200, `"by_token_type"`},
		{"?period=1y", 400, `period \"1y\" is not one of 7d, 30d, all`},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/api/usage"+tc.query, nil))
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %s", tc.query, rec.Code, rec.Body)
		}
		if tc.status == 200 {
			var s usage.Summary
			if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil || s.ByService == nil || s.Tools == nil {
				t.Errorf("%s: body %s (%v): empty breakdowns must be [] not null", tc.query, rec.Body, err)
			}
		}
	}
}
