package adversarial

import (
	"context"
	"testing"
)

// TestBwrapCases runs the shell-sandbox rows (the probes use the OS
// sandbox `hestia` itself would pick; without bubblewrap or Landlock the
// suite skips them as NeedsConfinement).
func TestBwrapCases(t *testing.T) {
	t.Parallel()
	if ok, st := confining(context.Background(), DefaultShellSandbox()); !ok {
		t.Skipf("no confining sandbox here: %s", st)
	}
	for _, c := range bwrapCases() {
		if out := Run(context.Background(), c, Options{Dir: t.TempDir()}); !out.Passed {
			t.Errorf("%s: %q", c.Name, out.Problems)
		}
	}
}
