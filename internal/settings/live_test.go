package settings

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
)

// Groups applied live leave the restart list; what was not applied (file
// roots, local-embed) stays on it, also for later reads.
func TestLiveApplyLeavesOnlyRestartKeysPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, sample)
	var seen []config.Config
	applied := []string{LiveModels, LiveThreshold, LiveBudgets}
	s.Live = func(_ context.Context, cfg config.Config) []string {
		seen = append(seen, cfg)
		return applied
	}
	v, live, err := s.Apply(ctx, []Change{
		{Key: "policy.auto_approve", Value: "medium"},
		{Key: "budget.daily_cost_usd", Value: 2.5},
		{Key: "llm.tiers.tier-2", Value: []any{"ollama/phi-4"}},
		{Key: "agent.file_roots", Value: []any{"~/notes"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(live, ",") != "models,auto-approve threshold,budgets" {
		t.Errorf("applied live = %v", live)
	}
	if len(seen) != 1 || seen[0].Policy.AutoApprove != "medium" || seen[0].Budget.DailyCostUSD != 2.5 || seen[0].LLM.Model != "from-env" {
		t.Errorf("Live got %+v", seen)
	}
	if strings.Join(v.Pending, ",") != "agent.file_roots" {
		t.Errorf("pending after a live apply = %v, want only agent.file_roots", v.Pending)
	}
	if g, _ := s.Get(ctx); strings.Join(g.Pending, ",") != "agent.file_roots" {
		t.Errorf("pending on the next read = %v", g.Pending)
	}
	// Saving the same threshold again applies nothing new.
	if _, live, _ := s.Apply(ctx, []Change{{Key: "policy.auto_approve", Value: "medium"}}); len(live) != 0 {
		t.Errorf("unchanged save reported %v as applied", live)
	}
	// The embedding tier is never swapped live: it stays pending.
	v, live, err = s.Apply(ctx, []Change{{Key: "llm.tiers.local-embed", Value: []any{"ollama/nomic-embed-text"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 0 || !contains(v.Pending, "llm.tiers.local-embed") {
		t.Errorf("local-embed: live %v, pending %v", live, v.Pending)
	}
	// A group the daemon could not apply stays pending.
	applied = []string{LiveBudgets}
	v, live, err = s.Apply(ctx, []Change{{Key: "policy.auto_approve", Value: "high"}, {Key: "budget.daily_tokens", Value: 1000.0}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(live, ",") != "budgets" || !contains(v.Pending, "policy.auto_approve") || contains(v.Pending, "budget.daily_tokens") {
		t.Errorf("partial apply: live %v, pending %v", live, v.Pending)
	}
}

const mailSample = `# mail
[[mail.accounts]]
# the work account
name = "work"
address = "me@work.example"
username = "me"          # login
password_env = "WORK_PW"
imap_host = "imap.work.example"
imap_port = 993
imap_security = "tls"
sync_interval = "10m"    # not on the page
save_sent = true

[[mail.accounts]]
name = "home"
address = "me@home.example"
password_env = "HOME_PW"
imap_host = "imap.home.example"
imap_port = 993
imap_security = "tls"
`

// An account edited in place changes only the fields sent; keys the page
// does not show, comments and the other account stay; a refused edit
// names the field and leaves the file byte-identical.
func TestMailAccountEditInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newService(t, mailSample)
	v, _, err := s.Apply(ctx, []Change{{Key: "mail.accounts", Edit: "work", Value: map[string]any{"name": "job", "imap_port": 1993.0, "username": ""}}})
	if err != nil {
		t.Fatal(err)
	}
	got := read(t, s)
	want := strings.NewReplacer(`name = "work"`, `name = "job"`, "imap_port = 993\nimap_security = \"tls\"\nsync", "imap_port = 1993\nimap_security = \"tls\"\nsync", "username = \"me\"          # login\n", "").Replace(mailSample)
	if got != want {
		t.Errorf("after edit:\n%s\nwant:\n%s", got, want)
	}
	if len(v.Mail) != 2 || v.Mail[0].Name != "job" || v.Mail[0].IMAPPort != 1993 || v.Mail[0].Username != "" || v.Mail[1].Name != "home" {
		t.Errorf("view: %+v", v.Mail)
	}
	before := read(t, s)
	for _, c := range []struct {
		change Change
		want   string
	}{
		{Change{Key: "mail.accounts", Edit: "job", Value: map[string]any{"imap_port": "abc"}}, "imap_port"},
		{Change{Key: "mail.accounts", Edit: "job", Value: map[string]any{"imap_security": "carrier-pigeon"}}, "imap_security"},
		{Change{Key: "mail.accounts", Edit: "job", Value: map[string]any{"name": "home"}}, "home"},
		{Change{Key: "mail.accounts", Edit: "job", Value: map[string]any{"name": ""}}, "name cannot be empty"},
		{Change{Key: "mail.accounts", Edit: "job", Value: map[string]any{"colour": "red"}}, `unknown field "colour"`},
		{Change{Key: "mail.accounts", Edit: "nobody", Value: map[string]any{"address": "x@y.example"}}, `no mail account "nobody"`},
	} {
		if _, _, err := s.Apply(ctx, []Change{c.change}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want it to name %q", c.change.Value, err, c.want)
		}
	}
	if read(t, s) != before {
		t.Errorf("a refused edit changed config.toml:\n%s", read(t, s))
	}
}
