package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

func TestUsageCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	// Record into the same store the daemon would use.
	l, err := usage.Open(context.Background(), filepath.Join(home, "db", "usage.db"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AddCall(context.Background(), llm.CallRecord{Start: time.Now(), Service: "agent", Action: "chat-turn", Tier: llm.Tier5, Provider: "x", Model: "deepseek-chat", Usage: llm.Usage{InputTokens: 1_000_000}, Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := l.AddCall(context.Background(), llm.CallRecord{Start: time.Now(), Provider: "ollama", Model: "m", Outcome: "ok"}); err != nil {
		t.Fatal(err)
	}
	l.Close()

	r := run(t, home, nil, "usage")
	if r.code != 0 || !strings.Contains(r.stdout, "Requests 2") || !strings.Contains(r.stdout, "agent / chat-turn") || !strings.Contains(r.stdout, `shown as "unknown"`) || !strings.Contains(r.stdout, "$0.2700") || !strings.Contains(r.stdout, "x/deepseek-chat") {
		t.Fatalf("text: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, home, nil, "usage", "--json", "--period", "all")
	var s usage.Summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || r.code != 0 || s.Totals.Requests != 2 || s.Period != usage.PeriodAll {
		t.Fatalf("json: %v %+v %s", err, s, r.stderr)
	}
	if r := run(t, home, nil, "usage", "--period", "1y"); r.code != 2 || !strings.Contains(r.stderr, "7d, 30d, all") {
		t.Fatalf("bad period: %d %s", r.code, r.stderr)
	}
}
