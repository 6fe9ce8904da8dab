package usage_test

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/usage"
)

// Attribution labels come from request headers any gateway client sets.
// They are stored bounded and printable, so a client cannot bloat every
// row (a header may be up to 1 MiB) or break the by-action breakdown,
// which keys service and action with a NUL between them.
func TestAttributionLabelsAreBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := newLedger(t)
	long := strings.Repeat("é", 5000)
	for _, rec := range []llm.CallRecord{
		{Start: now, Service: long, Action: "a", Provider: "p", Model: "paid", Outcome: "ok"},
		{Start: now, Service: "mail\x00x", Action: "in\ndex", Provider: "p", Model: "paid", Outcome: "ok"},
		{Start: now, Service: "  ", Action: "", Provider: "p", Model: "paid", Outcome: "ok"},
	} {
		if err := l.AddCall(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.RecordTool(ctx, usage.ToolCall{At: now, Service: long, Tool: "probe"}); err != nil {
		t.Fatal(err)
	}
	s, err := l.Summary(ctx, usage.PeriodAll)
	if err != nil {
		t.Fatal(err)
	}
	services := map[string]bool{}
	for _, g := range s.ByService {
		if len(g.Key) > usage.MaxLabel || !utf8.ValidString(g.Key) || strings.ContainsAny(g.Key, "\x00\n") {
			t.Errorf("service label stored as %d bytes %q", len(g.Key), g.Key[:min(len(g.Key), 40)])
		}
		services[g.Key] = true
	}
	if !services["mail x"] || !services["unknown"] {
		t.Errorf("services %v: want the control character replaced and a blank label as unknown", services)
	}
	for _, g := range s.ByAction {
		if g.Service == "mail x" && g.Key != "in dex" {
			t.Errorf("action of mail x = %q", g.Key)
		}
	}
	if s.UnattributedRequests != 1 {
		t.Errorf("unattributed = %d, want the blank label counted", s.UnattributedRequests)
	}
}
