// Package cli implements the hestia command line: it parses arguments,
// builds an app.App where needed and prints results. Each domain keeps its
// commands in its own file and adds them to commands().
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/logging"
	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/service"
)

// Env is what a command runs with. Tests pass their own.
type Env struct {
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	Getenv  config.Env
	Version string

	logLevel   string
	serviceRun service.Runner // nil: the real systemctl/launchctl (tests substitute)
}

// command is one subcommand. run returns a usageError for bad arguments.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

// commands lists every subcommand. Each domain adds its entries here.
func commands() []command {
	return []command{
		{"serve", "run the daemon (web UI, API, background work)", runServe},
		{"setup", "first-run setup: model, mail, calendar, contacts, file roots, Telegram; each tested before saving (--step NAME)", runSetup},
		{"config", "show the effective configuration (secrets masked)", runConfig},
		{"doctor", "check the installation's health", runDoctor},
		{"backup", "copy every store into a directory with a manifest", runBackup},
		{"restore", "restore a backup into an empty home", runRestore},
		{"pair", "pair another device: a one-time link, code and QR code (--name, --scopes); --local shows the code a browser on this machine asks for", runPair},
		{"devices", "list paired devices or revoke one (list|revoke ID [--json])", runDevices},
		{"remote", "let a phone on the LAN reach the daemon over TLS: enable [--host NAME] [--addr HOST:PORT] | disable | status", runRemote},
		{"version", "print the version", runVersion},
		{"selftest", "run the adversarial security suite against this install's policy (selftest security)", runSelftest},
		{"usage", "show model usage and estimated cost (--json, --period 7d|30d|all)", runUsage},
		{"chat", "chat with the assistant (interactive, or --once TEXT)", runChat},
		{"call", "ring your phone over SIP and talk with the assistant: call [TEXT] [--chat ID] [--wait], call --status", runCall},
		{"policy", "test tool calls against the policy; list, add, remove trust rules", runPolicy},
		{"audit", "show the audit trail; `audit verify` checks the hash chain", runAudit},
		{"mail", "import, search and read mail; list send operations", runMail},
		{"jobs", "scheduled jobs: list, history, run (--wait prints the result), add, remove, deliver (--json)", runJobs},
		{"skills", "skills: install PATH|URL [--accept-risk], list [--json], remove NAME, scan NAME|PATH", runSkills},
		{"mcp", "MCP: serve Hestia's tools over stdio to an outside agent; list configured servers", runMCP},
		{"watch", "watches: list, show, stop, add (--dry-run previews a mail search) (--json)", runWatch},
		{"actions", "the Action Center: list proposed work found in new mail (--json)", runActions},
		{"consent", "background model work on your mail and chats: show, allow, deny (--json)", runConsent},
		{"extract", "extract a document's text from stdin as JSON (the daemon's sandboxed helper)", runExtract},
		{"docs", "documents: info, read a page, search one file (as the assistant's tools do)", runDocs},
		{"cal", "calendar: agenda, search, free slots, import/sync vdir folders", runCal},
		{"tasks", "tasks (to-dos) from your calendars: list (overdue first), add TEXT, done|edit|delete UID|TEXT (--json)", runTasks},
		{"wiki", "search, read, lint, reindex and import into the Markdown wiki", runWiki},
		{"contacts", "contacts: search, resolve a name to recipients, import/sync vdir folders", runContacts},
		{"accounts", "OAuth accounts (Google, Microsoft 365): list [--json], connect NAME [--device], disconnect NAME", runAccounts},
		{"memory", "profile memory (USER.md, MEMORY.md, AGENT.md) and the promotion queue", runMemory},
		{"service", "run Hestia in the background: service install|uninstall|start|stop|status|logs (systemd user unit, launchd agent)", runService},
		{"restart", "restart the running daemon (re-executes it in place) and wait until it answers", runRestart},
		{"eval", "run the evaluation suite against a model endpoint (--base-url, --model, --api-key, --provider, --json FILE)", runEval},
	}
}

// ErrUsage marks errors caused by bad arguments (exit status 2).
var ErrUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string   { return e.msg }
func (e usageError) Is(t error) bool { return t == ErrUsage }

