package cli

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/app"
)

// runConsent is `hestia consent [allow|deny] [--json]`: whether background
// jobs (wiki.promote, actions.scan, memory reviews) may send mail and
// chats to the configured model, and which remote provider would get
// them. The answer is a file the daemon reads before each run, so it
// applies without a restart.
func runConsent(ctx context.Context, env *Env, args []string) error {
	verb := ""
	if len(args) > 0 && (args[0] == "allow" || args[0] == "deny" || args[0] == "show") {
		verb, args = args[0], args[1:]
	}
	fs := env.flags("consent")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("usage: hestia consent [show|allow|deny] [--json]")
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	var c app.Consent
	switch verb {
	case "allow", "deny":
		c, err = a.SetConsent(verb == "allow")
	default:
		c, err = a.Consent()
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, c)
	}
	fmt.Fprintln(env.Stdout, c.Prompt)
	for _, s := range c.Sends {
		fmt.Fprintf(env.Stdout, "  %s\n", s)
	}
	state := "off"
	if c.Allowed {
		state = "on"
	}
	how := "(default for these models)"
	if c.Decided {
		how = "(your choice)"
	}
	fmt.Fprintf(env.Stdout, "Background model work: %s %s. Change it with `hestia consent allow` or `hestia consent deny`.\n", state, how)
	return nil
}
