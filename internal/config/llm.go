package config

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// LLMConfig configures model access. The three flat keys configure one
// OpenAI-compatible target used by every tier, so zero-file setups work with
// HESTIA_LLM_BASE_URL / HESTIA_LLM_API_KEY / HESTIA_LLM_MODEL alone.
//
// Richer setups name providers and map tiers to ordered target lists:
//
//	[llm.providers.ollama]
//	kind = "openai"
//	base_url = "http://127.0.0.1:11434/v1"
//
//	[llm.providers.claude]
//	kind = "anthropic"
//	api_key = "sk-ant-…"
//
//	[llm.tiers]
//	tier-1 = ["ollama/qwen3:4b"]
//	tier-5 = ["claude/claude-sonnet-4-5", "ollama/qwen3:30b"]
//	local-embed = ["ollama/bge-m3"]   # default: the built-in offline embedder
//
// A target is "provider/model" (the model may itself contain slashes);
// "default/MODEL" uses the flat base_url/api_key with another model, and
// "local" is the built-in embedder (local-embed only). A tier left unmapped
// uses the flat target when base_url is set.
type LLMConfig struct {
	BaseURL string `toml:"base_url"`
	APIKey  string `toml:"api_key" secret:"true"`
	Model   string `toml:"model"`
	// Timeout is the old single deadline; it is read as turn_timeout when
	// that is unset, so existing files keep loading.
	Timeout Duration `toml:"timeout,omitempty"`

	// Separate budgets for one model call (see llm.Timeouts): dialling the
	// endpoint, the wait for the first token (local endpoints — loopback or
	// private addresses — read the prompt on the user's own hardware and get
	// LocalFirstTokenTimeout), the silence allowed between streamed chunks,
	// and the whole call across fallback targets.
	ConnectTimeout         Duration `toml:"connect_timeout"`
	FirstTokenTimeout      Duration `toml:"first_token_timeout"`
	LocalFirstTokenTimeout Duration `toml:"local_first_token_timeout"`
	IdleTimeout            Duration `toml:"idle_timeout"`
	TurnTimeout            Duration `toml:"turn_timeout"`
	// ContextWindow, when > 0, is the model's context window in tokens and
	// skips discovery (llama.cpp /props, Ollama /api/show, LM Studio's
	// model list); on Ollama it is also sent as options.num_ctx.
	ContextWindow int `toml:"context_window,omitempty"`

	Providers map[string]LLMProvider `toml:"providers,omitempty"`
	Tiers     map[string][]string    `toml:"tiers,omitempty"`
}

// LLMProvider is one named model endpoint.
type LLMProvider struct {
	Kind    string `toml:"kind"` // "openai" (default) or "anthropic"
	BaseURL string `toml:"base_url"`
	APIKey  string `toml:"api_key" secret:"true"`
	// MaxTokens bounds replies when the caller sets no bound (0: provider
	// default; Anthropic then uses 4096).
	MaxTokens int `toml:"max_tokens,omitempty"`
}

// LLMTierNames lists the tier keys [llm.tiers] accepts.
var llmTierNames = []string{"tier-1", "tier-2", "tier-3", "tier-4", "tier-5", "tier-6", "local-embed"}

// LLMTierNames returns the tier keys [llm.tiers] accepts.
func LLMTierNames() []string { return append([]string(nil), llmTierNames...) }

func defaultLLM() LLMConfig {
	return LLMConfig{
		ConnectTimeout:         Duration(10 * time.Second),
		FirstTokenTimeout:      Duration(2 * time.Minute),
		LocalFirstTokenTimeout: Duration(15 * time.Minute),
		IdleTimeout:            Duration(2 * time.Minute),
		TurnTimeout:            Duration(30 * time.Minute),
	}
}

// EffectiveTurnTimeout is turn_timeout, or the deprecated timeout when
// only that one was set.
func (l LLMConfig) EffectiveTurnTimeout() time.Duration {
	if l.Timeout != 0 && l.TurnTimeout.D() == defaultLLM().TurnTimeout.D() {
		return l.Timeout.D()
	}
	return l.TurnTimeout.D()
}

// SplitLLMTarget splits "provider/model" at the first slash.
func SplitLLMTarget(s string) (provider, model string) {
	provider, model, _ = strings.Cut(strings.TrimSpace(s), "/")
	return provider, model
}

