package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

func TestUsageShowsBudgetCaps(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if r := run(t, home, nil, "usage"); r.code != 0 || !strings.Contains(r.stdout, "Budget: no caps configured") {
		t.Fatalf("no caps: %+v", r)
	}
	l, err := usage.Open(context.Background(), filepath.Join(home, "db", "usage.db"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// deepseek-chat input is $0.27 per million tokens.
	if err := l.AddCall(context.Background(), llm.CallRecord{Start: time.Now(), Service: "agent", Provider: "x", Model: "deepseek-chat", Usage: llm.Usage{InputTokens: 1_000_000}, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	env := map[string]string{"HESTIA_BUDGET_DAILY_COST_USD": "0.30", "HESTIA_BUDGET_MONTHLY_TOKENS": "500000"}
	r := run(t, home, env, "usage")
	if r.code != 0 || !strings.Contains(r.stdout, "Budget caps (warning at 80%)") ||
		!strings.Contains(r.stdout, "day   cost_usd      $0.2700 of $0.30") || !strings.Contains(r.stdout, "warning") ||
		!strings.Contains(r.stdout, "month tokens        1000000 of 500000 tok") || !strings.Contains(r.stdout, "exceeded") {
		t.Fatalf("caps text:\n%s\n%s", r.stdout, r.stderr)
	}
	r = run(t, home, env, "usage", "--json")
	var got struct {
		Totals usage.Totals  `json:"totals"`
		Budget budget.Status `json:"budget"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || !got.Budget.Enabled || len(got.Budget.Caps) != 2 || got.Budget.Caps[1].State != budget.StateExceeded {
		t.Fatalf("caps json: %v %+v\n%s", err, got.Budget, r.stdout)
	}
}
