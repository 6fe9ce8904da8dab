package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
)

func TestSelftestSecurity(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := run(t, home, nil, "selftest", "security", "--run", "secrets:")
	if r.code != 0 || !strings.Contains(r.stdout, "6 cases: 6 passed, 0 failed") {
		t.Fatalf("default config: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The origin matrix alone: every origin × side-effecting tool ×
	// condition, with its size and result.
	r = run(t, home, nil, "selftest", "security", "--run", "matrix")
	// Every origin the daemon has is a row: at least the nine of the
	// authority issue (more as channels and voice add theirs).
	m := regexp.MustCompile(`Origin matrix: (\d+) origins`).FindStringSubmatch(r.stdout)
	origins := 0
	if m != nil {
		origins, _ = strconv.Atoi(m[1])
	}
	if r.code != 0 || origins < 9 || !strings.Contains(r.stdout, " 0 failed") {
		t.Fatalf("origin matrix: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// The install's own rules are copied in; with taint tracking switched
	// off, a permissive rule lets injected mail exfiltrate, and the
	// self-test says so.
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, paths.DB(policy.Schema.Name), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := policy.NewRuleStore(ctx, db, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Create(ctx, policy.Rule{Tool: "http_request", Decision: policy.Allow, Priority: 50}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	weak := map[string]string{"HESTIA_SAFETY_TAINT": "false"}
	r = run(t, home, weak, "selftest", "security", "--json", "--run", "web injection → http_request")
	var rep struct {
		Total, Passed, Failed int
		Rules                 int `json:"install_rules"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 || rep.Total != 2 || rep.Failed != 2 || rep.Rules != 1 {
		t.Fatalf("taint off: code %d %+v %v\n%s", r.code, rep, err, r.stderr)
	}
	if r := run(t, home, nil, "selftest", "security", "--run", "no such case"); r.code != 2 {
		t.Fatalf("no match: %+v", r)
	}
	if r := run(t, home, nil, "selftest"); r.code != 2 || !strings.Contains(r.stderr, "selftest security") {
		t.Fatalf("usage: %+v", r)
	}
}
