//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
)

// worker exists only on Linux, where bubblewrap does.
type worker struct{}

// Run always answers ErrNoWorker here: workers need bubblewrap.
func (s *Sandbox) Run(context.Context, Spec, []string, []Job) ([]string, error) {
	return nil, ErrNoWorker
}

// Warm always answers ErrNoWorker here.
func (s *Sandbox) Warm(context.Context, Spec) error { return ErrNoWorker }

// Close has no workers to stop here.
func (s *Sandbox) Close() error { return nil }

// WorkerCount is always 0 here.
func (s *Sandbox) WorkerCount() int { return 0 }

func serveWorker(_ []string, stderr io.Writer) int {
	fmt.Fprintln(stderr, "hestia sandbox-exec: workers need Linux")
	return 126
}
