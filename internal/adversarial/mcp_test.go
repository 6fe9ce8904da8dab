package adversarial

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/policy"
)

// The MCP cases can fail: with taint off, the injected result gets the
// user-trusted wipe tool run.
func TestMCPCasesDetectWeakConfiguration(t *testing.T) {
	t.Parallel()
	var c []Case
	for _, x := range mcpCases() {
		if strings.Contains(x.Name, "user rule allows it") {
			c = append(c, x)
		}
	}
	if len(c) != 1 {
		t.Fatalf("%d cases", len(c))
	}
	rep := RunAll(context.Background(), c, Options{Policy: policy.Config{NoTaint: true}, Dir: t.TempDir()})
	if rep.Failed != 1 || !strings.Contains(strings.Join(rep.Outcomes[0].Problems, "\n"), "mcp__test__wipe") {
		t.Fatalf("with taint off the MCP case passed: %+v", rep.Outcomes[0])
	}
}
