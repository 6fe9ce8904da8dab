package shell

import (
	"context"
	"os/exec"
	"testing"

	"github.com/hestia-dev/hestia/internal/tools"
)

// BenchmarkOverhead compares shell_run with starting the same program
// directly; the difference is the parse, policy and sandbox overhead
// (target ≤ 5 ms). shell_run is served by the sandbox worker where
// bubblewrap runs (see internal/sandbox/worker.go).
func BenchmarkOverhead(b *testing.B) {
	r, home := newRunner(b)
	tl := r.Tools()[0]
	args := []byte(`{"command":"wc -l ` + home + `/Documents/notes.md"}`)
	b.Cleanup(func() { r.Sandbox.Close() })
	// A daemon keeps its sandbox worker between calls: start it first, so
	// the loop measures a call, not the worker's start (which runs in the
	// background; a call that finds no worker runs the one-shot way).
	if err := r.Warm(context.Background()); err != nil {
		b.Logf("no sandbox worker: %v", err)
	}
	b.Run("shell_run", func(b *testing.B) {
		for b.Loop() {
			res, err := tl.Run(context.Background(), tools.Call{Args: args})
			if err != nil || res.IsError {
				b.Fatal(err, res.Content)
			}
		}
	})
	// The one-shot path (a bubblewrap and prlimit per program), where
	// no worker serves: shell_exec, or the first call before one started.
	one, _ := newRunner(b)
	one.Sandbox.NoWorker = true
	one.Sandbox.Status(context.Background()) // the trial runs outside the loop
	oneArgs := []byte(`{"command":"wc -l ` + one.Home + `/Documents/notes.md"}`)
	oneTool := one.Tools()[0]
	b.Run("shell_run_oneshot", func(b *testing.B) {
		for b.Loop() {
			res, err := oneTool.Run(context.Background(), tools.Call{Args: oneArgs})
			if err != nil || res.IsError {
				b.Fatal(err, res.Content)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/usr/bin/wc", "-l", home+"/Documents/notes.md").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
