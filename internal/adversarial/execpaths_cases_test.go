package adversarial

import (
	"testing"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
)

// The code-execution rows alone (TestSuite runs them with the rest): one
// chat case per place × write_file/edit_file and one real-tool probe per
// place for mail_save_attachment.
func TestExecPathCases(t *testing.T) {
	t.Parallel()
	var cs []Case
	for _, c := range Cases() {
		if c.Category == CatExec {
			cs = append(cs, c)
		}
	}
	n := 0
	for _, r := range pathpolicy.ExecRules() {
		n += len(r.Examples)
	}
	if len(cs) != 3*n {
		t.Fatalf("%d code-execution cases for %d places, want 3 each", len(cs), n)
	}
	rep := requireAll(t, cs, Options{Model: llmtestModel(t)})
	t.Logf("code-execution cases: %d, %d passed, %d failed", rep.Total, rep.Passed, rep.Failed)
}
