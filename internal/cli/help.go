package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

func isHelpArg(s string) bool { return s == "-h" || s == "--help" || s == "-help" || s == "help" }

// unknownHelp matches what a command with subcommands says about "-h".
var unknownHelp = lazyre.New(`(?m)^.*unknown (?:[a-z]+ )?(?:sub)?command "-h"[:.]?\s*`)

// commandHelp answers `hestia COMMAND -h` for every command, including the
// ones with subcommands that have no flag set of their own: the command
// runs with -h into a buffer (commands print their flags or return a usage
// error carrying their usage), and what it said is printed after the
// command's summary, on stdout, with exit status 0.
func commandHelp(ctx context.Context, env *Env, c command) int {
	var buf bytes.Buffer
	sub := *env
	sub.Stdout, sub.Stderr, sub.Stdin = &buf, &buf, strings.NewReader("")
	var text string
	if commandUsage[c.name] != "" {
		// policy reaches the daemon before reading its arguments.
		text = ""
	} else {
		args := []string{"-h"}
		if usageWithoutArgs[c.name] {
			args = nil
		}
		err := c.run(ctx, &sub, args)
		text = buf.String()
		if err != nil && errors.Is(err, ErrUsage) {
			text += err.Error() + "\n"
		}
	}
	text = unknownHelp.ReplaceAllString(text, "")
	text = strings.ReplaceAll(text, "Usage of hestia ", "Flags of hestia ")
	fmt.Fprintf(env.Stdout, "hestia %s: %s\n", c.name, c.summary)
	if u := commandUsage[c.name]; u != "" {
		fmt.Fprintln(env.Stdout, u)
	}
	if t := strings.TrimSpace(text); t != "" {
		fmt.Fprintf(env.Stdout, "\n%s\n", t)
	}
	return 0
}

// commandUsage holds usage lines for commands that cannot print their own
// without side effects.
var commandUsage = map[string]string{
	"policy": "usage: hestia policy test TOOL [ARGS_JSON] [--chat ID] [--json] | rules | add --tool T --decision allow|gate|deny [--pattern P] [--scope DIR] [--priority N] [--note TEXT] | rm ID",
}

// usageWithoutArgs lists commands that open the stores before reading
// their subcommand but print their usage, touching nothing, when given none.
var usageWithoutArgs = map[string]bool{"memory": true}
