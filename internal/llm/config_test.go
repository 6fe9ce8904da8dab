package llm_test

import (
	"context"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// The zero-file setup: base_url/api_key/model alone serve every chat tier.
func TestZeroFileSingleTarget(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Text("a"), llmtest.Text("b"))
	tiers := llm.TiersFromConfig(config.LLMConfig{BaseURL: srv.URL, APIKey: "k", Model: "llama3"})
	for _, tier := range llm.ChatTiers() {
		if got := tiers[tier]; len(got) != 1 || got[0].Model != "llama3" || got[0].BaseURL != srv.URL {
			t.Fatalf("%s → %+v", tier, got)
		}
	}
	if _, ok := tiers[llm.LocalEmbed]; ok {
		t.Fatal("flat target mapped to local-embed")
	}
	r, err := llm.NewRouter(llm.RouterConfig{Tiers: tiers})
	if err != nil {
		t.Fatal(err)
	}
	for _, tier := range []llm.Tier{llm.Tier1, llm.Tier6} {
		if _, err := r.Complete(context.Background(), llm.Request{Tier: tier, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.ChatRequests()
	if len(reqs) != 2 || reqs[0].Model != "llama3" || reqs[0].Header.Get("Authorization") != "Bearer k" {
		t.Fatalf("requests %+v", reqs)
	}
}

func TestTiersFromProviders(t *testing.T) {
	t.Parallel()
	tiers := llm.TiersFromConfig(config.LLMConfig{
		BaseURL: "http://flat/v1", Model: "flat",
		Providers: map[string]config.LLMProvider{
			"ollama": {BaseURL: "http://o/v1"},
			"claude": {Kind: "anthropic", APIKey: "x", MaxTokens: 9},
		},
		Tiers: map[string][]string{
			"tier-5":      {"claude/sonnet", "ollama/org/m:1", "default/big"},
			"local-embed": {"ollama/bge-m3", "local"},
		},
	})
	t5 := tiers[llm.Tier5]
	if len(t5) != 3 || t5[0].Kind != llm.KindAnthropic || t5[0].MaxTokens != 9 || t5[1].Model != "org/m:1" || t5[1].Kind != llm.KindOpenAI || t5[2].BaseURL != "http://flat/v1" || t5[2].Model != "big" {
		t.Fatalf("tier-5 %+v", t5)
	}
	if le := tiers[llm.LocalEmbed]; len(le) != 2 || le[1].Kind != llm.KindLocal {
		t.Fatalf("local-embed %+v", le)
	}
	if t1 := tiers[llm.Tier1]; len(t1) != 1 || t1[0].Model != "flat" {
		t.Fatalf("unmapped tier-1 %+v", t1)
	}
	if _, err := llm.NewRouter(llm.RouterConfig{Tiers: tiers}); err != nil {
		t.Fatal(err)
	}
}
