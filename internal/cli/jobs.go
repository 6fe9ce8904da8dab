package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strings"

	"text/tabwriter"
	"time"

	"github.com/hestia-dev/hestia/internal/scheduler"
)

// listByDefault makes a bare `hestia jobs|watch|actions` (or one given only
// flags, `hestia jobs --json`) mean its list subcommand.
func listByDefault(args []string) []string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return append([]string{"list"}, args...)
	}
	return args
}

// runJobs lists, runs, adds and removes scheduled jobs and shows their run
// journal. list and history read the scheduler's database directly (they
// work with the daemon stopped); run, add and remove go through the daemon,
// which owns the loop.
func runJobs(ctx context.Context, env *Env, args []string) error {
	args = listByDefault(args)
	switch args[0] {
	case "list":
		return jobsList(ctx, env, args[1:])
	case "history":
		return jobsHistory(ctx, env, args[1:])
	case "run":
		return jobsRun(ctx, env, args[1:])
	case "add":
		return jobsAdd(ctx, env, args[1:])
	case "remove":
		return jobsRemove(ctx, env, args[1:])
	case "deliver":
		return jobsDeliver(ctx, env, args[1:])
	default:
		return usagef("unknown subcommand %q: list, history, run, add, remove or deliver", args[0])
	}
}

func openJobs(ctx context.Context, env *Env) (*scheduler.Scheduler, error) {
	paths, _, err := env.load()
	if err != nil {
		return nil, err
	}
	if err := paths.Ensure(); err != nil {
		return nil, err
	}
	return scheduler.Open(ctx, paths.DB(scheduler.Schema.Name), scheduler.Options{})
}

// nameFirst moves a leading job name behind the flags, so both
// `jobs add NAME --cron …` and `jobs add --cron … NAME` parse.
func nameFirst(args []string) []string {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return append(append([]string{}, args[1:]...), args[0])
	}
	return args
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func jobsList(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("jobs list")
	asJSON := fs.Bool("json", false, "print the jobs as JSON (the body of GET /api/jobs)")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	s, err := openJobs(ctx, env)
	if err != nil {
		return err
	}
	defer s.Close()
	jobs, err := s.List(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, map[string]any{"jobs": jobs})
	}
	if len(jobs) == 0 {
		fmt.Fprintln(env.Stdout, "No jobs yet (the daemon registers its built-in jobs when it starts; add your own with `hestia jobs add`).")
		return nil
	}
	tw := tabwriter.NewWriter(env.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKIND\tSCHEDULE\tNEXT RUN\tLAST RUN\tSTATUS")
	for _, j := range jobs {
		kind := "user"
		if j.Builtin {
			kind = "built-in"
		}
		next := "-"
		if !j.Enabled {
			next = "paused"
		} else if j.NextRun != nil {
			next = j.NextRun.Local().Format("2006-01-02 15:04:05")
		}
		last, status := "-", "-"
		if j.LastRun != nil {
			last, status = j.LastRun.StartedAt.Local().Format("2006-01-02 15:04:05"), j.LastRun.Status
		}
		if j.Running {
			status = "running"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, kind, scheduleText(j.Schedule), next, last, status)
	}
	return tw.Flush()
}

func jobsHistory(ctx context.Context, env *Env, args []string) error {
	args = nameFirst(args)
	fs := env.flags("jobs history")
	asJSON := fs.Bool("json", false, "print the runs as JSON")
	limit := fs.Int("limit", 20, "how many runs, newest first (1–1000)")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usagef("--limit must be from 1 to 1000, got %d", *limit)
	}
	s, err := openJobs(ctx, env)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.History(ctx, fs.Arg(0), *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, map[string]any{"runs": runs})
	}
	printRuns(env.Stdout, runs)
	return nil
}

func printRuns(w io.Writer, runs []scheduler.Run) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "No runs yet.")
		return
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tJOB\tTRIGGER\tSTARTED\tDURATION\tSTATUS\tERROR")
	for _, r := range runs {
		dur := "-"
		if r.DurationMS != nil {
			dur = humanDuration(time.Duration(*r.DurationMS) * time.Millisecond)
		}
		msg := r.Error
		if len(msg) > 80 {
			msg = msg[:77] + "..."
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Job, r.Trigger, r.StartedAt.Local().Format("2006-01-02 15:04:05"), dur, r.Status, msg)
	}
	tw.Flush()
}

