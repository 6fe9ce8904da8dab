package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/watch"
)

// defaultEvent is the event a watch on source fires on when --event is
// not given; train watches must say which (departed, arrived, delayed, …).
func defaultEvent(source string) string {
	switch source {
	case "mail":
		return "mail.received"
	case "url":
		return "url.changed"
	case "file":
		return "file.changed"
	}
	return ""
}

const watchAddUsage = `usage: hestia watch add --source mail|url|file|train (--ref REF | --query SEARCH) --instruction TEXT [--event TYPE] [--expires 7d|RFC3339] [--deliver inbox,push,telegram] [--dry-run] [--json]

Rules made here notify only. Grants (tools a watch may call without asking)
are not offered from the command line: they need a device with the approve
scope and their own approval card, so ask the assistant or use the web app.`

// watchAdd creates a watch through the daemon (POST /api/watches), which
// holds the adapters (the mail mirror, the file roots); --dry-run lists
// what a mail watch's search matches now without saving anything.
func watchAdd(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("watch add")
	source := fs.String("source", "", "what to watch: mail, url, file or train (--query implies mail)")
	ref := fs.String("ref", "", "the resource: a URL, an absolute file path, a train originId/number/serviceDayMs, or a mail search")
	query := fs.String("query", "", `a mail search in the syntax of hestia mail search, e.g. "from:anna@example.org invoice"`)
	instruction := fs.String("instruction", "", "your own words for what you want to hear about (required)")
	event := fs.String("event", "", "the event to fire on (default: mail.received, url.changed or file.changed)")
	expires := fs.String("expires", "", "when watching stops: a duration (90m, 48h, 7d) or an RFC 3339 time (default: the source's own, 30 days for mail)")
	deliver := fs.String("deliver", "", "where each message goes besides the chat, comma-separated: inbox, push, telegram, call, a channel (slack, discord, whatsapp, matrix, signal, email), or none (default inbox,push)")
	dry := fs.Bool("dry-run", false, "save nothing; for a mail watch, list the messages the search matches now")
	asJSON := fs.Bool("json", false, "print the watch (or the preview) as JSON")
	fs.Usage = func() { fmt.Fprintln(fs.Output(), watchAddUsage); fs.PrintDefaults() }
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if *query != "" {
		if *ref != "" {
			return usagef("give --ref or --query, not both")
		}
		if *source != "" && *source != "mail" {
			return usagef("--query is a mail search; it does not go with --source %s", *source)
		}
		*source, *ref = "mail", *query
	}
	if *source == "" {
		return usagef("--source is required (mail, url, file or train)\n%s", watchAddUsage)
	}
	if strings.TrimSpace(*ref) == "" {
		return usagef("--ref (or --query for mail) is required: what should be watched?")
	}
	list := splitList(*deliver)
	if _, err := notify.ParseDeliver(list); err != nil {
		return usagef("--%v", err)
	}
	c, err := env.daemon()
	if err != nil {
		return err
	}
	if *dry {
		var p watch.Preview
		if err := c.Do(ctx, "POST", "/api/watches/preview", map[string]any{"source": *source, "ref": *ref, "limit": 20}, &p); err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(env.Stdout, p)
		}
		fmt.Fprintf(env.Stdout, "%d message(s) match %q now", p.Total, p.Ref)
		if p.Total > len(p.Matches) {
			fmt.Fprintf(env.Stdout, " (the newest %d below)", len(p.Matches))
		}
		fmt.Fprintln(env.Stdout, ".")
		for _, m := range p.Matches {
			fmt.Fprintf(env.Stdout, "  %s  %-30s  %s\n", m.Date.Local().Format("2006-01-02 15:04"), clipCLI(m.From, 30), m.Subject)
		}
		fmt.Fprintf(env.Stdout, "Nothing was saved; %s.\n", p.Note)
		return nil
	}
	if strings.TrimSpace(*instruction) == "" {
		return usagef("--instruction is required: your own words for what you want to hear about")
	}
	ev := *event
	if ev == "" {
		if ev = defaultEvent(*source); ev == "" {
			return usagef("--event is required for %s watches (e.g. train.arrived)", *source)
		}
	}
	body := map[string]any{"source": *source, "ref": *ref, "instruction": *instruction, "rules": []map[string]any{{"event": ev}}}
	if list != nil {
		body["deliver"] = list
	}
	if *expires != "" {
		t, err := parseExpiry(*expires, time.Now())
		if err != nil {
			return usagef("--expires: %v", err)
		}
		body["expires_at"] = t.Format(time.RFC3339)
	}
	var w watch.Watch
	if err := c.Do(ctx, "POST", "/api/watches", body, &w); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(env.Stdout, w)
	}
	where := strings.Join(w.Deliver, ", ")
	if where == "" {
		where = "inbox, push"
	}
	fmt.Fprintf(env.Stdout, "Watch %s: %s %s on %s, until %s; messages go to %s. Only changes from now on fire.\n",
		w.ID, w.Source, w.Ref, ev, w.ExpiresAt.Local().Format("2006-01-02 15:04"), where)
	return nil
}

// parseExpiry reads --expires: a Go duration, a number of days ("7d") or
// an RFC 3339 time.
func parseExpiry(s string, now time.Time) (time.Time, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 1 {
			return time.Time{}, fmt.Errorf("%q is not a number of days such as 7d", s)
		}
		return now.AddDate(0, 0, n), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("%q must be positive", s)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (90m, 48h, 7d) nor an RFC 3339 time", s)
	}
	return t, nil
}

func clipCLI(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
