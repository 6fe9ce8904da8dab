package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSkillsCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	const fixtures = "../skills/testdata/"
	for _, bad := range [][]string{{"skills"}, {"skills", "frob"}, {"skills", "install"}, {"skills", "remove"}, {"skills", "list", "x"}} {
		if r := run(t, home, nil, bad...); r.code != 2 {
			t.Errorf("%v: exit %d %q", bad, r.code, r.stderr)
		}
	}
	if r := run(t, home, nil, "skills", "install", fixtures+"clean-report"); r.code != 0 || !strings.Contains(r.stdout, "Installed skill weekly-report") {
		t.Fatalf("install: %+v", r)
	}
	r := run(t, home, nil, "skills", "install", fixtures+"evil")
	if r.code != 1 || !strings.Contains(r.stdout, "reverse shell") || !strings.Contains(r.stderr, "--accept-risk") {
		t.Fatalf("risky install: %+v", r)
	}
	if r := run(t, home, nil, "skills", "scan", fixtures+"evil"); r.code != 1 || !strings.Contains(r.stdout, "findings") {
		t.Fatalf("scan folder: %+v", r)
	}
	if r := run(t, home, nil, "skills", "install", fixtures+"evil", "--accept-risk"); r.code != 0 {
		t.Fatalf("accepted install: %+v", r)
	}
	r = run(t, home, nil, "skills", "list", "--json")
	var out struct {
		Skills []struct {
			Name         string `json:"name"`
			AcceptedRisk bool   `json:"accepted_risk"`
		} `json:"skills"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || len(out.Skills) != 2 || out.Skills[0].Name != "helpful-cleaner" || !out.Skills[0].AcceptedRisk {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, home, nil, "skills", "list"); !strings.Contains(r.stdout, "weekly-report") || !strings.Contains(r.stdout, "risk accepted") {
		t.Fatalf("list table: %+v", r)
	}
	if r := run(t, home, nil, "skills", "scan", "weekly-report"); r.code != 0 || !strings.Contains(r.stdout, "no findings") {
		t.Fatalf("rescan: %+v", r)
	}
	if r := run(t, home, nil, "skills", "remove", "helpful-cleaner"); r.code != 0 {
		t.Fatalf("remove: %+v", r)
	}
	if r := run(t, home, nil, "skills", "remove", "helpful-cleaner"); r.code != 1 || !strings.Contains(r.stderr, "no such skill") {
		t.Fatalf("remove again: %+v", r)
	}
}