func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (l LLMConfig) validate() []error {
	var errs []error
	if l.BaseURL != "" && !validHTTPURL(l.BaseURL) {
		errs = append(errs, &Error{Key: "llm.base_url", Value: l.BaseURL, Allowed: "an http:// or https:// URL such as http://127.0.0.1:11434/v1"})
	}
	if l.Timeout != 0 && (l.Timeout.D() < time.Second || l.Timeout.D() > time.Hour) {
		errs = append(errs, &Error{Key: "llm.timeout", Value: l.Timeout.D().String(), Allowed: "a duration between 1s and 1h (deprecated: use llm.turn_timeout)"})
	}
	for _, d := range []struct {
		key    string
		v      Duration
		lo, hi time.Duration
	}{
		{"llm.connect_timeout", l.ConnectTimeout, time.Second, 5 * time.Minute},
		{"llm.first_token_timeout", l.FirstTokenTimeout, time.Second, 2 * time.Hour},
		{"llm.local_first_token_timeout", l.LocalFirstTokenTimeout, time.Second, 2 * time.Hour},
		{"llm.idle_timeout", l.IdleTimeout, time.Second, time.Hour},
		{"llm.turn_timeout", l.TurnTimeout, time.Second, 6 * time.Hour},
	} {
		if d.v.D() < d.lo || d.v.D() > d.hi {
			errs = append(errs, &Error{Key: d.key, Value: d.v.D().String(), Allowed: fmt.Sprintf("a duration between %s and %s", d.lo, d.hi)})
		}
	}
	if l.ContextWindow != 0 && (l.ContextWindow < 512 || l.ContextWindow > 10_000_000) {
		errs = append(errs, &Error{Key: "llm.context_window", Value: strconv.Itoa(l.ContextWindow), Allowed: "0 (discover it from the server) or an integer from 512 to 10000000"})
	}
	names := make([]string, 0, len(l.Providers))
	for name := range l.Providers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := l.Providers[name]
		key := "llm.providers." + name
		if name == "default" || name == "local" || name == "" || strings.ContainsAny(name, "/ ") {
			errs = append(errs, &Error{Key: key, Value: name, Allowed: "a provider name without slashes or spaces, other than the reserved default and local"})
		}
		switch p.Kind {
		case "", "openai":
			if !validHTTPURL(p.BaseURL) {
				errs = append(errs, &Error{Key: key + ".base_url", Value: p.BaseURL, Allowed: "an http:// or https:// URL such as http://127.0.0.1:11434/v1"})
			}
		case "anthropic":
			if p.BaseURL != "" && !validHTTPURL(p.BaseURL) {
				errs = append(errs, &Error{Key: key + ".base_url", Value: p.BaseURL, Allowed: "an http:// or https:// URL, or empty for https://api.anthropic.com/v1"})
			}
		default:
			errs = append(errs, &Error{Key: key + ".kind", Value: p.Kind, Allowed: "openai or anthropic"})
		}
		if p.MaxTokens < 0 || p.MaxTokens > 1_000_000 {
			errs = append(errs, &Error{Key: key + ".max_tokens", Value: strconv.Itoa(p.MaxTokens), Allowed: "an integer from 0 to 1000000"})
		}
	}
	tiers := make([]string, 0, len(l.Tiers))
	for tier := range l.Tiers {
		tiers = append(tiers, tier)
	}
	sort.Strings(tiers)
	for _, tier := range tiers {
		key := "llm.tiers." + tier
		known := IsSpeechTier(tier) // speech tiers: internal/speech, not the chat router
		for _, n := range llmTierNames {
			known = known || n == tier
		}
		if !known {
			errs = append(errs, &Error{Key: key, Value: tier, Allowed: "one of " + strings.Join(llmTierNames, ", ") + ", stt, tts"})
			continue
		}
		for i, target := range l.Tiers[tier] {
			ek := fmt.Sprintf("%s[%d]", key, i)
			provider, model := SplitLLMTarget(target)
			switch {
			case target == "local":
				if tier != "local-embed" {
					errs = append(errs, &Error{Key: ek, Value: target, Allowed: "the built-in local embedder only serves local-embed"})
				}
			case provider == "default":
				if l.BaseURL == "" {
					errs = append(errs, &Error{Key: ek, Value: target, Allowed: "default/MODEL needs llm.base_url"})
				}
				if model == "" {
					errs = append(errs, &Error{Key: ek, Value: target, Allowed: "provider/model, e.g. default/llama3"})
				}
			default:
				p, ok := l.Providers[provider]
				if !ok || model == "" {
					errs = append(errs, &Error{Key: ek, Value: target, Allowed: "provider/model naming a provider under [llm.providers] (or default/MODEL, or local for local-embed)"})
				} else if tier == "local-embed" && p.Kind == "anthropic" {
					errs = append(errs, &Error{Key: ek, Value: target, Allowed: "an OpenAI-compatible provider: Anthropic has no embeddings API"})
				}
			}
		}
	}
	return errs
}
