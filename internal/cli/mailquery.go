package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/mail"
	"golang.org/x/term"
)

// mailQuery returns the mail command `hestia mail SUB` that needs no App
// (the queries and the imports), or nil.
func mailQuery(sub string) func(context.Context, *Env, []string) error {
	switch sub {
	case "import":
		return mailImport(false)
	case "reconcile":
		return mailImport(true)
	case "search":
		return mailSearch
	case "read":
		return mailRead
	case "thread":
		return mailThread
	}
	return nil
}

// withMail runs fn on the mirror opened for this one command, with the
// small page cache of a one-shot query.
func (env *Env) withMail(ctx context.Context, fn func(*mail.Store) error) error {
	st, err := env.openMail(ctx, queryCachePages)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(st)
}

// mailRead runs `hestia mail read ID`: GET /api/mail/messages/{id} on the
// running daemon, else the mirror itself.
func mailRead(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("mail read")
	off := fs.Int("offset", 0, "body character offset")
	limit := fs.Int("limit", mail.MaxBodyChars, "body characters")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	id, err := idArg(fs, "read")
	if err != nil {
		return err
	}
	var msg mail.Message
	v := url.Values{"offset": {strconv.Itoa(*off)}, "limit": {strconv.Itoa(*limit)}}
	asked, err := env.askDaemon(ctx, fmt.Sprintf("/api/mail/messages/%d?%s", id, v.Encode()), &msg)
	if !asked && err == nil {
		err = env.withMail(ctx, func(st *mail.Store) (err error) {
			msg, err = st.Read(ctx, id, *off, *limit)
			return err
		})
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, msg)
	}
	fmt.Fprintf(env.Stdout, "From:    %s\nTo:      %s\n", msg.From, msg.To)
	if msg.Cc != "" {
		fmt.Fprintf(env.Stdout, "Cc:      %s\n", msg.Cc)
	}
	fmt.Fprintf(env.Stdout, "Date:    %s\nSubject: %s\nMailbox: %s/%s  (thread %d, body %s)\n", msg.Date.Local().Format(time.RFC1123), msg.Subject, msg.Account, msg.Mailbox, msg.ThreadID, msg.BodyState)
	for _, at := range msg.Attachments {
		fmt.Fprintf(env.Stdout, "Attach:  [%d] %s (%s, %d bytes)\n", at.Index, at.Filename, at.ContentType, at.Size)
	}
	fmt.Fprintf(env.Stdout, "\n%s\n", msg.Body)
	if msg.NextOffset > 0 {
		fmt.Fprintf(env.Stderr, "more: --offset %d\n", msg.NextOffset)
	}
	return nil
}

