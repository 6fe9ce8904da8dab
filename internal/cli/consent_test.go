package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsentCommand: a remote model is named and off until allowed; a
// bad verb is refused.
func TestConsentCommand(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := "[llm]\nbase_url = \"https://api.hosted.example/v1\"\nmodel = \"m\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, home, nil, "consent")
	if r.code != 0 || !strings.Contains(r.stdout, "default (api.hosted.example)") || !strings.Contains(r.stdout, "Background model work: off") {
		t.Fatalf("consent: %+v", r)
	}
	if r = run(t, home, nil, "consent", "allow"); r.code != 0 || !strings.Contains(r.stdout, "on (your choice)") {
		t.Fatalf("consent allow: %+v", r)
	}
	if r = run(t, home, nil, "consent", "deny", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"allowed": false`) {
		t.Fatalf("consent deny: %+v", r)
	}
	if r = run(t, home, nil, "consent", "maybe"); r.code == 0 {
		t.Errorf("consent maybe accepted: %+v", r)
	}
}
