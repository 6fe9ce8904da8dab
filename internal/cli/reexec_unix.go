//go:build unix

package cli

import (
	"fmt"
	"os"
	"syscall"
)

// restartExitCode is the status of a daemon that was asked to restart and
// could not re-execute itself: the systemd unit's Restart=on-failure and the
// launchd agent's KeepAlive start it again (internal/service).
const restartExitCode = 75

// reexec replaces this process with a fresh run of the same binary, same
// arguments and environment. In place rather than a child: the PID stays,
// so a service manager, a terminal's job control or a parent waiting on it
// keep following the daemon. os.Executable names the file now at that
// path, so an upgrade installed over the binary is what starts.
func reexec(env *Env) error {
	exe, err := os.Executable()
	if err == nil {
		fmt.Fprintln(env.Stdout, "Restarting Hestia…")
		err = syscall.Exec(exe, os.Args, os.Environ())
	}
	fmt.Fprintf(env.Stderr, "hestia serve: restarting: %v (exiting with status %d so a service manager starts it again)\n", err, restartExitCode)
	return exitError{restartExitCode}
}
