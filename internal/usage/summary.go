package usage

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Period selects the summary window.
type Period string

// Periods accepted by Summary and GET /api/usage.
const (
	Period7d  Period = "7d"
	Period30d Period = "30d"
	PeriodAll Period = "all"
)

// ParsePeriod validates a period string ("" means 7d).
func ParsePeriod(s string) (Period, error) {
	switch Period(s) {
	case "":
		return Period7d, nil
	case Period7d, Period30d, PeriodAll:
		return Period(s), nil
	}
	return "", fmt.Errorf("period %q is not one of 7d, 30d, all", s)
}

// Totals are the sums for a group of model calls.
type Totals struct {
	Requests         int64   `json:"requests"`
	Errors           int64   `json:"errors"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	Tokens           int64   `json:"tokens"` // input + output + cache read + cache write
	Cost             float64 `json:"cost"`
}

func (t *Totals) add(o Totals) {
	t.Requests += o.Requests
	t.Errors += o.Errors
	t.InputTokens += o.InputTokens
	t.OutputTokens += o.OutputTokens
	t.CacheReadTokens += o.CacheReadTokens
	t.CacheWriteTokens += o.CacheWriteTokens
	t.ReasoningTokens += o.ReasoningTokens
	t.Tokens += o.Tokens
	t.Cost += o.Cost
}

// Group is one row of a breakdown.
type Group struct {
	Key string `json:"key"`
	// Service is set in the by-action breakdown (actions are per service).
	Service string `json:"service,omitempty"`
	// Unpriced is set in the by-model breakdown when no rate matched.
	Unpriced bool `json:"unpriced,omitempty"`
	Totals
}

// TokenType is one row of the by-token-type breakdown.
type TokenType struct {
	Type   string  `json:"type"` // input, output, cache_read, cache_write
	Tokens int64   `json:"tokens"`
	Cost   float64 `json:"cost"`
}

// ToolStats summarises one tool's calls.
type ToolStats struct {
	Tool    string  `json:"tool"`
	Calls   int64   `json:"calls"`
	Errors  int64   `json:"errors"`
	AvgMS   float64 `json:"avg_ms"`
	MaxMS   int64   `json:"max_ms"`
	TotalMS int64   `json:"total_ms"`
}

// Call is one recent model call.
type Call struct {
	At       time.Time `json:"at"`
	Service  string    `json:"service"`
	Action   string    `json:"action"`
	Tier     string    `json:"tier"`
	Provider string    `json:"provider"`
	Model    string    `json:"model"`
	Tokens   int64     `json:"tokens"`
	Cost     float64   `json:"cost"`
	Duration int64     `json:"duration_ms"`
	Outcome  string    `json:"outcome"`
}

// Summary is the body of GET /api/usage.
type Summary struct {
	Period   Period    `json:"period"`
	From     time.Time `json:"from,omitzero"` // zero for "all"
	To       time.Time `json:"to"`
	Currency string    `json:"currency"`
	// Estimate reminds readers that costs come from the rates table.
	Estimate bool   `json:"estimate"`
	Totals   Totals `json:"totals"`
	// Local counts the built-in offline embedder's calls: work done on
	// this machine, never priced and kept out of Totals, the breakdowns
	// and budgets (SpendSince), so "requests" means billable requests.
	Local Totals `json:"local"`
	// UnattributedRequests counts calls recorded with service "unknown":
	// spend nobody labelled is shown, never dropped.
	UnattributedRequests int64       `json:"unattributed_requests"`
	ByService            []Group     `json:"by_service"`
	ByAction             []Group     `json:"by_action"`
	ByDay                []Group     `json:"by_day"` // UTC days, oldest first
	ByModel              []Group     `json:"by_model"`
	ByTokenType          []TokenType `json:"by_token_type"`
	Tools                []ToolStats `json:"tools"`
	Recent               []Call      `json:"recent"`
}

// recentLimit bounds Summary.Recent.
const recentLimit = 20

// Summary computes totals and breakdowns for the period.
func (l *Ledger) Summary(ctx context.Context, period Period) (Summary, error) {
	now := l.now()
	s := Summary{Period: period, To: now.UTC(), Currency: "USD", Estimate: true}
	var since int64
	switch period {
	case Period7d:
		s.From = now.Add(-7 * 24 * time.Hour).UTC()
	case Period30d:
		s.From = now.Add(-30 * 24 * time.Hour).UTC()
	case PeriodAll:
	default:
		return s, fmt.Errorf("period %q is not one of 7d, 30d, all", period)
	}
	if !s.From.IsZero() {
		since = s.From.UnixMilli()
	}
	// Aggregate in SQL by every dimension at once (a small result: one row
	// per day × service × action × model), then price and roll up in Go,
	// because the rate depends on the model.
	rows, err := l.db.QueryContext(ctx, `SELECT strftime('%Y-%m-%d', at_ms/1000, 'unixepoch'), service, action, provider, model,
		COUNT(*), SUM(outcome NOT IN ('ok','canceled')), SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens), SUM(reasoning_tokens)
		FROM llm_calls WHERE at_ms >= ? GROUP BY 1,2,3,4,5`, since)
	if err != nil {
		return s, fmt.Errorf("summarising usage: %w", err)
	}
	defer rows.Close()
	byService, byAction, byDay, byModel := map[string]*Group{}, map[string]*Group{}, map[string]*Group{}, map[string]*Group{}
	tokenCost := map[string]*TokenType{}
	for _, name := range []string{"input", "output", "cache_read", "cache_write"} {
		tokenCost[name] = &TokenType{Type: name}
	}
	get := func(m map[string]*Group, key string) *Group {
		g, ok := m[key]
		if !ok {
			g = &Group{Key: key}
			m[key] = g
		}
		return g
	}
	for rows.Next() {
		var day, service, action, provider, model string
		var t Totals
		if err := rows.Scan(&day, &service, &action, &provider, &model, &t.Requests, &t.Errors, &t.InputTokens, &t.OutputTokens, &t.CacheReadTokens, &t.CacheWriteTokens, &t.ReasoningTokens); err != nil {
			return s, fmt.Errorf("reading usage summary: %w", err)
		}
		if provider == llm.LocalProvider {
			t.Tokens = t.InputTokens + t.OutputTokens + t.CacheReadTokens + t.CacheWriteTokens
			s.Local.add(t)
			continue
		}
		rate, priced := lookup(l.rates, provider, model)
		ci, co, cr, cw := rate.cost(t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens)
		t.Cost = ci + co + cr + cw
		t.Tokens = t.InputTokens + t.OutputTokens + t.CacheReadTokens + t.CacheWriteTokens
		s.Totals.add(t)
		if service == "unknown" {
			s.UnattributedRequests += t.Requests
		}
		get(byService, service).add(t)
		ag := get(byAction, service+"\x00"+action)
		ag.Service = service
		ag.add(t)
		get(byDay, day).add(t)
		mk := model
		if provider != "" {
			mk = provider + "/" + model
		}
		mg := get(byModel, mk)
		mg.Unpriced = !priced
		mg.add(t)
		for name, v := range map[string][2]float64{
			"input": {float64(t.InputTokens), ci}, "output": {float64(t.OutputTokens), co},
			"cache_read": {float64(t.CacheReadTokens), cr}, "cache_write": {float64(t.CacheWriteTokens), cw},
		} {
			tokenCost[name].Tokens += int64(v[0])
			tokenCost[name].Cost += v[1]
		}
	}
	if err := rows.Err(); err != nil {
		return s, fmt.Errorf("reading usage summary: %w", err)
	}
	s.ByService = sortedByCost(byService)
	s.ByAction = sortedByCost(byAction)
	for i := range s.ByAction {
		_, s.ByAction[i].Key, _ = cutNull(s.ByAction[i].Key)
	}
	s.ByModel = sortedByCost(byModel)
	s.ByDay = make([]Group, 0, len(byDay))
	for _, g := range byDay {
		s.ByDay = append(s.ByDay, *g)
	}
	sort.Slice(s.ByDay, func(i, j int) bool { return s.ByDay[i].Key < s.ByDay[j].Key })
	for _, name := range []string{"input", "output", "cache_read", "cache_write"} {
		s.ByTokenType = append(s.ByTokenType, *tokenCost[name])
	}
	if s.Tools, err = l.toolStats(ctx, since); err != nil {
		return s, err
	}
	if s.Recent, err = l.recent(ctx, since); err != nil {
		return s, err
	}
	return s, nil
}

func cutNull(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return "", s, false
}

func sortedByCost(m map[string]*Group) []Group {
	out := make([]Group, 0, len(m))
	for _, g := range m {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cost != out[j].Cost {
			return out[i].Cost > out[j].Cost
		}
		if out[i].Tokens != out[j].Tokens {
			return out[i].Tokens > out[j].Tokens
		}
		return out[i].Key < out[j].Key
	})
	return out
}

func (l *Ledger) toolStats(ctx context.Context, since int64) ([]ToolStats, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT tool, COUNT(*), SUM(outcome != 'ok'), SUM(duration_ms), MAX(duration_ms)
		FROM tool_calls WHERE at_ms >= ? GROUP BY tool ORDER BY COUNT(*) DESC, tool`, since)
	if err != nil {
		return nil, fmt.Errorf("summarising tool usage: %w", err)
	}
	defer rows.Close()
	out := []ToolStats{}
	for rows.Next() {
		var t ToolStats
		if err := rows.Scan(&t.Tool, &t.Calls, &t.Errors, &t.TotalMS, &t.MaxMS); err != nil {
			return nil, fmt.Errorf("reading tool usage: %w", err)
		}
		t.AvgMS = float64(t.TotalMS) / float64(t.Calls)
		out = append(out, t)
	}
	return out, rows.Err()
}

