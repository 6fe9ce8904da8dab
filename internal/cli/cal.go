package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/caltools"
)

const calUsage = `usage: hestia cal COMMAND
  agenda [--from DATE] [--to DATE] [--calendar NAME] [--json]   events in a window (default: the next 7 days)
  search QUERY [--attendee A] [--from DATE] [--to DATE] [--json] search events
  free --from DATE --to DATE [--min 30m] [--json]               free slots within working hours
  import PATH [--name NAME] [--read-only]                       index a vdir folder of .ics files
  sync [--json]                                                 re-read every known calendar folder
  calendars [--json]                                            list calendars
  ops [--state S] [--json]                                      list journaled create/update/delete operations`

// runCal works on the calendar index directly; it is safe to share with a
// running daemon (SQLite WAL).
func runCal(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", calUsage)
	}
	sub, rest := args[0], args[1:]
	cmds := map[string]func(context.Context, *Env, *app.Calendar, []string) error{
		"agenda": calAgenda, "search": calSearch, "free": calFree, "import": calImport, "sync": calSync, "calendars": calCalendars, "ops": calOps,
	}
	fn, ok := cmds[sub]
	if !ok {
		return usagef("unknown cal command %q\n%s", sub, calUsage)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := a.OpenCalendar(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, env, c, rest)
}

// calErr turns query errors into usage errors (exit 2).
func calErr(err error) error {
	if err != nil && strings.Contains(err.Error(), calendar.ErrBadQuery.Error()) {
		return usagef("%v", err)
	}
	return err
}

func calAgenda(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal agenda")
	from := fs.String("from", "", "start (YYYY-MM-DD, RFC 3339, today, tomorrow); default now")
	to := fs.String("to", "", "end; default from + 7 days")
	cal := fs.String("calendar", "", "only this calendar (comma-separated names)")
	limit := fs.Int("limit", calendar.DefaultMaxResults, "at most this many instances")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	var cals []string
	if *cal != "" {
		cals = strings.Split(*cal, ",")
	}
	deps := c.Deps
	f, t, err := calWindow(deps, *from, *to, 7)
	if err != nil {
		return usagef("%v", err)
	}
	ag, err := c.Store.Agenda(ctx, calendar.Query{From: f, To: t, Calendars: cals, Max: *limit})
	if err != nil {
		return calErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, ag)
	}
	printInstances(env.Stdout, ag.Instances, deps.Loc)
	if ag.Truncated {
		fmt.Fprintln(env.Stdout, "(more events in this window; narrow it or raise --limit)")
	}
	return nil
}

func calWindow(d caltools.Deps, from, to string, days int) (time.Time, time.Time, error) {
	now := d.Now()
	f := now
	var err error
	if from != "" {
		if f, err = calendar.ParseWhen(from, now, d.Loc); err != nil {
			return f, f, err
		}
	}
	t := f.AddDate(0, 0, days)
	if to != "" {
		if t, err = calendar.ParseWhen(to, now, d.Loc); err != nil {
			return f, t, err
		}
	}
	return f, t, nil
}

func printInstances(w io.Writer, ins []calendar.Instance, loc *time.Location) {
	day := ""
	for _, in := range ins {
		st := in.Start.In(loc)
		if d := st.Format("Mon 2006-01-02"); d != day {
			fmt.Fprintln(w, d)
			day = d
		}
		when := st.Format("15:04") + "-" + in.End.In(loc).Format("15:04")
		if in.AllDay {
			when = "all day    "
		}
		extra := ""
		if in.Location != "" {
			extra = " @ " + in.Location
		}
		if in.Recurring {
			extra += " ⟳"
		}
		fmt.Fprintf(w, "  %s  %s%s  [%s]\n", when, in.Summary, extra, in.Calendar)
	}
	if len(ins) == 0 {
		fmt.Fprintln(w, "no events")
	}
}

