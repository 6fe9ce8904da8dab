package config

import (
	"strconv"
)

// BudgetConfig caps model spend. A zero cap means "no cap" for that metric
// and period. Every model call counts (interactive, background, scheduled,
// sub-agent); see internal/budget.
type BudgetConfig struct {
	// DailyCostUSD and MonthlyCostUSD cap the estimated cost in US dollars
	// (from the usage ledger's rates) per local calendar day and month.
	DailyCostUSD   float64 `toml:"daily_cost_usd"`
	MonthlyCostUSD float64 `toml:"monthly_cost_usd"`
	// DailyTokens and MonthlyTokens cap tokens as the usage ledger counts
	// them (input, output and cache reads/writes).
	DailyTokens   int64 `toml:"daily_tokens"`
	MonthlyTokens int64 `toml:"monthly_tokens"`
	// WarnPercent is the share of a cap at which a warning event fires
	// (once per period); 100 % always fires budget.exceeded.
	WarnPercent int `toml:"warn_percent"`
}

func defaultBudget() BudgetConfig { return BudgetConfig{WarnPercent: 80} }

func (b BudgetConfig) validate() []error {
	var errs []error
	money := func(key string, v float64) {
		if v < 0 || v > 1e6 || v != v {
			errs = append(errs, &Error{Key: key, Value: strconv.FormatFloat(v, 'f', -1, 64), Allowed: "a dollar amount from 0 (no cap) to 1000000"})
		}
	}
	tokens := func(key string, v int64) {
		if v < 0 || v > 1e13 {
			errs = append(errs, &Error{Key: key, Value: strconv.FormatInt(v, 10), Allowed: "a token count from 0 (no cap) to 10000000000000"})
		}
	}
	money("budget.daily_cost_usd", b.DailyCostUSD)
	money("budget.monthly_cost_usd", b.MonthlyCostUSD)
	tokens("budget.daily_tokens", b.DailyTokens)
	tokens("budget.monthly_tokens", b.MonthlyTokens)
	if b.WarnPercent < 1 || b.WarnPercent > 99 {
		errs = append(errs, &Error{Key: "budget.warn_percent", Value: strconv.Itoa(b.WarnPercent), Allowed: "an integer percentage from 1 to 99"})
	}
	if b.DailyCostUSD > 0 && b.MonthlyCostUSD > 0 && b.DailyCostUSD > b.MonthlyCostUSD {
		errs = append(errs, &Error{Key: "budget.daily_cost_usd", Value: strconv.FormatFloat(b.DailyCostUSD, 'f', -1, 64), Allowed: "at most budget.monthly_cost_usd"})
	}
	if b.DailyTokens > 0 && b.MonthlyTokens > 0 && b.DailyTokens > b.MonthlyTokens {
		errs = append(errs, &Error{Key: "budget.daily_tokens", Value: strconv.FormatInt(b.DailyTokens, 10), Allowed: "at most budget.monthly_tokens"})
	}
	return errs
}
