package cli

import (
	"context"

	"github.com/hestia-dev/hestia/internal/docs"
)

// runExtract is the document-extraction child the daemon starts (see
// internal/docs): it reads one document on stdin and writes JSON text.
func runExtract(_ context.Context, env *Env, args []string) error {
	if code := docs.ChildMain(args, env.Stdin, env.Stdout, env.Stderr); code != 0 {
		return exitError{code}
	}
	return nil
}
