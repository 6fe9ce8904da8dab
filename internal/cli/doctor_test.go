package cli

import (
	"encoding/json"
	"testing"
)

func TestDoctorIncludesDaemonChecks(t *testing.T) {
	t.Parallel()
	home, env, _ := daemonEnv(t)
	r := run(t, home, env, "doctor", "--json")
	if r.code != 0 {
		t.Fatalf("doctor: %+v", r)
	}
	var rep struct {
		OK     bool
		Checks []struct{ Name, Status, Detail string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, c := range rep.Checks {
		if _, dup := names[c.Name]; dup {
			t.Errorf("check %s listed twice", c.Name)
		}
		names[c.Name] = c.Status
	}
	// llm.tiers is made by the daemon's model router, not by the CLI.
	if names["daemon"] != "ok" || names["llm.tiers"] == "" {
		t.Fatalf("checks = %v", names)
	}
}
