package shell

import (
	"context"
	"os/exec"
	"testing"

	"github.com/hestia-dev/hestia/internal/tools"
)

// BenchmarkOverhead compares shell_run with starting the same program
// directly; the difference is the parse, policy and sandbox overhead
// (target ≤ 5 ms).
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
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/usr/bin/wc", "-l", home+"/Documents/notes.md").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
