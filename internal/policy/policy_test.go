package policy

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

func newEngine(t *testing.T, cfg Config, clock func() time.Time) *Engine {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "policy.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rs, err := NewRuleStore(context.Background(), db, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(cfg, rs, NewModes(clock), nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func tool(name string, risk tools.Risk, readOnly bool) tools.Tool {
	return &tools.Func{S: tools.Spec{Name: name, Risk: risk, ReadOnly: readOnly, PathArgs: []string{"path"}}}
}

func TestThresholdsAndPrefixes(t *testing.T) {
	t.Parallel()
	low, med, high := tool("mail_search", tools.RiskLow, true), tool("write_file", tools.RiskMedium, false), tool("shell_run", tools.RiskHigh, false)
	unknownRisk := tool("mystery", tools.RiskUnknown, false)
	cases := []struct {
		threshold Threshold
		tool      tools.Tool
		name      string
		want      Decision
		source    string
	}{
		{ThresholdNone, low, "", Gate, SourceThreshold},
		{ThresholdLow, low, "", Allow, SourceThreshold},
		{ThresholdLow, med, "", Gate, SourceThreshold},
		{ThresholdMedium, med, "", Allow, SourceThreshold},
		{ThresholdMedium, high, "", Gate, SourceThreshold},
		{ThresholdHigh, high, "", Allow, SourceThreshold},
		{ThresholdHigh, unknownRisk, "", Gate, SourceUnknownTool},
		{ThresholdHigh, nil, "not_registered", Gate, SourceUnknownTool},
		{ThresholdHigh, tool("mcp__evil__x", tools.RiskLow, true), "", Deny, SourceDenyPrefix},
	}
	for _, c := range cases {
		e := newEngine(t, Config{AutoApprove: c.threshold, DenyPrefixes: []string{"mcp__evil__"}}, nil)
		name := c.name
		if c.tool != nil {
			name = c.tool.Spec().Name
		}
		r := e.Decide(context.Background(), Input{ToolName: name, Tool: c.tool, Args: json.RawMessage(`{}`)})
		if r.Decision != c.want || r.Source != c.source || r.Reason == "" {
			t.Errorf("%s at %s: %+v, want %s/%s", name, c.threshold, r, c.want, c.source)
		}
	}
}

func TestRulesPriorityTiesAndScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEngine(t, Config{AutoApprove: ThresholdLow}, nil)
	rs := e.Rules()
	mk := func(r Rule) Rule {
		t.Helper()
		out, err := rs.Create(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	mk(Rule{Tool: "write_file", PathScope: "/home/me/notes", Decision: Allow, Priority: 100})
	denyTie := mk(Rule{Tool: "write_file", Pattern: "*secret*", Decision: Deny, Priority: 100})
	mk(Rule{Tool: "write_file", Pattern: "*secret*", Decision: Allow, Priority: 100})
	mk(Rule{Tool: "mail_*", Decision: Gate, Priority: 10})
	mk(Rule{Tool: "*", Pattern: "*drop table*", Decision: Deny, Priority: 1})
	w := tool("write_file", tools.RiskMedium, false)
	cases := []struct {
		name   string
		tool   tools.Tool
		target string
		paths  []string
		want   Decision
		rule   string
	}{
		{"scope allows", w, "/home/me/notes/a.md", []string{"/home/me/notes/a.md"}, Allow, ""},
		{"scope excludes sibling prefix", w, "/home/me/notes2/a.md", []string{"/home/me/notes2/a.md"}, Gate, ""},
		{"all paths must be in scope", w, "x", []string{"/home/me/notes/a", "/etc/x"}, Gate, ""},
		{"deny wins the tie", w, "/home/me/notes/secret.md", []string{"/home/me/notes/secret.md"}, Deny, denyTie.ID},
		{"prefix rule gates a low-risk tool", tool("mail_search", tools.RiskLow, true), "{}", nil, Gate, ""},
		{"wildcard deny", tool("probe", tools.RiskLow, true), `{"q":"please drop table users"}`, nil, Deny, ""},
	}
	for _, c := range cases {
		r := e.Decide(ctx, Input{ToolName: c.tool.Spec().Name, Tool: c.tool, Target: c.target, Paths: c.paths})
		if r.Decision != c.want || (c.rule != "" && r.RuleID != c.rule) {
			t.Errorf("%s: %+v, want %s %s", c.name, r, c.want, c.rule)
		}
	}
	// Bad rules are refused with the field named.
	for _, bad := range []Rule{{Decision: Allow}, {Tool: "a*b", Decision: Allow}, {Tool: "x", Decision: "maybe"}, {Tool: "x", Decision: Allow, PathScope: "relative"}} {
		if _, err := rs.Create(ctx, bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	// Update and delete reload the cache.
	rules, _ := rs.List(ctx)
	if len(rules) != 5 || rules[0].Priority != 100 {
		t.Fatalf("list = %+v", rules)
	}
	if err := rs.Delete(ctx, denyTie.ID); err != nil {
		t.Fatal(err)
	}
	if r := e.Decide(ctx, Input{ToolName: "write_file", Tool: w, Target: "/x/secret", Paths: []string{"/x/secret"}}); r.Decision != Allow {
		t.Errorf("after delete: %+v", r)
	}
	if err := rs.Delete(ctx, denyTie.ID); err == nil {
		t.Error("second delete succeeded")
	}
}

func TestTemporaryModes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	e := newEngine(t, Config{AutoApprove: ThresholdLow}, clock)
	ctx := context.Background()
	if _, err := e.Rules().Create(ctx, Rule{Tool: "shell_run", Decision: Deny}); err != nil {
		t.Fatal(err)
	}
	w, sh := tool("write_file", tools.RiskMedium, false), tool("shell_run", tools.RiskHigh, false)
	if _, err := e.Modes().Set("c1", ModeAllow10m, 0); err != nil {
		t.Fatal(err)
	}
	if r := e.Decide(ctx, Input{ToolName: "write_file", Tool: w, ChatID: "c1"}); r.Decision != Allow || r.Source != SourceTemporaryMode {
		t.Errorf("mode did not allow: %+v", r)
	}
	if r := e.Decide(ctx, Input{ToolName: "write_file", Tool: w, ChatID: "c2"}); r.Decision != Gate {
		t.Errorf("mode leaked to another chat: %+v", r)
	}
	if r := e.Decide(ctx, Input{ToolName: "shell_run", Tool: sh, ChatID: "c1"}); r.Decision != Deny {
		t.Errorf("mode overrode a deny rule: %+v", r)
	}
	now = now.Add(10 * time.Minute)
	if r := e.Decide(ctx, Input{ToolName: "write_file", Tool: w, ChatID: "c1"}); r.Decision != Gate {
		t.Errorf("mode did not expire: %+v", r)
	}
	if _, err := e.Modes().Set("c1", "forever", 0); err == nil {
		t.Error("unknown mode accepted")
	}
	e.Modes().Set("c3", ModeAllowChat, 0)
	e.Modes().Clear("c3")
	if m := e.Modes().Get("c3"); m.Mode != ModeOff {
		t.Errorf("clear: %+v", m)
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p, s string
		want bool
	}{{"*", "", true}, {"*.md", "/a/b.md", true}, {"*.md", "/a/b.mdx", false}, {"/a/?", "/a/b", true}, {"/a/?", "/a/bc", false}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "axxbyy", false}, {"ü*", "über", true}} {
		if got := Glob(c.p, c.s); got != c.want {
			t.Errorf("Glob(%q,%q) = %v", c.p, c.s, got)
		}
	}
}

func TestCheckRefusesBadArgsAndSensitivePaths(t *testing.T) {
	t.Parallel()
	e := newEngine(t, Config{AutoApprove: ThresholdHigh}, nil)
	reg := tools.NewRegistry()
	reg.MustRegister(&tools.Func{S: tools.Spec{Name: "read_file", Risk: tools.RiskLow, ReadOnly: true, PathArgs: []string{"path"},
		Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}})
	c := e.Check(context.Background(), reg, nil, "read_file", `{"path":1}`, "")
	if c.ArgErr == nil || c.Result.Decision != Deny || c.Result.Source != SourceInvalidArgs {
		t.Errorf("bad args: %+v", c)
	}
	c = e.Check(context.Background(), reg, nil, "read_file", `{"path":"a"}`, "")
	if c.ArgErr != nil || c.Result.Decision != Allow || !strings.Contains(string(c.Args), `"a"`) {
		t.Errorf("good args: %+v", c)
	}
}