func jobsRun(ctx context.Context, env *Env, args []string) error {
	args = nameFirst(args)
	fs := env.flags("jobs run")
	wait := fs.Bool("wait", false, "wait for the run to end and exit non-zero unless it succeeded")
	asJSON := fs.Bool("json", false, "print the run as JSON")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia jobs run NAME [--wait] [--json] (a user job or a built-in one: mail.reconcile, mail.imap.ACCOUNT, mail.embed, mail.ops, actions.scan, wiki.promote)")
	}
	name := fs.Arg(0)
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var started struct {
		RunID int64 `json:"run_id"`
	}
	if err := c.Do(ctx, "POST", "/api/jobs/"+url.PathEscape(name)+"/run", nil, &started); err != nil {
		return err
	}
	if !*wait {
		if *asJSON {
			return writeJSON(env.Stdout, started)
		}
		fmt.Fprintf(env.Stdout, "Started run %d of %s (see `hestia jobs history %s`).\n", started.RunID, name, name)
		return nil
	}
	for {
		var h struct {
			Runs []scheduler.Run `json:"runs"`
		}
		if err := c.Do(ctx, "GET", "/api/jobs/"+url.PathEscape(name)+"/runs?limit=50", nil, &h); err != nil {
			return err
		}
		for _, r := range h.Runs {
			if r.ID != started.RunID || r.Status == scheduler.StatusRunning {
				continue
			}
			if *asJSON {
				writeJSON(env.Stdout, r)
			} else {
				printRuns(env.Stdout, []scheduler.Run{r})
				printResult(env.Stdout, r)
			}
			if r.Status != scheduler.StatusOK {
				return exitError{1}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func jobsAdd(ctx context.Context, env *Env, args []string) error {
	args = nameFirst(args)
	fs := env.flags("jobs add")
	var b scheduler.JobBody
	fs.StringVar(&b.Cron, "cron", "", `cron expression, e.g. "0 8 * * 1-5" (weekdays at 8:00)`)
	fs.StringVar(&b.Every, "every", "", "interval, e.g. 30m")
	fs.StringVar(&b.At, "at", "", "one run at an RFC 3339 time")
	fs.StringVar(&b.Prompt, "prompt", "", "what the assistant should do each run")
	fs.StringVar(&b.Timeout, "timeout", "", "per-run timeout (default 10m)")
	fs.StringVar(&b.Jitter, "jitter", "", "random delay up to this much, e.g. 2m")
	deliver := fs.String("deliver", "", "where each run's result goes, comma-separated: inbox, push, telegram, call, a channel (slack, discord, whatsapp, matrix, signal, email), or none (default inbox,push)")
	asJSON := fs.Bool("json", false, "print the job as JSON")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef(`usage: hestia jobs add NAME (--cron EXPR | --every DURATION | --at TIME) --prompt TEXT`)
	}
	b.Name = fs.Arg(0)
	b.Deliver = splitList(*deliver)
	u, err := b.UserJob()
	if err == nil {
		err = u.Schedule.Validate()
	}
	if err != nil {
		return usagef("--%v", err)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var j scheduler.Job
	if err := c.Do(ctx, "POST", "/api/jobs", b, &j); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, j)
	}
	next := "never"
	if j.NextRun != nil {
		next = j.NextRun.Local().Format(time.RFC1123)
	}
	fmt.Fprintf(env.Stdout, "Added job %s (%s); next run %s.\n", j.Name, scheduleText(j.Schedule), next)
	return nil
}

func jobsRemove(ctx context.Context, env *Env, args []string) error {
	args = nameFirst(args)
	fs := env.flags("jobs remove")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia jobs remove NAME")
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	if err := c.Do(ctx, "DELETE", "/api/jobs/"+url.PathEscape(fs.Arg(0)), nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Removed job %s.\n", fs.Arg(0))
	return nil
}
