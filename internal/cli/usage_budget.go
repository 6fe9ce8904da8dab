package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/usage"
)

// budgetStatus evaluates the configured caps against the ledger, the same
// way the daemon's guard does before each model call.
func budgetStatus(ctx context.Context, cfg config.BudgetConfig, ledger *usage.Ledger) (budget.Status, error) {
	g, err := budget.New(budget.Options{Config: cfg, Ledger: budget.LedgerFunc(func(ctx context.Context, since time.Time) (budget.Spend, error) {
		s, err := ledger.SpendSince(ctx, since)
		return budget.Spend{CostUSD: s.CostUSD, Tokens: s.Tokens}, err
	})})
	if err != nil {
		return budget.Status{}, err
	}
	return g.Status(ctx)
}

func printBudget(w io.Writer, st budget.Status) {
	if !st.Enabled {
		fmt.Fprintln(w, "\nBudget: no caps configured (set [budget] daily_cost_usd, monthly_cost_usd, daily_tokens, monthly_tokens)")
		return
	}
	fmt.Fprintf(w, "\nBudget caps (warning at %d%%)\n", st.WarnPercent)
	for _, c := range st.Caps {
		used, limit := fmt.Sprintf("%.0f", c.Used), fmt.Sprintf("%.0f tok", c.Limit)
		if c.Metric == "cost_usd" {
			used, limit = fmt.Sprintf("$%.4f", c.Used), fmt.Sprintf("$%.2f", c.Limit)
		}
		fmt.Fprintf(w, "  %-5s %-8s %12s of %-12s %5.1f%%  %-8s resets %s\n", c.Period, c.Metric, used, limit, c.Percent, c.State, c.Resets.Format("2006-01-02 15:04"))
	}
}
