package config

import (
	"errors"
	"strings"
	"testing"
)

func TestBudgetAndSafetyConfig(t *testing.T) {
	t.Parallel()
	d := Default()
	if d.Budget.WarnPercent != 80 || d.Budget.DailyCostUSD != 0 || !d.Safety.Taint {
		t.Fatalf("defaults: %+v %+v", d.Budget, d.Safety)
	}
	cases := []struct {
		name string
		mod  func(*BudgetConfig)
		key  string
	}{
		{"negative cost", func(b *BudgetConfig) { b.DailyCostUSD = -1 }, "budget.daily_cost_usd"},
		{"huge monthly", func(b *BudgetConfig) { b.MonthlyCostUSD = 2e6 }, "budget.monthly_cost_usd"},
		{"negative tokens", func(b *BudgetConfig) { b.MonthlyTokens = -5 }, "budget.monthly_tokens"},
		{"warn 100", func(b *BudgetConfig) { b.WarnPercent = 100 }, "budget.warn_percent"},
		{"warn 0", func(b *BudgetConfig) { b.WarnPercent = 0 }, "budget.warn_percent"},
		{"daily above monthly", func(b *BudgetConfig) { b.DailyCostUSD, b.MonthlyCostUSD = 10, 5 }, "budget.daily_cost_usd"},
		{"daily tokens above monthly", func(b *BudgetConfig) { b.DailyTokens, b.MonthlyTokens = 10, 5 }, "budget.daily_tokens"},
		{"valid", func(b *BudgetConfig) { b.DailyCostUSD, b.MonthlyCostUSD, b.DailyTokens = 1, 20, 1e6 }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tc.mod(&c.Budget)
			err := c.Validate()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("valid config rejected: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tc.key {
				t.Fatalf("err = %v, want a config error for %s", err, tc.key)
			}
		})
	}
}

func TestBudgetFromFileAndEnv(t *testing.T) {
	t.Parallel()
	var c = Default()
	if err := decodeFile([]byte("[budget]\ndaily_cost_usd = 2.5\nmonthly_tokens = 1000000\n[safety]\ntaint = false\n"), &c); err != nil {
		t.Fatal(err)
	}
	if c.Budget.DailyCostUSD != 2.5 || c.Budget.MonthlyTokens != 1000000 || c.Safety.Taint {
		t.Fatalf("decoded %+v %+v", c.Budget, c.Safety)
	}
	env := func(k string) string {
		return map[string]string{"HESTIA_BUDGET_MONTHLY_COST_USD": "30", "HESTIA_SAFETY_TAINT": "true"}[k]
	}
	if err := applyEnv(&c, env); err != nil {
		t.Fatal(err)
	}
	if c.Budget.MonthlyCostUSD != 30 || !c.Safety.Taint {
		t.Fatalf("env not applied: %+v %+v", c.Budget, c.Safety)
	}
	bad := func(k string) string { return map[string]string{"HESTIA_BUDGET_DAILY_TOKENS": "lots"}[k] }
	if err := applyEnv(&c, bad); err == nil || !strings.Contains(err.Error(), "budget.daily_tokens") {
		t.Fatalf("bad env: err = %v", err)
	}
}
