package eval

import (
	"os"
	"testing"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/sandbox"
)

// TestMain lets the test binary stand in for `hestia extract` and `hestia
// sandbox-exec`, the children the daemon starts from its own executable.
func TestMain(m *testing.M) {
	docs.RunChildIfAsked()
	sandbox.RunHelperIfAsked()
	os.Exit(m.Run())
}
