package taint

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/tools"
)

func tool(s tools.Spec) tools.Tool { return &tools.Func{S: s} }

func TestTracker(t *testing.T) {
	t.Parallel()
	tr := NewTracker()
	if tr.Tainted() || tr.Describe() != "" {
		t.Fatal("a new tracker is clean")
	}
	tr.Mark(Source{Tool: "mail_read", Detail: "<a@b>\n\x1b[2J"})
	tr.Mark(Source{Tool: "mail_read", Detail: "<a@b>\n\x1b[2J"}) // same source again
	tr.Mark(Source{Tool: "web_fetch", Detail: strings.Repeat("x", 500)})
	if !tr.Tainted() || tr.Reads() != 3 || len(tr.Sources()) != 2 {
		t.Fatalf("tainted=%v reads=%d sources=%v", tr.Tainted(), tr.Reads(), tr.Sources())
	}
	if d := tr.Sources()[0].Detail; d != "<a@b>[2J" {
		t.Fatalf("control characters kept in detail: %q", d)
	}
	if len(tr.Sources()[1].Detail) != maxDetail {
		t.Fatal("detail not bounded")
	}
	if d := tr.Describe(); !strings.HasPrefix(d, "mail_read (<a@b>[2J), web_fetch (xxx") || !strings.HasSuffix(d, "(3 untrusted reads in all)") {
		t.Fatalf("Describe = %q", d)
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() { defer wg.Done(); tr.Mark(Source{Tool: "doc_read", Detail: strings.Repeat("d", i%40)}) }()
	}
	wg.Wait()
	if len(tr.Sources()) != MaxSources || tr.Reads() != 103 {
		t.Fatalf("bounded sources: %d, reads %d", len(tr.Sources()), tr.Reads())
	}
}

func TestContext(t *testing.T) {
	t.Parallel()
	if From(context.Background()) != nil {
		t.Fatal("no tracker in a bare context")
	}
	tr := NewTracker()
	if From(WithTracker(context.Background(), tr)) != tr {
		t.Fatal("tracker not carried")
	}
}

func TestSensitive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		t    tools.Tool
		want bool
	}{
		{"unknown tool", nil, true},
		{"read-only low", tool(tools.Spec{Name: "mail_search", ReadOnly: true, Risk: tools.RiskLow}), false},
		{"read-only untrusted", tool(tools.Spec{Name: "mail_read", ReadOnly: true, Risk: tools.RiskLow, UntrustedOutput: true}), false},
		{"write", tool(tools.Spec{Name: "files_write", Risk: tools.RiskMedium}), true},
		{"read-only egress", tool(tools.Spec{Name: "http_post", ReadOnly: true, Egress: true, Risk: tools.RiskLow}), true},
		{"read-only without risk", tool(tools.Spec{Name: "mystery", ReadOnly: true}), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Sensitive(tc.t); got != tc.want {
				t.Fatalf("Sensitive = %v, want %v", got, tc.want)
			}
		})
	}
	if Untrusted(nil) || !Untrusted(tool(tools.Spec{UntrustedOutput: true})) {
		t.Fatal("Untrusted")
	}
}

func TestSameCallCountedOnce(t *testing.T) {
	t.Parallel()
	tr := NewTracker()
	tr.Mark(Source{Tool: "read_file", Detail: "a", CallID: "c1"})
	tr.Mark(Source{Tool: "read_file", Detail: "a", CallID: "c1"})
	tr.Mark(Source{Tool: "read_file", Detail: "a", CallID: "c2"})
	if tr.Reads() != 2 || len(tr.Sources()) != 1 {
		t.Fatalf("reads %d sources %v", tr.Reads(), tr.Sources())
	}
}
