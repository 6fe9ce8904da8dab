package cli

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

// printResult prints a finished run's result text (a user job's answer, a
// built-in job's summary) or its error, under the journal row.
func printResult(w io.Writer, r scheduler.Run) {
	switch {
	case r.Result != "":
		fmt.Fprintf(w, "\n%s\n", r.Result)
	case r.Status == scheduler.StatusOK:
		fmt.Fprintln(w, "\n(the run reported no result text)")
	}
	if r.Error != "" && r.Status != scheduler.StatusOK {
		fmt.Fprintf(w, "\nThe run %s: %s\n", r.Status, r.Error)
	}
}

// splitList splits a comma-separated flag value; empty gives nil.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// jobsDeliver sets where a job's results go (through the daemon, which
// delivers them).
func jobsDeliver(ctx context.Context, env *Env, args []string) error {
	args = nameFirst(args)
	fs := env.flags("jobs deliver")
	to := fs.String("to", "", "comma-separated: inbox, push, telegram, call, a channel (slack, discord, whatsapp, matrix, signal, email), or none; empty restores the default (inbox,push for your jobs, failures only for built-ins)")
	asJSON := fs.Bool("json", false, "print the job as JSON")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia jobs deliver NAME --to inbox,push,telegram")
	}
	list := splitList(*to)
	if _, err := notify.ParseDeliver(list); err != nil {
		return usagef("--to: %v", err)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	var j scheduler.Job
	if err := c.Do(ctx, "PUT", "/api/jobs/"+url.PathEscape(fs.Arg(0))+"/deliver", map[string]any{"deliver": list}, &j); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, j)
	}
	where := strings.Join(j.Deliver, ", ")
	if where == "" {
		where = "the default"
	}
	fmt.Fprintf(env.Stdout, "Results of job %s go to %s.\n", j.Name, where)
	return nil
}
