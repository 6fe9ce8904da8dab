package cli

import (
	"context"
	"os"
	"testing"

	"github.com/hestia-dev/hestia/internal/docs"
)

// TestMain lets the test binary stand in for `hestia sandbox-exec`, so the
// shell tools' Landlock fallback works under `go test` as in the binary.
func TestMain(m *testing.M) {
	docs.RunChildIfAsked() // and for `hestia extract`, which hestia docs starts
	if len(os.Args) > 1 && os.Args[1] == "sandbox-exec" {
		os.Exit(Main(context.Background(), os.Args[1:], OSEnv("test")))
	}
	os.Exit(m.Run())
}
