package cli

import (
	"context"
	"os"
	"testing"
)

// TestMain lets the test binary stand in for `hestia sandbox-exec`, so the
// shell tools' Landlock fallback works under `go test` as in the binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-exec" {
		os.Exit(Main(context.Background(), os.Args[1:], OSEnv("test")))
	}
	os.Exit(m.Run())
}
