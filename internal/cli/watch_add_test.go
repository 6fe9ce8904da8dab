package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/scheduler"
	"github.com/hestia-dev/hestia/internal/watch"
)

// `hestia watch add` against a real daemon: bad flags are refused naming
// the flag before anything is sent, --dry-run previews a mail search and
// saves nothing, a file watch is created with its delivery, and an error
// from the daemon (a path outside the file roots) is shown.
func TestWatchAddCommand(t *testing.T) {
	home, env, _ := daemonEnv(t)
	files := env["HOME"]
	target := filepath.Join(files, "report.txt")
	if err := os.WriteFile(target, []byte("v1"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch", "add", "--ref", target, "--instruction", "x"}, "--source is required"},
		{[]string{"watch", "add", "--source", "file", "--instruction", "x"}, "--ref (or --query for mail) is required"},
		{[]string{"watch", "add", "--query", "from:a", "--ref", "x"}, "not both"},
		{[]string{"watch", "add", "--query", "from:a", "--source", "url"}, "does not go with --source url"},
		{[]string{"watch", "add", "--source", "file", "--ref", target}, "--instruction is required"},
		{[]string{"watch", "add", "--source", "train", "--ref", "S1/9544/1", "--instruction", "x"}, "--event is required for train"},
		{[]string{"watch", "add", "--source", "file", "--ref", target, "--instruction", "x", "--expires", "soon"}, `--expires: "soon" is neither`},
		{[]string{"watch", "add", "--source", "file", "--ref", target, "--instruction", "x", "--deliver", "sms"}, `--deliver: "sms" is not a delivery channel`},
		{[]string{"watch", "add", "--grant", "mail_send"}, "flag provided but not defined: -grant"},
	} {
		r := run(t, home, env, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args[2:], r.code, r.stderr, tc.want)
		}
	}
	if r := run(t, home, env, "watch", "add", "--help"); !strings.Contains(r.stdout+r.stderr, "approve") {
		t.Errorf("--help does not say why grants are not offered: %+v", r)
	}

	r := run(t, home, env, "watch", "add", "--query", "from:anna@example.org invoice", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, `0 message(s) match "from:anna@example.org invoice" now`) || !strings.Contains(r.stdout, "Nothing was saved") {
		t.Fatalf("dry run: %+v", r)
	}
	if r := run(t, home, env, "watch", "add", "--query", "after:soon", "--dry-run"); r.code != 1 || !strings.Contains(r.stderr, "after:soon") {
		t.Errorf("dry run of a bad search: %+v", r)
	}
	if r := run(t, home, env, "watch", "add", "--source", "file", "--ref", target, "--dry-run"); r.code != 1 || !strings.Contains(r.stderr, "no preview") {
		t.Errorf("dry run of a file watch: %+v", r)
	}
	if r := run(t, home, env, "watch", "list", "--json"); strings.Contains(r.stdout, `"id"`) {
		t.Fatalf("a dry run saved a watch: %s", r.stdout)
	}

	r = run(t, home, env, "watch", "add", "--source", "file", "--ref", target, "--instruction", "tell me when the report changes",
		"--expires", "2d", "--deliver", "telegram,inbox", "--json")
	var w watch.Watch
	if err := json.Unmarshal([]byte(r.stdout), &w); r.code != 0 || err != nil {
		t.Fatalf("add: %+v (%v)", r, err)
	}
	if w.Source != "file" || w.Ref != target || strings.Join(w.Deliver, ",") != "inbox,telegram" || len(w.Rules) != 1 || w.Rules[0].Event != "file.changed" ||
		w.ExpiresAt.Before(time.Now().Add(47*time.Hour)) || w.ExpiresAt.After(time.Now().Add(49*time.Hour)) {
		t.Fatalf("created watch = %+v", w)
	}
	r = run(t, home, env, "watch", "add", "--source", "url", "--ref", "https://example.org/", "--instruction", "x", "--expires", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, "on url.changed") {
		// example.org is not reachable in every test environment: the
		// daemon's refusal must then name the first read.
		if r.code != 1 || !strings.Contains(r.stderr, "first snapshot") {
			t.Errorf("url watch: %+v", r)
		}
	}
	if r := run(t, home, env, "watch", "add", "--source", "file", "--ref", "/etc/hostname", "--instruction", "x", "--expires", "1h"); r.code != 1 || r.stderr == "" {
		t.Errorf("a file outside the roots: %+v", r)
	}
}

// `hestia jobs run NAME --wait` prints the run's result (the job's final
// answer) and exits non-zero when the run failed.
func TestJobsRunWaitPrintsResult(t *testing.T) {
	home, env, _ := daemonEnv(t, llmtest.Text("Two new messages today; nothing urgent."), llmtest.Fail(400, `{"error":{"message":"no such model"}}`))
	if r := run(t, home, env, "jobs", "add", "brief", "--every", "24h", "--prompt", "brief me", "--deliver", "inbox,fax"); r.code != 2 || !strings.Contains(r.stderr, `"fax"`) {
		t.Errorf("bad --deliver: %+v", r)
	}
	if r := run(t, home, env, "jobs", "add", "brief", "--every", "24h", "--prompt", "brief me", "--deliver", "inbox"); r.code != 0 {
		t.Fatalf("add: %+v", r)
	}
	r := run(t, home, env, "jobs", "run", "brief", "--wait")
	if r.code != 0 || !strings.Contains(r.stdout, "Two new messages today; nothing urgent.") {
		t.Fatalf("run --wait: %+v", r)
	}
	r = run(t, home, env, "jobs", "run", "brief", "--wait", "--json")
	var run2 scheduler.Run
	// The model refuses the second run: it fails, and so does the command.
	if err := json.Unmarshal([]byte(r.stdout), &run2); r.code != 1 || err != nil || run2.Status == scheduler.StatusOK {
		t.Fatalf("failed run --wait: %+v (%v)", r, err)
	}
	if r := run(t, home, env, "jobs", "deliver", "brief", "--to", "push,telegram"); r.code != 0 || !strings.Contains(r.stdout, "push, telegram") {
		t.Errorf("jobs deliver: %+v", r)
	}
	if r := run(t, home, env, "jobs", "deliver", "brief", "--to", "pager"); r.code != 2 || !strings.Contains(r.stderr, `"pager"`) {
		t.Errorf("jobs deliver with a bad channel: %+v", r)
	}
}
