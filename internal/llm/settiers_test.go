package llm

import (
	"context"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

// Chat tiers can be replaced on a running router; the embedding tier stays,
// and a bad set is refused with the tiers in force unchanged.
func TestSetChatTiers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := llmtest.New(t, llmtest.Text("from a"))
	b := llmtest.New(t, llmtest.Text("from b"))
	r, err := NewRouter(RouterConfig{Tiers: map[Tier][]Target{Tier5: {{Provider: "a", Kind: KindOpenAI, BaseURL: a.URL, Model: "m"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Complete(ctx, Request{Tier: Tier5, Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil || res.Text != "from a" {
		t.Fatalf("before: %+v %v", res, err)
	}
	if err := r.SetChatTiers(map[Tier][]Target{Tier5: {{Provider: "b", Kind: "carrier-pigeon", BaseURL: b.URL, Model: "m"}}}); err == nil {
		t.Fatal("a target of unknown kind was accepted")
	}
	if err := r.SetChatTiers(map[Tier][]Target{Tier5: {{Provider: "b", Kind: KindOpenAI, BaseURL: b.URL, Model: "m"}}, LocalEmbed: {{Provider: "b", Kind: KindOpenAI, BaseURL: b.URL, Model: "e"}}}); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Complete(ctx, Request{Tier: Tier5, Messages: []Message{{Role: RoleUser, Content: "hi"}}}); err != nil || res.Text != "from b" {
		t.Fatalf("after: %+v %v", res, err)
	}
	for _, ti := range r.Tiers() {
		if ti.Tier == LocalEmbed && (len(ti.Targets) != 1 || ti.Targets[0].Kind != KindLocal) {
			t.Errorf("local-embed changed live: %+v", ti.Targets)
		}
	}
}
