// Package fast runs the commands people run one process at a time — `mail
// search|read|thread`, `mail import|reconcile` (rescans) and `wiki search` —
// in the small `hestia` front binary. Each runs as its own process per
// query, as people run `notmuch search` and `notmuch new`, so start-up is
// most of what the user waits for: this
// package imports no model, tool, server or document code, and the front
// starts in a fraction of the time the whole program takes. Every other
// command is handed to hestia-core (see cmd/hestia). The full command line
// (internal/cli) calls the same functions, so both binaries answer alike.
package fast

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/logging"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/wiki"
)

// Env is what a command runs with. Tests pass their own.
type Env struct {
	Stdin    io.Reader
	Stdout   io.Writer
	Stderr   io.Writer
	Getenv   config.Env
	Version  string
	LogLevel string // from --log-level; empty keeps each command's default

	// Set when the daemon answers a query on its socket (see Answer): its
	// open stores, and the time zone of the user who asked.
	Mail *mail.Store
	Wiki *wiki.Wiki
	Zone *time.Location

	// Daemon, when set, connects to the home's running daemon over its
	// HTTP API, for a search with its vectors loaded. hestia-core sets it
	// (package daemonclient); hestia-fast does not link an HTTP client:
	// the front has asked the daemon over its socket before it.
	Daemon func() (DaemonClient, error)
}

// DaemonClient sends a JSON request to the daemon and decodes its answer.
type DaemonClient interface {
	Do(ctx context.Context, method, path string, body, out any) error
}

// zone is where dates are read and shown: the asking user's local time.
func (env *Env) zone() *time.Location {
	if env.Zone != nil {
		return env.Zone
	}
	return time.Local
}

// OSEnv is the Env of the real process.
func OSEnv(version string) *Env {
	return &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: config.OSEnv, Version: version}
}

// ErrUsage marks errors caused by bad arguments (exit status 2).
var ErrUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string   { return e.msg }
func (e usageError) Is(t error) bool { return t == ErrUsage }

// Usagef returns an error that reports bad arguments (exit status 2).
func Usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// Flags returns a FlagSet for a subcommand that prints to stderr.
func (env *Env) Flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("hestia "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// Parse parses args, turning flag errors into usage errors and refusing
// unexpected positional arguments when maxArgs >= 0.
func Parse(fs *flag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		return Usagef("unexpected argument %q", fs.Arg(maxArgs))
	}
	return nil
}

// ParseInterleaved allows flags after the free-text words.
func ParseInterleaved(fs *flag.FlagSet, args []string) error {
	var words []string
	for {
		if err := Parse(fs, args, -1); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, words...))
}

// Load resolves paths and configuration.
func (env *Env) Load() (config.Paths, config.Config, error) {
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return config.Paths{}, config.Config{}, err
	}
	cfg, err := config.Load(paths, env.Getenv)
	if err != nil {
		return config.Paths{}, config.Config{}, err
	}
	if env.LogLevel != "" {
		cfg.Log.Level = env.LogLevel
		if err := cfg.Validate(); err != nil {
			return config.Paths{}, config.Config{}, Usagef("--log-level: %v", err)
		}
	}
	return paths, cfg, nil
}

// Paths resolves the home's folders from the environment alone, without
// reading the configuration (what finding the daemon needs).
func (env *Env) Paths() (config.Paths, error) { return config.ResolvePaths(env.Getenv) }

// open resolves what a command that works on a store directly needs: the
// paths (created when missing), the configuration and its logger.
func (env *Env) open() (config.Paths, config.Config, *slog.Logger, error) {
	paths, cfg, err := env.Load()
	if err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	if err := paths.Ensure(); err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	log, err := env.Logger()
	if err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	return paths, cfg, log, nil
}

// Logger is the logger of a command that works on the stores directly:
// stderr only, at warn and above unless --log-level says otherwise.
func (env *Env) Logger() (*slog.Logger, error) {
	level := slog.LevelWarn
	if env.LogLevel != "" {
		level, _ = logging.ParseLevel(env.LogLevel)
	}
	log, _, err := logging.New(logging.Options{Level: level, Console: env.Stderr})
	return log, err
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// DateFlag reads a YYYY-MM-DD flag value in local time.
func (env *Env) DateFlag(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, v, env.zone())
	if err != nil {
		return time.Time{}, Usagef("--%s %q is not a date like 2026-06-01", name, v)
	}
	return t, nil
}

// IDArg reads the one positional message id of `mail read|thread`.
func IDArg(fs *flag.FlagSet, what string) (int64, error) {
	if fs.NArg() != 1 {
		return 0, Usagef("usage: hestia mail %s ID", what)
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		return 0, Usagef("message id %q is not a number", fs.Arg(0))
	}
	return id, nil
}
