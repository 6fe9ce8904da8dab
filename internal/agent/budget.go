package agent

import (
	"context"

	"github.com/hestia-dev/hestia/internal/budget"
)

// budgetContext marks the turn's model calls as interactive (a user is
// waiting on every agent turn) and, when the user's own request asked for
// it, carries a budget override minted here from the guard. The model has
// no path to Options: its output only ever becomes tool calls and text.
func (a *Agent) budgetContext(ctx context.Context, o Options) context.Context {
	ctx = budget.WithKind(ctx, budget.KindInteractive)
	if o.OverBudget && a.d.Budget != nil {
		ctx = budget.WithOverride(ctx, a.d.Budget.Override("chat"))
	}
	return ctx
}

// CodeBudgetExceeded is the turn error code when a model budget cap was
// reached; resubmitting with over_budget continues past it.
const CodeBudgetExceeded = "budget_exceeded"