// usagef returns an error that reports bad arguments (exit status 2).
func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// exitError carries a specific exit status without an extra message.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// Main runs the command line and returns the process exit status.
func Main(ctx context.Context, args []string, env *Env) int {
	global := flag.NewFlagSet("hestia", flag.ContinueOnError)
	global.SetOutput(env.Stderr)
	global.StringVar(&env.logLevel, "log-level", "", "log level: debug, info, warn, error")
	showVersion := global.Bool("version", false, "print the version")
	global.Usage = func() { printHelp(env.Stderr) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := global.Args()
	if *showVersion {
		fmt.Fprintln(env.Stdout, "hestia", env.Version)
		return 0
	}
	if len(rest) == 0 || rest[0] == "help" || rest[0] == "-h" || rest[0] == "--help" {
		printHelp(env.Stdout)
		if len(rest) == 0 {
			return 2
		}
		return 0
	}
	if rest[0] == "sandbox-exec" { // hidden: the shell tools' confinement helper
		return sandbox.Main(rest[1:], env.Stderr)
	}
	for _, c := range commands() {
		if c.name != rest[0] {
			continue
		}
		if len(rest) == 2 && isHelpArg(rest[1]) {
			return commandHelp(ctx, env, c)
		}
		err := c.run(ctx, env, rest[1:])
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return exitCode(env, c.name, err)
	}
	fmt.Fprintf(env.Stderr, "hestia: unknown command %q (run `hestia help`)\n", rest[0])
	return 2
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "Hestia — a local-first personal assistant.\n\nUsage: hestia [--log-level LEVEL] COMMAND [ARGS]\n\nCommands:")
	cmds := commands()
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `hestia COMMAND -h` for a command's flags.")
}

// flags returns a FlagSet for a subcommand that prints to stderr.
func (env *Env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("hestia "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// exitCode reports err as the command line does and returns the process
// exit status: 0, 2 for bad arguments, 1 otherwise.
func exitCode(env *Env, command string, err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(env.Stderr, "hestia %s: %v\n", command, err)
		return 2
	default:
		fmt.Fprintf(env.Stderr, "hestia %s: %v\n", command, err)
		return 1
	}
}

// parse parses args, turning flag errors into usage errors and refusing
// unexpected positional arguments when maxArgs >= 0. Flags may follow the
// positional arguments (`mail import PATH --json`), as in most CLIs; after
// "--" everything is positional.
func parse(fs *flag.FlagSet, args []string, maxArgs int) error {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			words = append(words, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		words = append(words, rest[0])
		args = rest[1:]
	}
	if err := fs.Parse(append([]string{"--"}, words...)); err != nil {
		return usageError{err.Error()}
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs {
		return usagef("unexpected argument %q", fs.Arg(maxArgs))
	}
	return nil
}

// parseInterleaved allows flags after the free-text words.
func parseInterleaved(fs *flag.FlagSet, args []string) error {
	return parse(fs, args, -1)
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// load resolves paths and configuration; a --log-level given on the
// command line replaces the configured one.
func (env *Env) load() (config.Paths, config.Config, error) {
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return config.Paths{}, config.Config{}, err
	}
	cfg, err := config.Load(paths, env.Getenv)
	if err != nil {
		return config.Paths{}, config.Config{}, err
	}
	if env.logLevel != "" {
		cfg.Log.Level = env.logLevel
		if err := cfg.Validate(); err != nil {
			return config.Paths{}, config.Config{}, usagef("--log-level: %v", err)
		}
	}
	return paths, cfg, nil
}

// logger is the logger of a command that works on the stores directly:
// stderr only, at warn and above unless --log-level says otherwise.
func (env *Env) logger() (*slog.Logger, error) {
	level := slog.LevelWarn
	if env.logLevel != "" {
		level, _ = logging.ParseLevel(env.logLevel)
	}
	log, _, err := logging.New(logging.Options{Level: level, Console: env.Stderr})
	return log, err
}

// Client talks to the running daemon with the home's token.
type Client = daemonclient.Client

// daemon returns a client for this home's running daemon (see
// daemonclient.Connect).
func (env *Env) daemon() (*Client, error) { return daemonclient.Connect(env.Getenv) }

// openApp builds an App for commands that work on the stores directly
// (not through the daemon). Logs go to stderr only at warn and above unless
// --log-level says otherwise.
func (env *Env) openApp() (*app.App, error) {
	paths, cfg, err := env.load()
	if err != nil {
		return nil, err
	}
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	log, err := env.logger()
	if err != nil {
		return nil, err
	}
	a := app.New(paths, cfg, log, env.Version)
	a.Getenv = env.Getenv // account passwords named by password_env
	return a, nil
}

// OSEnv is the Env of the real process.
func OSEnv(version string) *Env {
	return &Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: config.OSEnv, Version: version}
}

func runVersion(ctx context.Context, env *Env, args []string) error {
	if err := parse(env.flags("version"), args, 0); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, "hestia", env.Version)
	return nil
}