func calSearch(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal search")
	attendee := fs.String("attendee", "", "attendee name or address contains")
	from := fs.String("from", "", "window start")
	to := fs.String("to", "", "window end")
	cal := fs.String("calendar", "", "only this calendar (comma-separated)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, calReorder(args), 1); err != nil {
		return err
	}
	a := caltools.SearchArgs{Query: fs.Arg(0), Attendee: *attendee, From: *from, To: *to, Limit: caltools.SearchMax}
	if *cal != "" {
		a.Calendars = strings.Split(*cal, ",")
	}
	res, err := c.Deps.Search(ctx, a)
	if err != nil {
		return calErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	printInstances(env.Stdout, res.Events, c.Deps.Loc)
	return nil
}

// calReorder moves flags after a positional argument to the front so that
// `cal search standup --json` works like `cal search --json standup`.
// Boolean flags take no value; every other flag takes the next argument.
func calReorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && a != "-" {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && a != "--json" && a != "-json" && a != "--read-only" && a != "-read-only" && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func calFree(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal free")
	from := fs.String("from", "", "window start (required)")
	to := fs.String("to", "", "window end (required)")
	minLen := fs.Duration("min", 30*time.Minute, "shortest slot")
	cal := fs.String("calendar", "", "only these calendars (comma-separated)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *from == "" || *to == "" {
		return usagef("usage: hestia cal free --from DATE --to DATE [--min 30m]")
	}
	a := caltools.FreeArgs{From: *from, To: *to, MinMinutes: int(minLen.Minutes())}
	if *cal != "" {
		a.Calendars = strings.Split(*cal, ",")
	}
	res, err := c.Deps.Free(ctx, a)
	if err != nil {
		return calErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	for _, f := range res.Free {
		s, e := f.Start.In(c.Deps.Loc), f.End.In(c.Deps.Loc)
		fmt.Fprintf(env.Stdout, "%s %s-%s (%s)\n", s.Format("Mon 2006-01-02"), s.Format("15:04"), e.Format("15:04"), humanDuration(e.Sub(s).Round(time.Minute)))
	}
	if len(res.Free) == 0 {
		fmt.Fprintln(env.Stdout, "no free slots")
	}
	return nil
}

func calImport(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal import")
	name := fs.String("name", "", "calendar name (default: the folder's name)")
	ro := fs.Bool("read-only", false, "refuse writes to this calendar")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, calReorder(args), 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia cal import PATH [--name NAME] [--read-only]")
	}
	path, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	if *name == "" {
		*name = filepath.Base(path)
	}
	cols, err := calendar.Collections(calendar.Source{Name: *name, Path: path, ReadOnly: *ro})
	if err != nil {
		return err
	}
	var all []calendar.SyncStats
	for _, col := range cols {
		st, err := c.Store.Sync(ctx, col)
		if err != nil {
			return err
		}
		all = append(all, st)
	}
	return printSync(env, all, *asJSON)
}

func printSync(env *Env, all []calendar.SyncStats, asJSON bool) error {
	if asJSON {
		return printJSON(env.Stdout, map[string]any{"calendars": all})
	}
	for _, st := range all {
		fmt.Fprintf(env.Stdout, "%s: %d files, %d added, %d updated, %d removed, %d unchanged, %d events, %d skipped, %d warnings\n",
			st.Calendar, st.Files, st.Added, st.Updated, st.Removed, st.Unchanged, st.Events, len(st.Skipped), len(st.Warnings))
		if r := st.Remote; r != nil {
			fmt.Fprintf(env.Stdout, "  server: %s, %d downloaded, %d removed, %d unchanged\n", r.Mode, r.Fetched, r.Removed, r.Unchanged)
		}
		for _, sk := range st.Skipped {
			fmt.Fprintf(env.Stdout, "  skipped %s: %s\n", sk.File, sk.Reason)
		}
		// The rest of these files was indexed; say what was not taken
		// as written.
		for _, w := range st.Warnings {
			fmt.Fprintf(env.Stdout, "  warning %s: %s\n", w.File, w.Problem)
		}
		// Counted over the whole collection, so a re-sync that read no
		// file still says versions are hidden.
		if st.Superseded > 0 {
			fmt.Fprintf(env.Stdout, "  %d older versions hidden: another file holds a newer version of the same event\n", st.Superseded)
		}
	}
	return nil
}

func calSync(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal sync")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	all, err := c.SyncAll(ctx)
	if perr := printSync(env, all, *asJSON); perr != nil {
		return perr
	}
	return err
}

func calCalendars(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal calendars")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	cals, err := c.Store.Calendars(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"calendars": cals})
	}
	for _, k := range cals {
		ro := ""
		if k.ReadOnly {
			ro = " (read-only)"
		}
		fmt.Fprintf(env.Stdout, "%s%s: %d events, %d files skipped — %s\n", k.Name, ro, k.Events, k.Skipped, k.Path)
	}
	return nil
}

func calOps(ctx context.Context, env *Env, c *app.Calendar, args []string) error {
	fs := env.flags("cal ops")
	state := fs.String("state", "", "only ops in this state (started, done, failed, unknown)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	ops, err := c.Writer.List(ctx, *state, 100)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"operations": ops})
	}
	for _, o := range ops {
		inst := ""
		if o.Instance != "" {
			inst = " @" + o.Instance
		}
		fmt.Fprintf(env.Stdout, "%d %s %s %q in %s (%s%s) %s\n", o.ID, o.CreatedAt.Format(time.RFC3339), o.Kind, o.Summary, o.Calendar, o.UID, inst, o.State)
	}
	if len(ops) == 0 {
		fmt.Fprintln(env.Stdout, "no operations")
	}
	return nil
}
