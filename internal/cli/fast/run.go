package fast

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Run answers the command line when it is one of the commands this
// package owns (`version`, `mail search|read|thread|import|reconcile`,
// `wiki search`, with
// the global flags) and reports handled=false for everything else, which
// the caller hands to hestia-core untouched.
func Run(ctx context.Context, args []string, env *Env) (code int, handled bool) {
	global := flag.NewFlagSet("hestia", flag.ContinueOnError)
	global.SetOutput(io.Discard) // hestia-core reports bad global flags
	global.StringVar(&env.LogLevel, "log-level", "", "")
	showVersion := global.Bool("version", false, "")
	if err := global.Parse(args); err != nil {
		return 0, false
	}
	rest := global.Args()
	if *showVersion || (len(rest) == 1 && rest[0] == "version") {
		fmt.Fprintln(env.Stdout, "hestia", env.Version)
		return 0, true
	}
	if len(rest) < 2 {
		return 0, false
	}
	var run func(context.Context, *Env, []string) error
	switch rest[0] {
	case "mail":
		run = MailCommand(rest[1])
	case "wiki":
		if rest[1] == "search" {
			run = WikiSearch
		}
	}
	if run == nil {
		return 0, false
	}
	return ExitCode(env, rest[0], run(ctx, env, rest[2:])), true
}

// ExitCode reports err as the command line does and returns the process
// exit status: 0, 2 for bad arguments, 1 otherwise.
func ExitCode(env *Env, command string, err error) int {
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
