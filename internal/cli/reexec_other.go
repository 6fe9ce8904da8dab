//go:build !unix

package cli

import "fmt"

const restartExitCode = 75

// reexec exits with restartExitCode where exec(2) does not exist; a service
// manager starts the daemon again.
func reexec(env *Env) error {
	fmt.Fprintf(env.Stderr, "hestia serve: stopped for a restart; exiting with status %d so a service manager starts it again\n", restartExitCode)
	return exitError{restartExitCode}
}
