package app

import (
	"context"

	"github.com/hestia-dev/hestia/internal/gateway"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

// initLLM wires model access: the usage ledger, the tier router recording
// into it (a.LLM, used by the agent and every service), the OpenAI-compatible
// /v1 gateway and GET /api/usage. It runs before the agent.
func (a *App) initLLM(ctx context.Context) error {
	db, err := a.OpenStore(ctx, usage.Schema)
	if err != nil {
		return err
	}
	log := a.Log.With("component", "llm")
	a.Usage = usage.New(db, log, a.Now, nil)
	a.LLM, err = llm.NewRouter(llm.RouterConfig{
		Tiers:    llm.TiersFromConfig(a.Config.LLM),
		Timeout:  a.Config.LLM.Timeout.D(),
		Recorder: a.Usage,
		Logger:   log,
		Now:      a.Now,
	})
	if err != nil {
		return err
	}
	if err := a.initBudget(ctx); err != nil { // budget.go: a.Budget, a.Chat
		return err
	}
	if a.Server == nil {
		return nil
	}
	mux := a.Server.API()
	gateway.New(gateway.Options{Chat: a.Chat, Embed: a.LLM, Tiers: a.LLM.Tiers, Rates: a.Usage.Rates, Logger: log, Now: a.Now}).Routes(mux)
	a.Usage.Routes(mux)
	return nil
}
