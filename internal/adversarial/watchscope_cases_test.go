package adversarial

import (
	"context"
	"strings"
	"testing"
)

// The grant-scope row on its own (TestSuite runs it with every other case).
func TestGrantScopeCases(t *testing.T) {
	t.Parallel()
	rep := RunAll(context.Background(), grantScopeCases(), Options{Dir: t.TempDir()})
	for _, o := range rep.Outcomes {
		if !o.Passed {
			t.Errorf("%s:\n  %s", o.Name, strings.Join(o.Problems, "\n  "))
		}
	}
	if rep.Total != 2 || rep.Passed != 2 {
		t.Fatalf("%d cases, %d passed", rep.Total, rep.Passed)
	}
}
