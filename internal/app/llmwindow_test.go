package app

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/llm/llmtest"
)

func TestWindowCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		flavor string
		window int
		fixed  int
		want   doctor.Status
		say    string
	}{
		{"fits", "llama.cpp", 32768, 2000, doctor.OK, "32768-token window (llama.cpp /props)"},
		{"does not fit", "llama.cpp", 4096, 7100, doctor.Warn, "every message will fail"},
		{"too little room", "llama.cpp", 8192, 5500, doctor.Warn, "too little for a conversation"},
		{"unknown", "", 0, 2000, doctor.OK, "set llm.context_window"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t)
			srv.SetWindow(tc.flavor, tc.window)
			r, err := llm.NewRouter(llm.RouterConfig{Tiers: map[llm.Tier][]llm.Target{llm.Tier5: {{Provider: "local", Kind: llm.KindOpenAI, BaseURL: srv.URL, Model: "m"}}}})
			if err != nil {
				t.Fatal(err)
			}
			st, detail := windowCheck(r, llm.Tier5, func(context.Context) int { return tc.fixed }).Run(context.Background())
			if st != tc.want || !strings.Contains(detail, tc.say) {
				t.Errorf("%s: %s, want %s saying %q", st, detail, tc.want, tc.say)
			}
		})
	}
}