// mailSearch runs `hestia mail search [QUERY]`: GET /api/mail/search on
// the running daemon (hybrid ranking, its vectors loaded), else the mirror
// itself, lexically.
func mailSearch(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("mail search")
	var a searchArgs
	fs.StringVar(&a.Account, "account", "", "account name")
	fs.StringVar(&a.Mailbox, "mailbox", "", "mailbox name")
	fs.StringVar(&a.Role, "role", "", "inbox, sent, drafts, trash, junk, archive or all")
	fs.StringVar(&a.From, "from", "", "sender contains (case- and accent-insensitive)")
	fs.StringVar(&a.To, "to", "", "recipient contains")
	fs.StringVar(&a.Cc, "cc", "", "cc contains")
	fs.StringVar(&a.Subject, "subject", "", "subject contains")
	fs.StringVar(&a.Body, "body", "", "body contains")
	fs.StringVar(&a.AttachName, "attachment-name", "", "an attachment's file name contains")
	fs.StringVar(&a.After, "after", "", "on or after YYYY-MM-DD")
	fs.StringVar(&a.Before, "before", "", "before YYYY-MM-DD")
	fs.StringVar(&a.Sort, "sort", "", "browse order without a query: date or size")
	var unread, flagged, att triFlag
	fs.Var(&unread, "unread", "only unread (--unread=false: only read)")
	fs.Var(&flagged, "flagged", "only flagged")
	fs.Var(&att, "attachments", "only with attachments")
	fs.BoolVar(&a.PerMessage, "per-message", false, "do not collapse threads")
	fs.IntVar(&a.Offset, "offset", 0, "skip this many results")
	fs.IntVar(&a.Limit, "limit", 20, "results per page (max 100)")
	asJSON := fs.Bool("json", false, "print JSON")
	countOnly := fs.Bool("count", false, "print only the exact number of matching messages")
	var related triFlag
	fs.Var(&related, "related", "also list, apart from the matches, messages close in meaning without the words (needs the daemon; default on only with a real embedding model)")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	a.Query = strings.Join(fs.Args(), " ")
	a.Unread, a.Flagged, a.HasAttachment = unread.v, flagged.v, att.v
	after, err := dateFlag("after", a.After)
	if err != nil {
		return err
	}
	before, err := dateFlag("before", a.Before)
	if err != nil {
		return err
	}
	// The store clamps the page size; the API refuses one out of range.
	if a.Limit <= 0 {
		a.Limit = mail.DefaultLimit
	}
	a.Limit = min(a.Limit, mail.MaxLimit)
	// The words may carry operators (from:anna@… is:unread), read by the
	// parser mail watches use too; a flag given as well wins.
	ops, err := mail.ParseQuery(a.Query, time.Local)
	if err != nil {
		return err
	}
	a.Query = ops.Text
	pick := func(flag, op string) string { return cmp.Or(flag, op) }
	q := mail.Query{Text: a.Query, Account: pick(a.Account, ops.Account), Mailbox: pick(a.Mailbox, ops.Mailbox), Role: pick(a.Role, ops.Role),
		From: pick(a.From, ops.From), To: pick(a.To, ops.To), Cc: pick(a.Cc, ops.Cc), Subject: pick(a.Subject, ops.Subject), Body: pick(a.Body, ops.Body),
		AttachmentName: pick(a.AttachName, ops.AttachmentName), After: after, Before: before, Unread: cmp.Or(a.Unread, ops.Unread),
		Flagged: cmp.Or(a.Flagged, ops.Flagged), Attachment: cmp.Or(a.HasAttachment, ops.Attachment),
		Sort: a.Sort, PerMessage: a.PerMessage, Offset: a.Offset, Limit: a.Limit, Count: *countOnly, Related: related.v}
	if q.After.IsZero() {
		q.After = ops.After
	}
	if q.Before.IsZero() {
		q.Before = ops.Before
	}
	var res mail.Result
	q.NoSnippets = !*asJSON // the listing below prints none
	asked, err := env.askDaemon(ctx, "/api/mail/search?"+searchValues(q).Encode(), &res)
	if !asked && err == nil {
		// Ranking by vectors needs every message vector in memory; the
		// daemon keeps them loaded, a one-shot process must not load the
		// whole index for one query, so it ranks lexically.
		q.NoVectors = true
		err = env.withMail(ctx, func(st *mail.Store) (err error) {
			res, err = st.Search(ctx, q)
			return err
		})
	}
	if err != nil {
		return err
	}
	if res.Messages == nil {
		res.Messages = []mail.Summary{}
	}
	if *countOnly {
		if res.Total == nil {
			res.Total = new(int)
		}
		if *asJSON {
			return printJSON(env.Stdout, map[string]int{"total": *res.Total})
		}
		fmt.Fprintln(env.Stdout, *res.Total)
		return nil
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	printSearch(env, res, a.Query != "")
	return nil
}

// searchValues is q as GET /api/mail/search takes it. Dates go as the
// instants the command line means (midnight local time), which the API
// reads as they are; its own YYYY-MM-DD form is a UTC day.
func searchValues(q mail.Query) url.Values {
	v := url.Values{"limit": {strconv.Itoa(q.Limit)}}
	for k, s := range map[string]string{"q": q.Text, "account": q.Account, "mailbox": q.Mailbox, "role": q.Role, "from": q.From, "to": q.To, "cc": q.Cc,
		"subject": q.Subject, "body": q.Body, "attachment_name": q.AttachmentName, "sort": q.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	for k, t := range map[string]time.Time{"after": q.After, "before": q.Before} {
		if !t.IsZero() {
			v.Set(k, t.Format(time.RFC3339))
		}
	}
	for k, b := range map[string]*bool{"unread": q.Unread, "flagged": q.Flagged, "attachments": q.Attachment} {
		if b != nil {
			v.Set(k, strconv.FormatBool(*b))
		}
	}
	if q.Offset != 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	if q.Related != nil {
		v.Set("related", strconv.FormatBool(*q.Related))
	}
	if q.PerMessage {
		v.Set("per_message", "true")
	}
	if q.Count {
		v.Set("count", "true")
	}
	if q.NoSnippets {
		v.Set("snippets", "false")
	}
	return v
}

// printSearch lists a page of results, one line each, and says on stderr
// what the marks mean and how to see more.
func printSearch(env *Env, res mail.Result, freeText bool) {
	line := func(s mail.Summary, mark string) {
		if s.Unread {
			mark = "*" + mark
		} else {
			mark = " " + mark
		}
		fmt.Fprintf(env.Stdout, "%s %6d  %s  %-28.28s  %s\n", mark, s.ID, s.Date.Local().Format("2006-01-02"), s.From, s.Subject)
	}
	for _, s := range res.Messages {
		mark := " "
		if s.Partial {
			mark = "~"
		}
		line(s, mark)
	}
	if len(res.Messages) == 0 && freeText {
		fmt.Fprintln(env.Stderr, "(no message matches)")
	}
	// Messages close in meaning but without the words: after the
	// matches, under their own heading, each marked, never counted.
	if len(res.Related) > 0 {
		fmt.Fprintln(env.Stdout, "\nrelated (close in meaning, none of the words):")
		for _, s := range res.Related {
			line(s, "≈")
		}
	}
	if res.Note != "" {
		fmt.Fprintf(env.Stderr, "(~ %s)\n", res.Note)
	}
	if res.Truncated {
		fmt.Fprintln(env.Stderr, "(ranking cut short: narrow the search to see later results)")
	}
	if res.Degraded != "" && freeText {
		fmt.Fprintf(env.Stderr, "(lexical only: %s)\n", res.Degraded)
	}
	if res.Page.Next > 0 {
		fmt.Fprintf(env.Stderr, "more: --offset %d\n", res.Page.Next)
	}
}

// mailThread runs `hestia mail thread ID`: GET
// /api/mail/messages/{id}/thread on the running daemon, else the mirror.
func mailThread(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("mail thread")
	off := fs.Int("offset", 0, "skip this many messages")
	limit := fs.Int("limit", 20, "messages per page")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	id, err := idArg(fs, "thread")
	if err != nil {
		return err
	}
	var tp mail.ThreadPage
	v := url.Values{"offset": {strconv.Itoa(*off)}, "limit": {strconv.Itoa(*limit)}}
	asked, err := env.askDaemon(ctx, fmt.Sprintf("/api/mail/messages/%d/thread?%s", id, v.Encode()), &tp)
	if !asked && err == nil {
		err = env.withMail(ctx, func(st *mail.Store) (err error) {
			tp, err = st.Thread(ctx, id, *off, *limit, 0)
			return err
		})
	}
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, tp)
	}
	fmt.Fprintf(env.Stdout, "thread %d: %s (%d messages, newest first)\n", tp.ThreadID, tp.Subject, tp.Count)
	for _, s := range tp.Messages {
		fmt.Fprintf(env.Stdout, "\n%6d  %s  %s\n        %s\n", s.ID, s.Date.Local().Format("2006-01-02 15:04"), s.From, s.Snippet)
	}
	return nil
}

