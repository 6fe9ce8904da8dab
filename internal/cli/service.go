package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/service"
)

const serviceUsage = "usage: hestia service install [--no-start] [--exe PATH] | uninstall | start | stop | status | logs [-n N] [-f]"

// runService manages Hestia as a user service (internal/service).
func runService(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", serviceUsage)
	}
	sub, rest := args[0], args[1:]
	fs := env.flags("service " + sub)
	var noStart *bool
	var exe *string
	var lines *int
	var follow *bool
	switch sub {
	case "install":
		noStart = fs.Bool("no-start", false, "write and enable the service without starting it")
		exe = fs.String("exe", "", "the hestia binary the service runs (default: this one)")
	case "logs":
		lines = fs.Int("n", 200, "how many recent lines")
		follow = fs.Bool("f", false, "keep printing new lines")
	case "uninstall", "start", "stop", "status":
	default:
		return usagef("unknown subcommand %q; %s", sub, serviceUsage)
	}
	if err := parse(fs, rest, 0); err != nil {
		return err
	}
	m, err := env.serviceManager(exe)
	if err != nil {
		return err
	}
	switch sub {
	case "install":
		return m.Install(ctx, !*noStart)
	case "uninstall":
		return m.Uninstall(ctx)
	case "start":
		return m.Start(ctx)
	case "stop":
		return m.Stop(ctx)
	case "status":
		return m.Status(ctx)
	default:
		if *lines <= 0 {
			return usagef("-n must be positive, not %d", *lines)
		}
		return m.Logs(ctx, *lines, *follow)
	}
}

// serviceManager builds the manager for this user and home. exe is set
// for install only: the binary the unit runs, when empty the running one.
func (env *Env) serviceManager(exePtr *string) (*service.Manager, error) {
	// Paths only, not the configuration: a broken config.toml must not
	// stop `hestia service stop`.
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return nil, err
	}
	exe := ""
	if exePtr != nil {
		if exe = *exePtr; exe == "" {
			if exe, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("finding this hestia binary: %w", err)
			}
			// `go run` builds into a temporary directory that is gone later.
			if strings.Contains(exe, string(filepath.Separator)+"go-build") {
				return nil, fmt.Errorf("this hestia (%s) is a temporary `go run` build: install it first (`make install`) and run that one", exe)
			}
		}
		if exe, err = filepath.Abs(exe); err != nil {
			return nil, err
		}
	}
	hhome := env.Getenv("HESTIA_HOME")
	if hhome != "" {
		if hhome, err = filepath.Abs(hhome); err != nil {
			return nil, err
		}
	}
	uhome := env.Getenv("HOME")
	if uhome == "" {
		if uhome, err = os.UserHomeDir(); err != nil {
			return nil, fmt.Errorf("finding your home directory: %w", err)
		}
	}
	name := env.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	run := env.serviceRun
	if run == nil {
		run = runCommand
	}
	return &service.Manager{
		GOOS: runtime.GOOS, UserHome: uhome, ConfigHome: env.Getenv("XDG_CONFIG_HOME"),
		UID: os.Getuid(), User: name,
		Spec:   service.Spec{Exe: exe, HestiaHome: hhome, LogDir: paths.Logs},
		Run:    run,
		Stdout: env.Stdout, Stderr: env.Stderr,
	}, nil
}

// runCommand is the real service.Runner.
func runCommand(ctx context.Context, stdout, stderr io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%s is not installed: %w", name, err)
		}
		return err
	}
	return nil
}

// runRestart asks the running daemon to restart and waits until it
// answers again.
func runRestart(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("restart")
	wait := fs.Duration("wait", time.Minute, "how long to wait for the daemon to answer again (0: do not wait)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *wait < 0 {
		return usagef("--wait must not be negative, not %s", *wait)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	// The old process's record stays until it has shut down: only one
	// written after this moment is the new process's.
	asked := time.Now()
	if err := c.Do(ctx, "POST", "/api/system/restart", nil, nil); err != nil {
		return fmt.Errorf("asking the daemon to restart: %w", err)
	}
	if *wait == 0 {
		fmt.Fprintln(env.Stdout, "The daemon is restarting.")
		return nil
	}
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return err
	}
	rec := filepath.Join(paths.Data, daemonaddr.FileName)
	deadline := time.Now().Add(*wait)
	for {
		// A new record (written once the new process listens) and a
		// daemon that proves it holds the token.
		if r, err := daemonaddr.Read(rec); err == nil && r.StartedAt.After(asked) {
			if _, err := env.daemon(); err == nil {
				fmt.Fprintf(env.Stdout, "Hestia restarted (pid %d) and is listening on %s.\n", r.PID, r.Addr)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon did not answer again within %s; see `hestia service logs` or its log in %s", *wait, paths.Logs)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
