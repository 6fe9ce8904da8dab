package llm

import (
	"github.com/hestia-dev/hestia/internal/config"
)

// TiersFromConfig turns the validated [llm] section into the router's tier
// map. A tier without its own list uses the flat base_url/api_key/model
// target when base_url is set (the zero-file setup); local-embed without a
// list uses the built-in embedder (the router's default).
func TiersFromConfig(c config.LLMConfig) map[Tier][]Target {
	flat := Target{Provider: "default", Kind: KindOpenAI, BaseURL: c.BaseURL, APIKey: c.APIKey, Model: c.Model}
	out := map[Tier][]Target{}
	for _, name := range config.LLMTierNames() {
		tier := Tier(name)
		list, ok := c.Tiers[name]
		if !ok || len(list) == 0 {
			if c.BaseURL != "" && tier != LocalEmbed {
				out[tier] = []Target{flat}
			}
			continue
		}
		for _, s := range list {
			if s == "local" {
				out[tier] = append(out[tier], NewLocalEmbedder().target())
				continue
			}
			provider, model := config.SplitLLMTarget(s)
			if provider == "default" {
				t := flat
				t.Model = model
				out[tier] = append(out[tier], t)
				continue
			}
			p := c.Providers[provider]
			kind := p.Kind
			if kind == "" {
				kind = KindOpenAI
			}
			out[tier] = append(out[tier], Target{Provider: provider, Kind: kind, BaseURL: p.BaseURL, APIKey: p.APIKey, Model: model, MaxTokens: p.MaxTokens})
		}
	}
	return out
}
