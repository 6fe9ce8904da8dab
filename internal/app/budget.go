package app

import (
	"context"
	"time"

	"github.com/hestia-dev/hestia/internal/budget"
)

// initBudget builds the model budget guard over the usage ledger and the
// guarded client (a.Chat) that every model caller uses instead of the bare
// router: the agent, the gateway, background services. Called by initLLM
// right after the router exists. GET /api/budget serves the caps.
func (a *App) initBudget(ctx context.Context) error {
	db, err := a.OpenStore(ctx, budget.Schema)
	if err != nil {
		return err
	}
	ledger := budget.LedgerFunc(func(ctx context.Context, since time.Time) (budget.Spend, error) {
		s, err := a.Usage.SpendSince(ctx, since)
		return budget.Spend{CostUSD: s.CostUSD, Tokens: s.Tokens}, err
	})
	a.Budget, err = budget.New(budget.Options{Config: a.Config.Budget, Ledger: ledger, DB: db, Log: a.Log.With("component", "budget"), Now: a.Now})
	if err != nil {
		return err
	}
	a.Chat = &budget.Client{Inner: a.LLM, Guard: a.Budget}
	if a.Server != nil {
		a.Budget.Routes(a.Server.API())
	}
	return nil
}
