package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Spend is the estimated cost and token count of model calls.
type Spend struct {
	CostUSD float64
	// Tokens counts input, output and cache tokens, as Summary does.
	Tokens int64
}

// SpendSince sums every recorded billable model call (chat and embeddings,
// any service, any outcome; not the offline embedder) that started at or
// after since. The budget guard
// calls it before every model call, so it aggregates in SQL by model only.
func (l *Ledger) SpendSince(ctx context.Context, since time.Time) (Spend, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT provider, model, SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens)
		FROM llm_calls WHERE at_ms >= ? AND provider != ? GROUP BY 1, 2`, since.UnixMilli(), llm.LocalProvider)
	if err != nil {
		return Spend{}, fmt.Errorf("summing model spend: %w", err)
	}
	defer rows.Close()
	var s Spend
	for rows.Next() {
		var provider, model string
		var in, out, cr, cw int64
		if err := rows.Scan(&provider, &model, &in, &out, &cr, &cw); err != nil {
			return Spend{}, fmt.Errorf("reading model spend: %w", err)
		}
		rate, _ := lookup(l.rates, provider, model)
		ci, co, ccr, ccw := rate.cost(in, out, cr, cw)
		s.CostUSD += ci + co + ccr + ccw
		s.Tokens += in + out + cr + cw
	}
	if err := rows.Err(); err != nil {
		return Spend{}, fmt.Errorf("reading model spend: %w", err)
	}
	return s, nil
}
