package app

import (
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/subagent"
	"github.com/hestia-dev/hestia/internal/tools"
)

// researchPreset are the tools research may use, where registered.
var researchPreset = []string{"mail_search", "mail_read", "mail_thread", "wiki_search", "wiki_read",
	"document_search", "document_read", "document_info", "web_fetch"}

// registerSubagents adds delegate and research: child turns over the same
// model client (budget-guarded), registry and policy as the agent.
func (a *App) registerSubagents(reg *tools.Registry, auth *authority.Authority) error {
	d := subagent.Deps{LLM: a.Chat, Tools: reg, Authority: auth,
		Tier: llm.Tier(a.Config.Agent.Tier), Log: a.Log.With("component", "subagent"), Now: a.Now}
	if a.Usage != nil {
		d.Usage = a.Usage
	}
	r := subagent.New(d)
	for _, t := range r.Tools(researchPreset) {
		if err := reg.Register(t); err != nil {
			return err
		}
	}
	return nil
}
