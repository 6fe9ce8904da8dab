package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/hestia-dev/hestia/internal/watch"
)

// runWatch lists, shows and stops watches (add goes through the daemon:
// watch_add.go). It works on the watches
// database directly (with or without the daemon): stopping only moves an
// active watch to stopped, which the daemon's next pass respects.
func runWatch(ctx context.Context, env *Env, args []string) error {
	args = listByDefault(args)
	if args[0] == "add" {
		return watchAdd(ctx, env, args[1:])
	}
	sub, rest := args[0], nameFirst(args[1:])
	fs := env.flags("watch " + sub)
	asJSON := fs.Bool("json", false, "print JSON")
	state := ""
	if sub == "list" {
		fs.StringVar(&state, "state", "", "only watches in this state: active, stopped, expired, completed")
	}
	switch sub {
	case "list":
		if err := parse(fs, rest, 0); err != nil {
			return err
		}
		switch state {
		case "", watch.StateActive, watch.StateStopped, watch.StateExpired, watch.StateCompleted:
		default:
			return usagef("--state must be active, stopped, expired or completed, not %q", state)
		}
	case "show", "stop":
		if err := parse(fs, rest, 1); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("usage: hestia watch %s ID [--json]", sub)
		}
	default:
		return usagef("unknown subcommand %q: list, show, stop or add", sub)
	}
	paths, _, err := env.load()
	if err != nil {
		return err
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	e, err := watch.Open(ctx, paths.DB(watch.Schema.Name), watch.Options{})
	if err != nil {
		return err
	}
	defer e.Close()
	switch sub {
	case "list":
		ws, err := e.List(ctx, state)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(env.Stdout, map[string]any{"watches": ws})
		}
		if len(ws) == 0 {
			fmt.Fprintln(env.Stdout, "No watches. Ask the assistant to watch something (a train, a web page, a file).")
			return nil
		}
		tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSOURCE\tREF\tSTATE\tEVENTS\tEXPIRES\tLAST ERROR")
		for _, w := range ws {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", w.ID, w.Source, w.Ref, w.State, w.Events, w.ExpiresAt.Local().Format("2006-01-02 15:04"), w.LastError)
		}
		return tw.Flush()
	case "show":
		w, err := e.Get(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		evs, err := e.Events(ctx, w.ID)
		if err != nil {
			return err
		}
		claims, err := e.Claims(ctx, w.ID)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(env.Stdout, watch.Detail{Watch: w, RecentEvents: evs, Claims: claims})
		}
		fmt.Fprintf(env.Stdout, "%s  %s %s  %s (expires %s)\nInstruction: %s\n", w.ID, w.Source, w.Ref, w.State, w.ExpiresAt.Local().Format("2006-01-02 15:04"), w.Instruction)
		if w.LastError != "" {
			fmt.Fprintf(env.Stdout, "Last poll error: %s\n", w.LastError)
		}
		fmt.Fprintln(env.Stdout, "\nRules:")
		for _, r := range w.Rules {
			on := r.Event
			if r.Trigger != nil {
				on = "time trigger"
			}
			fmt.Fprintf(env.Stdout, "  %s: on %s (once=%v, %d grant(s))\n", r.ID, on, r.Once, len(r.Grants))
			for _, g := range r.Grants {
				fmt.Fprintf(env.Stdout, "    may call %s up to %d time(s) with %d constrained argument(s)\n", g.Tool, max(g.Max, 1), len(g.Args))
			}
		}
		fmt.Fprintf(env.Stdout, "\nEvents (%d):\n", len(evs))
		for _, ev := range evs {
			fmt.Fprintf(env.Stdout, "  %s  %s  %s  %s\n", ev.CreatedAt.Local().Format("01-02 15:04"), ev.Type, ev.State, firstLine(ev.Message, ev.Text))
		}
		if len(claims) > 0 {
			fmt.Fprintln(env.Stdout, "\nGranted calls:")
			for _, c := range claims {
				fmt.Fprintf(env.Stdout, "  %s %s %s\n", c.Tool, c.State, string(c.Args))
			}
		}
		return nil
	default: // stop
		w, err := e.Stop(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(env.Stdout, w)
		}
		fmt.Fprintf(env.Stdout, "Watch %s is %s.\n", w.ID, w.State)
		return nil
	}
}

func firstLine(a, b string) string {
	s := a
	if s == "" {
		s = b
	}
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
