package app

import (
	"os"
	"testing"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/sandbox"
)

// TestMain lets the test binary stand in for `hestia extract` and `hestia
// sandbox-exec`, the children the daemon starts from its own executable
// (os.Executable, which is this binary under test). Without it each child
// ran the whole package's tests again, in parallel with the parent, and
// left their homes behind when it was stopped.
func TestMain(m *testing.M) {
	docs.RunChildIfAsked()
	sandbox.RunHelperIfAsked()
	os.Exit(m.Run())
}
