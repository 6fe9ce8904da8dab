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
