package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/hestia-dev/hestia/internal/actions"
)

// runActions lists Action Center items from its database (daemon or not).
func runActions(ctx context.Context, env *Env, args []string) error {
	args = listByDefault(args)
	if args[0] != "list" {
		return usagef("usage: hestia actions list [--state new|read|done|dismissed|all] [--limit N] [--json]")
	}
	fs := env.flags("actions list")
	asJSON := fs.Bool("json", false, "print JSON (the body of GET /api/actions)")
	state := fs.String("state", "", "new, read, done, dismissed or all (default: open items)")
	limit := fs.Int("limit", 50, "1–100")
	if err := parse(fs, args[1:], 0); err != nil {
		return err
	}
	switch *state {
	case "", "all", actions.StateNew, actions.StateRead, actions.StateDone, actions.StateDismissed:
	default:
		return usagef("--state must be new, read, done, dismissed or all, not %q", *state)
	}
	if *limit < 1 || *limit > 100 {
		return usagef("--limit must be from 1 to 100, got %d", *limit)
	}
	paths, _, err := env.load()
	if err != nil {
		return err
	}
	if err := paths.Ensure(); err != nil {
		return err
	}
	c, err := actions.Open(ctx, paths.DB(actions.Schema.Name), actions.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	items, counts, err := c.List(ctx, actions.Filter{State: *state, Limit: *limit})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, map[string]any{"actions": items, "counts": counts})
	}
	fmt.Fprintf(env.Stdout, "new %d, read %d, done %d, dismissed %d\n", counts[actions.StateNew], counts[actions.StateRead], counts[actions.StateDone], counts[actions.StateDismissed])
	if len(items) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nID\tKIND\tPRIORITY\tDEADLINE\tSTATE\tSUMMARY")
	for _, it := range items {
		dl := "-"
		if it.Deadline != nil {
			dl = it.Deadline.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", it.ID, it.Kind, it.Priority, dl, it.State, firstLine(it.Summary, ""))
	}
	return tw.Flush()
}
