package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/usage"
)

// runUsage prints the usage ledger's summary. It reads the usage store
// directly (SQLite allows it while the daemon runs), so it works with the
// daemon stopped too.
func runUsage(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("usage")
	asJSON := fs.Bool("json", false, "print the summary as JSON (the body of GET /api/usage)")
	periodFlag := fs.String("period", "7d", "period: 7d, 30d or all")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	period, err := usage.ParsePeriod(*periodFlag)
	if err != nil {
		return usagef("--period: %v", err)
	}
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	ledger, err := usage.Open(ctx, paths.DB(usage.Schema.Name), nil, nil)
	if err != nil {
		return err
	}
	defer ledger.Close()
	s, err := ledger.Summary(ctx, period)
	if err != nil {
		return err
	}
	caps, err := budgetStatus(ctx, cfg.Budget, ledger) // usage_budget.go
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			usage.Summary
			Budget budget.Status `json:"budget"`
		}{s, caps})
	}
	printUsage(env.Stdout, s)
	printBudget(env.Stdout, caps)
	return nil
}

func printUsage(w io.Writer, s usage.Summary) {
	t := s.Totals
	fmt.Fprintf(w, "Usage, period %s (costs are estimates from the rates table, %s)\n\n", s.Period, s.Currency)
	fmt.Fprintf(w, "Requests %d (errors %d), tokens %d: input %d, output %d, cache read %d, cache write %d; cost $%.4f\n",
		t.Requests, t.Errors, t.Tokens, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.Cost)
	if s.UnattributedRequests > 0 {
		fmt.Fprintf(w, "%d request(s) carried no x-usage-service label and are shown as \"unknown\".\n", s.UnattributedRequests)
	}
	if s.Local.Requests > 0 {
		fmt.Fprintf(w, "Local, offline work (never billed, not in the figures above or in budgets): %d embedding request(s), %d tokens\n",
			s.Local.Requests, s.Local.Tokens)
	}
	section := func(title string, groups []usage.Group, withService bool) {
		if len(groups) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, g := range groups {
			key := g.Key
			if withService {
				key = g.Service + " / " + g.Key
			}
			if g.Unpriced {
				key += " (no rate)"
			}
			fmt.Fprintf(tw, "  %s\t%d req\t%d tok\t$%.4f\n", key, g.Requests, g.Tokens, g.Cost)
		}
		tw.Flush()
	}
	section("By service", s.ByService, false)
	section("By action", s.ByAction, true)
	section("By model", s.ByModel, false)
	section("By day (UTC)", s.ByDay, false)
	if t.Requests > 0 {
		fmt.Fprintln(w, "\nBy token type")
		for _, tt := range s.ByTokenType {
			fmt.Fprintf(w, "  %-12s %12d tok  $%.4f\n", tt.Type, tt.Tokens, tt.Cost)
		}
	}
	if len(s.Recent) > 0 {
		fmt.Fprintln(w, "\nRecent calls")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range s.Recent {
			fmt.Fprintf(tw, "  %s\t%s / %s\t%s\t%s/%s\t%d tok\t%d ms\t%s\n", c.At.Local().Format("2006-01-02 15:04:05"), c.Service, c.Action, c.Tier, c.Provider, c.Model, c.Tokens, c.Duration, c.Outcome)
		}
		tw.Flush()
	}
	if len(s.Tools) > 0 {
		fmt.Fprintln(w, "\nTools")
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, tl := range s.Tools {
			fmt.Fprintf(tw, "  %s\t%d calls\t%d errors\tavg %.0f ms\tmax %d ms\n", tl.Tool, tl.Calls, tl.Errors, tl.AvgMS, tl.MaxMS)
		}
		tw.Flush()
	}
}
