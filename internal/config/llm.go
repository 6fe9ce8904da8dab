package config

import (
	"net/url"
	"time"
)

// LLMConfig configures model access. The three flat keys configure one
// OpenAI-compatible target used by every tier, so zero-file setups work with
// HESTIA_LLM_BASE_URL / HESTIA_LLM_API_KEY / HESTIA_LLM_MODEL alone. Richer
// provider/tier maps are added by the llm package's issue.
type LLMConfig struct {
	BaseURL string   `toml:"base_url"`
	APIKey  string   `toml:"api_key" secret:"true"`
	Model   string   `toml:"model"`
	Timeout Duration `toml:"timeout"` // one deadline shared by all fallback attempts
}

func defaultLLM() LLMConfig {
	return LLMConfig{Timeout: Duration(120 * time.Second)}
}

func (l LLMConfig) validate() []error {
	var errs []error
	if l.BaseURL != "" {
		u, err := url.Parse(l.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, &Error{Key: "llm.base_url", Value: l.BaseURL, Allowed: "an http:// or https:// URL such as http://127.0.0.1:11434/v1"})
		}
	}
	if l.Timeout.D() < time.Second || l.Timeout.D() > time.Hour {
		errs = append(errs, &Error{Key: "llm.timeout", Value: l.Timeout.D().String(), Allowed: "a duration between 1s and 1h"})
	}
	return errs
}
