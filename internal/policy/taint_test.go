package policy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

func taintEngine(t *testing.T, cfg Config) *Engine {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "policy.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rules, err := NewRuleStore(ctx, db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, rules, NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestTaintTightens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := func(name string, risk tools.Risk, readOnly, egress bool) tools.Tool {
		return &tools.Func{S: tools.Spec{Name: name, Risk: risk, ReadOnly: readOnly, Egress: egress}}
	}
	send := spec("mail_send", tools.RiskMedium, false, true)
	write := spec("files_write", tools.RiskLow, false, false)
	post := spec("http_post", tools.RiskLow, true, true)
	search := spec("mail_search", tools.RiskLow, true, false)
	drop := spec("files_delete", tools.RiskHigh, false, false)

	e := taintEngine(t, Config{AutoApprove: ThresholdLow})
	if _, err := e.Rules().Create(ctx, Rule{Tool: "mail_send", Decision: Allow, Priority: 100, Note: "trusted"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Rules().Create(ctx, Rule{Tool: "files_delete", Decision: Deny, Priority: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Modes().Set("c_mode", ModeAllowChat, 0); err != nil {
		t.Fatal(err)
	}
	clean := taint.WithTracker(ctx, taint.NewTracker())
	tr := taint.NewTracker()
	tr.Mark(taint.Source{Tool: "mail_read", Detail: "<evil@attacker.test>"})
	dirty := taint.WithTracker(ctx, tr)

	cases := []struct {
		name   string
		ctx    context.Context
		tool   tools.Tool
		chat   string
		want   Decision
		source string
	}{
		{"clean rule allow stands", clean, send, "c1", Allow, SourceRule},
		{"tainted rule allow gated", dirty, send, "c1", Gate, SourceTaint},
		{"clean threshold allow stands", clean, write, "c1", Allow, SourceThreshold},
		{"tainted threshold allow gated", dirty, write, "c1", Gate, SourceTaint},
		{"tainted read-only egress gated", dirty, post, "c1", Gate, SourceTaint},
		{"tainted read-only stays allowed", dirty, search, "c1", Allow, SourceThreshold},
		{"tainted temporary mode gated", dirty, spec("shell_run", tools.RiskHigh, false, false), "c_mode", Gate, SourceTaint},
		{"clean temporary mode allows", clean, spec("shell_run", tools.RiskHigh, false, false), "c_mode", Allow, SourceTemporaryMode},
		{"tainted deny stays deny", dirty, drop, "c_mode", Deny, SourceRule},
		{"tainted unknown tool gated", dirty, nil, "c_mode", Gate, SourceTaint},
	}
	for _, tc := range cases {
		name := "unknown_tool_x"
		if tc.tool != nil {
			name = tc.tool.Spec().Name
		}
		res := e.Decide(tc.ctx, Input{ToolName: name, Tool: tc.tool, Args: []byte(`{}`), ChatID: tc.chat})
		if res.Decision != tc.want || res.Source != tc.source {
			t.Errorf("%s: %s/%s (%s), want %s/%s", tc.name, res.Decision, res.Source, res.Reason, tc.want, tc.source)
			continue
		}
		tainted := tc.ctx == dirty && tc.want != Deny && (tc.tool == nil || taint.Sensitive(tc.tool))
		if tainted != (len(res.TaintedBy) == 1) {
			t.Errorf("%s: TaintedBy = %v", tc.name, res.TaintedBy)
		}
		if tainted && !strings.Contains(res.Reason, "mail_read (<evil@attacker.test>)") {
			t.Errorf("%s: reason does not name the source: %q", tc.name, res.Reason)
		}
	}

	// A gate from the threshold stays a gate and names the source too.
	res := e.Decide(dirty, Input{ToolName: "files_write", Tool: spec("files_write", tools.RiskHigh, false, false), Args: []byte(`{}`), ChatID: "c1"})
	if res.Decision != Gate || res.Source != SourceThreshold || !strings.Contains(res.Reason, "also read untrusted content from mail_read") {
		t.Fatalf("gated call: %+v", res)
	}

	off := taintEngine(t, Config{AutoApprove: ThresholdLow, NoTaint: true})
	if res := off.Decide(dirty, Input{ToolName: "files_write", Tool: write, Args: []byte(`{}`)}); res.Decision != Allow || res.TaintedBy != nil {
		t.Fatalf("[safety] taint = false still tightened: %+v", res)
	}
}
