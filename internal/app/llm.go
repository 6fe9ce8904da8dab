package app

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/hestia-dev/hestia/internal/budget"
	"github.com/hestia-dev/hestia/internal/doctor"
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
	// The daemon writes the offline embedder's rows (one per hybrid search)
	// in the background; see usage.Ledger.RecordCall.
	a.AddWorker("usage", a.Usage.Run)
	a.LLM, err = llm.NewRouter(llm.RouterConfig{
		Tiers:         llm.TiersFromConfig(a.Config.LLM),
		Timeouts:      llm.TimeoutsFromConfig(a.Config.LLM),
		ContextWindow: a.Config.LLM.ContextWindow,
		Recorder:      a.Usage,
		Logger:        log,
		Now:           a.Now,
	})
	if err != nil {
		return err
	}
	if err := a.initBudget(ctx); err != nil { // budget.go: a.Budget, a.Chat
		return err
	}
	a.AddCheck(tiersCheck(a.LLM))
	// Model endpoint checks are memoised: GET /api/system (even ?fresh=1)
	// calls each endpoint at most once per systemCheckTTL.
	if a.Config.LLM.BaseURL != "" {
		a.AddCheck(doctor.Memo(doctor.HTTPReachable("llm.endpoint", a.Config.LLM.BaseURL+"/models", a.Config.LLM.APIKey, &http.Client{}), systemCheckTTL, a.Now))
	}
	names := make([]string, 0, len(a.Config.LLM.Providers))
	for name := range a.Config.LLM.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if p := a.Config.LLM.Providers[name]; p.Kind == "" || p.Kind == llm.KindOpenAI {
			a.AddCheck(doctor.Memo(doctor.HTTPReachable("llm.provider."+name, strings.TrimRight(p.BaseURL, "/")+"/models", p.APIKey, &http.Client{}), systemCheckTTL, a.Now))
		}
	}
	if a.Server == nil {
		return nil
	}
	mux := a.Server.API()
	gateway.New(gateway.Options{Chat: a.Chat, Embed: &budget.Embedder{Inner: a.LLM, Guard: a.Budget}, Tiers: a.LLM.Tiers, Rates: a.Usage.Rates, Logger: log, Now: a.Now}).Routes(mux)
	a.Usage.Routes(mux)
	return nil
}

// tiersCheck names the chat tiers without a model: with none, agent turns
// fail while local search and browsing keep working.
func tiersCheck(r *llm.Router) doctor.Check {
	return doctor.Check{Name: "llm.tiers", Run: func(context.Context) (doctor.Status, string) {
		have := map[llm.Tier]string{}
		for _, t := range r.Tiers() {
			var names []string
			for _, tg := range t.Targets {
				names = append(names, tg.Provider+"/"+tg.Model)
			}
			have[t.Tier] = strings.Join(names, ", ")
		}
		var missing, mapped []string
		for _, t := range llm.ChatTiers() {
			if have[t] == "" {
				missing = append(missing, string(t))
			} else {
				mapped = append(mapped, fmt.Sprintf("%s → %s", t, have[t]))
			}
		}
		embed := "local-embed → " + have[llm.LocalEmbed]
		switch {
		case len(mapped) == 0:
			return doctor.Warn, "no chat model is configured (set HESTIA_LLM_BASE_URL and HESTIA_LLM_MODEL, or [llm.tiers]); chat is unavailable, local search still works; " + embed
		case len(missing) > 0:
			return doctor.Warn, "no model for " + strings.Join(missing, ", ") + "; " + strings.Join(mapped, "; ") + "; " + embed
		}
		return doctor.OK, strings.Join(mapped, "; ") + "; " + embed
	}}
}
