package app

import (
	"net/url"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
)

// Related mail (found by vectors alone) is listed by default only when
// local-embed is a real embedding model, never with the hashed fallback.
func TestEmbedderKnowsMeaning(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  config.LLMConfig
		want bool
	}{
		{"nothing configured: the hashed embedder", config.LLMConfig{}, false},
		{"a chat model only", config.LLMConfig{BaseURL: "http://127.0.0.1:8080/v1", Model: "m"}, false},
		{"local named", config.LLMConfig{Tiers: map[string][]string{"local-embed": {"local"}}}, false},
		{"an embedding model", config.LLMConfig{BaseURL: "http://127.0.0.1:8080/v1", Tiers: map[string][]string{"local-embed": {"default/nomic-embed-text"}}}, true},
	} {
		if got := embedderKnowsMeaning(c.cfg); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// The search API's related=true|false reaches the query; absent leaves the
// store's default; anything else is refused by name.
func TestParseMailQueryRelated(t *testing.T) {
	t.Parallel()
	if q, err := ParseMailQuery(url.Values{"q": {"x"}}); err != nil || q.Related != nil {
		t.Errorf("absent: %v, %v", q.Related, err)
	}
	for _, v := range []bool{true, false} {
		q, err := ParseMailQuery(url.Values{"q": {"x"}, "related": {map[bool]string{true: "true", false: "false"}[v]}})
		if err != nil || q.Related == nil || *q.Related != v {
			t.Errorf("related=%v: %v, %v", v, q.Related, err)
		}
	}
	if _, err := ParseMailQuery(url.Values{"related": {"maybe"}}); err == nil {
		t.Error("related=maybe accepted")
	}
}
