package shell

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/sandbox"
)

// workerRunner is newRunner with its sandbox worker started, skipped
// where bubblewrap does not run.
func workerRunner(t *testing.T, timeout time.Duration) (*Runner, string) {
	t.Helper()
	r, home := newRunner(t)
	r.Timeout = timeout
	t.Cleanup(func() { r.Sandbox.Close() })
	if st := r.Sandbox.Status(context.Background()); st.Mode != sandbox.Bubblewrap {
		t.Skipf("no bubblewrap here: %s", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := r.Warm(ctx); err != nil {
		t.Fatalf("starting the worker: %v", err)
	}
	return r, home
}

// served runs a line and fails unless the sandbox worker ran it.
func served(t *testing.T, r *Runner, line string) (string, bool) {
	t.Helper()
	before := r.Sandbox.WorkerCalls()
	out, isErr := run(t, r, line)
	if r.Sandbox.WorkerCalls() != before+1 {
		t.Fatalf("%s: not run by the sandbox worker:\n%s", line, out)
	}
	return out, isErr
}

// TestShellRunInWorker: the cases of TestShellRunWorks, the output cap
// and the timeout give the same results when the sandbox worker runs the
// programs, and the worker serves the next call after a kill.
func TestShellRunInWorker(t *testing.T) {
	t.Parallel()
	r, home := workerRunner(t, 20*time.Second)
	for _, c := range []struct{ line, want string }{
		{"grep -ril invoice ~/Documents/invoice-2024.txt ~/Documents/sub | sort", "exit: 0 | 0\n" + home + "/Documents/invoice-2024.txt\n" + home + "/Documents/sub/invoice.txt"},
		{"cat ~/Documents/invoice-2024.txt | head -1", "exit: 0 | 0\nInvoice 2024\n"},
		{"wc -l Documents/notes.md", "1 Documents/notes.md"},
		{`grep -c "total: 120" ~/Documents/*.txt`, "1"},
		{"ls ~/Documents/sub 2>/dev/null", "invoice.txt"},
		{"find ~/Downloads -type f -size -2k", home + "/Downloads/small.bin"},
		{"echo 'a  b' \"c\\\"d\" e\\ f", "a  b c\"d e f"},
		{"grep -rc api_key ~/Documents/sub", "invoice.txt:0"},
		{"cat ~/Documents/nope.txt 2>&1", "No such file"},
		{"ls ~/Documents/nope 2>/dev/null", "exit: 2"},
		{"grep -c zzz ~/Documents/notes.md", "exit: 1\n0"},
	} {
		out, isErr := served(t, r, c.line)
		if isErr || !strings.Contains(out, c.want) || !strings.Contains(out, "[sandbox: bubblewrap]") {
			t.Errorf("%s:\n%s\n(want %q)", c.line, out, c.want)
		}
	}
	r.MaxOutput, r.MaxRead = 1000, 100_000
	out, _ := served(t, r, "seq 1 100000000")
	if !strings.Contains(out, "[output cut:") || len(out) > 3000 || !strings.Contains(out, "signal: killed") {
		t.Fatalf("output cap:\n%s", out)
	}
	if out, isErr := served(t, r, "wc -l Documents/notes.md"); isErr || !strings.Contains(out, "1 Documents/notes.md") {
		t.Fatalf("after the output cap:\n%s", out)
	}
	if n := r.Sandbox.WorkerCount(); n != 1 {
		t.Errorf("%d workers, want 1", n)
	}
}

func TestShellTimeoutInWorker(t *testing.T) {
	t.Parallel()
	r, _ := workerRunner(t, time.Second)
	start := time.Now()
	out, isErr := served(t, r, "seq 1 1000000000000000 | tail -n 1")
	if !isErr || !strings.Contains(out, "stopped after the 1s timeout") || !strings.Contains(out, "signal: killed") {
		t.Fatalf("%s", out)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the 1 s timeout took %s", d)
	}
	if out, isErr := served(t, r, "wc -l Documents/notes.md"); isErr || !strings.Contains(out, "1 Documents/notes.md") {
		t.Fatalf("after the timeout:\n%s", out)
	}
}

func TestShellEnvironmentInWorker(t *testing.T) {
	t.Setenv("HESTIA_LLM_API_KEY", "sk-should-not-leak")
	r, _ := workerRunner(t, 20*time.Second)
	r.defaults()
	if _, err := r.lookPath("jq"); err != nil && os.Getenv("HESTIA_REQUIRE_SERVICES") != "1" {
		t.Skip("jq is not installed (.ci/packages.d/shell.txt)")
	}
	out, isErr := served(t, r, "jq -n env")
	if isErr || strings.Contains(out, "leak") || !strings.Contains(out, `"HOME"`) {
		t.Fatalf("%s", out)
	}
}