// searchArgs holds the flags of `mail search`.
type searchArgs struct {
	Query, Account, Mailbox, Role, From, To, Cc, Subject, Body, AttachName, After, Before, Sort string
	PerMessage                                                                                  bool
	Offset, Limit                                                                               int
	Unread, Flagged, HasAttachment                                                              *bool
}

// triFlag is a boolean flag that can also be left unset.
type triFlag struct{ v *bool }

func (t *triFlag) String() string {
	if t.v == nil {
		return ""
	}
	return strconv.FormatBool(*t.v)
}
func (t *triFlag) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want true or false")
	}
	t.v = &b
	return nil
}
func (t *triFlag) IsBoolFlag() bool { return true }

// importHeapLimit is the soft Go heap limit of a CLI import.
const importHeapLimit = 48 << 20

// mailImport returns `hestia mail import PATH` or, with reconcile, `hestia
// mail reconcile PATH`. They open the mirror alone: a rescan of an
// unchanged tree lists a few folder mtimes, so process start is most of
// its time.
func mailImport(reconcile bool) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		name := "mail import"
		if reconcile {
			name = "mail reconcile"
		}
		fs := env.flags(name)
		account := fs.String("account", "local", "account name the messages belong to")
		quiet := fs.Bool("quiet", false, "no progress bar")
		asJSON := fs.Bool("json", false, "print the summary as JSON")
		full := fs.Bool("full", false, "list and check every file (by default Maildir folders whose mtime is unchanged are skipped)")
		once := fs.Bool("once", false, "copy the folder once; do not register it for the daemon's rescans")
		if err := parse(fs, args, 1); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return usagef("usage: hestia %s PATH", name)
		}
		start := time.Now()
		opts := mail.ImportOptions{Account: *account, Full: *full}
		// The bar redraws in place on a terminal; into a log or pipe only
		// the final line is written, once.
		tty := isTerminal(env.Stderr)
		if !*quiet && tty {
			opts.Progress = func(p mail.Progress) { progressBar(env.Stderr, p, time.Since(start)) }
		}
		// An import is the whole process: a soft heap limit keeps its
		// peak memory under half of notmuch's (88–92 against 196 MB at
		// 100k messages; the import's live heap is ~28 MB, so garbage
		// collection takes ~5 % of its CPU). GOMEMLIMIT, when set, is
		// the user's choice.
		if env.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(importHeapLimit)
		}
		st, err := env.openMail(ctx, 0)
		if err != nil {
			return err
		}
		defer st.Close()
		run := st.Import
		if reconcile {
			run = st.Reconcile
		}
		p, err := run(ctx, fs.Arg(0), opts)
		if !*quiet {
			if !tty && err == nil {
				progressBar(env.Stderr, p, time.Since(start))
			}
			fmt.Fprintln(env.Stderr)
		}
		if err != nil {
			return err
		}
		src, registered, err := registerImportSource(ctx, st, fs.Arg(0), *account, *once)
		if err != nil {
			return err
		}
		if *asJSON {
			out := struct {
				mail.Progress
				Source string `json:"source,omitempty"`
			}{p, src.Path}
			return printJSON(env.Stdout, out)
		}
		fmt.Fprintf(env.Stdout, "%d files: %d new messages, %d updated, %d unchanged, %d failed, %d removed, %d deleted in %s\n",
			p.Files, p.Added, p.Updated, p.Skipped, p.Failed, p.Removed, p.Deleted, time.Since(start).Round(time.Millisecond))
		if registered {
			fmt.Fprintf(env.Stdout, "%s is now a mail source: the daemon rescans it (new mail is added, deleted files leave the mirror); --once copies without registering\n", src.Path)
		}
		return nil
	}
}

// progressBar draws the import's progress on one line.
func progressBar(w io.Writer, p mail.Progress, elapsed time.Duration) {
	const width = 30
	frac := 1.0
	if p.Files > 0 {
		frac = float64(p.Done) / float64(p.Files)
	}
	n := int(frac * width)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(p.Added+p.Updated) / s
	}
	cr := "\r"
	if !isTerminal(w) {
		cr = ""
	}
	fmt.Fprintf(w, cr+"[%s%s] %d/%d files, %d new, %.0f msg/s", strings.Repeat("#", n), strings.Repeat(".", width-n), p.Done, p.Files, p.Added, rate)
}

// isTerminal reports whether w is a terminal (progress bars redraw only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
