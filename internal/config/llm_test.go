package config

import (
	"strings"
	"testing"
)

func TestLLMProvidersAndTiers(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, `
[llm]
base_url = "http://127.0.0.1:8080/v1"
model = "flat"
[llm.providers.ollama]
base_url = "http://127.0.0.1:11434/v1"
[llm.providers.claude]
kind = "anthropic"
api_key = "sk-ant-secret"
max_tokens = 8000
[llm.tiers]
tier-1 = ["ollama/qwen3:4b"]
tier-5 = ["claude/claude-sonnet-4-5", "ollama/org/model:tag", "default/other"]
local-embed = ["ollama/bge-m3", "local"]
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.LLM.Tiers["tier-5"]; len(got) != 3 || got[1] != "ollama/org/model:tag" {
		t.Fatalf("tiers %v", cfg.LLM.Tiers)
	}
	if p, m := SplitLLMTarget("ollama/org/model:tag"); p != "ollama" || m != "org/model:tag" {
		t.Fatalf("split %q %q", p, m)
	}
	if cfg.LLM.Providers["claude"].MaxTokens != 8000 {
		t.Fatalf("providers %+v", cfg.LLM.Providers)
	}
	shown, err := cfg.Masked().TOML()
	if err != nil || strings.Contains(shown, "sk-ant-secret") || !strings.Contains(shown, "tier-5") {
		t.Fatalf("masked show leaks or lacks tiers: %v\n%s", err, shown)
	}
}

func TestLLMValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		want       []string
	}{
		{"unknown tier", "[llm.tiers]\ntier-9 = [\"x/y\"]\n", []string{"llm.tiers.tier-9", "tier-1"}},
		{"unknown provider", "[llm.tiers]\ntier-2 = [\"nope/m\"]\n", []string{"llm.tiers.tier-2[0]", "nope/m", "[llm.providers]"}},
		{"missing model", "[llm.providers.o]\nbase_url = \"http://h/v1\"\n[llm.tiers]\ntier-2 = [\"o\"]\n", []string{"llm.tiers.tier-2[0]"}},
		{"default without base_url", "[llm.tiers]\ntier-2 = [\"default/m\"]\n", []string{"default/MODEL needs llm.base_url"}},
		{"local on chat tier", "[llm.tiers]\ntier-2 = [\"local\"]\n", []string{"only serves local-embed"}},
		{"bad kind", "[llm.providers.o]\nkind = \"grpc\"\n", []string{"llm.providers.o.kind", "openai or anthropic"}},
		{"bad provider url", "[llm.providers.o]\nbase_url = \"ftp://x\"\n", []string{"llm.providers.o.base_url"}},
		{"reserved name", "[llm.providers.local]\nbase_url = \"http://h/v1\"\n", []string{"reserved"}},
		{"anthropic embeddings", "[llm.providers.c]\nkind = \"anthropic\"\n[llm.tiers]\nlocal-embed = [\"c/m\"]\n", []string{"no embeddings API"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
