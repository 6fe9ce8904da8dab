package usage

import (
	"strings"

	"github.com/hestia-dev/hestia/internal/llm"
)

// Rate is the estimated price of one model, in US dollars per million
// tokens of each type. Reasoning tokens are billed as output and have no
// rate of their own.
type Rate struct {
	// Model matches a recorded model name exactly, or by prefix when it
	// ends in "*". Provider, when set, must match too.
	Provider   string  `json:"provider,omitempty"`
	Model      string  `json:"model"`
	Input      float64 `json:"input_per_mtok"`
	Output     float64 `json:"output_per_mtok"`
	CacheRead  float64 `json:"cache_read_per_mtok"`
	CacheWrite float64 `json:"cache_write_per_mtok"`
}

// DefaultRates is the code-configured rates table: list prices at the time
// of writing, for estimates only. Local models cost nothing. Edit here and
// restart to change estimates (history is re-priced, tokens are kept).
func DefaultRates() []Rate {
	return []Rate{
		{Provider: "local", Model: "*"},
		{Provider: "ollama", Model: "*"},
		{Model: llm.LocalEmbedModel},
		{Model: "deepseek-chat", Input: 0.27, Output: 1.10, CacheRead: 0.07},
		{Model: "deepseek-reasoner", Input: 0.55, Output: 2.19, CacheRead: 0.14},
		{Model: "claude-opus-4*", Input: 15, Output: 75, CacheRead: 1.5, CacheWrite: 18.75},
		{Model: "claude-sonnet-4*", Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75},
		{Model: "claude-haiku-4*", Input: 1, Output: 5, CacheRead: 0.1, CacheWrite: 1.25},
		{Model: "gpt-4o-mini*", Input: 0.15, Output: 0.60, CacheRead: 0.075},
		{Model: "gpt-4o*", Input: 2.5, Output: 10, CacheRead: 1.25},
		{Model: "gpt-4.1-mini*", Input: 0.4, Output: 1.6, CacheRead: 0.1},
		{Model: "gpt-4.1*", Input: 2, Output: 8, CacheRead: 0.5},
		{Model: "gpt-5-mini*", Input: 0.25, Output: 2, CacheRead: 0.025},
		{Model: "gpt-5*", Input: 1.25, Output: 10, CacheRead: 0.125},
	}
}

func (r Rate) matches(provider, model string) bool {
	if r.Provider != "" && r.Provider != provider {
		return false
	}
	if p, ok := strings.CutSuffix(r.Model, "*"); ok {
		return strings.HasPrefix(model, p)
	}
	return r.Model == model
}

// lookup returns the first matching rate; ok is false for an unpriced
// model (its cost counts as 0 and the summary flags it). A model routed
// through an aggregator ("openrouter", "anthropic/claude-sonnet-4") is
// also tried without its vendor prefix.
func lookup(rates []Rate, provider, model string) (Rate, bool) {
	for _, r := range rates {
		if r.matches(provider, model) {
			return r, true
		}
	}
	if _, bare, ok := strings.Cut(model, "/"); ok {
		for _, r := range rates {
			if r.Provider == "" && r.matches(provider, bare) {
				return r, true
			}
		}
	}
	return Rate{}, false
}

// cost is the estimated price of the token counts at rate r.
func (r Rate) cost(in, out, cacheRead, cacheWrite int64) (ci, co, cr, cw float64) {
	const m = 1e6
	return float64(in) * r.Input / m, float64(out) * r.Output / m, float64(cacheRead) * r.CacheRead / m, float64(cacheWrite) * r.CacheWrite / m
}