func (l *Ledger) recent(ctx context.Context, since int64) ([]Call, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT at_ms, service, action, tier, provider, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, duration_ms, outcome
		FROM llm_calls WHERE at_ms >= ? ORDER BY at_ms DESC, id DESC LIMIT ?`, since, recentLimit)
	if err != nil {
		return nil, fmt.Errorf("listing recent usage: %w", err)
	}
	defer rows.Close()
	out := []Call{}
	for rows.Next() {
		var c Call
		var at, in, o, cr, cw int64
		if err := rows.Scan(&at, &c.Service, &c.Action, &c.Tier, &c.Provider, &c.Model, &in, &o, &cr, &cw, &c.Duration, &c.Outcome); err != nil {
			return nil, fmt.Errorf("reading recent usage: %w", err)
		}
		c.At = time.UnixMilli(at).UTC()
		c.Tokens = in + o + cr + cw
		rate, _ := lookup(l.rates, c.Provider, c.Model)
		a, b, d, e := rate.cost(in, o, cr, cw)
		c.Cost = a + b + d + e
		out = append(out, c)
	}
	return out, rows.Err()
}

// Routes registers GET /api/usage.
func (l *Ledger) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/usage", l.handleUsage)
}

func (l *Ledger) handleUsage(w http.ResponseWriter, r *http.Request) {
	period, err := ParsePeriod(r.URL.Query().Get("period"))
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	s, err := l.Summary(r.Context(), period)
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("The usage summary could not be computed.", err))
		return
	}
	httpjson.Write(w, http.StatusOK, s)
}
