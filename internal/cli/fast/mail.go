package fast

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/mail"
	"golang.org/x/term"
)

// OpenMailStore opens the mail mirror alone: no embedder, no send journal,
// nothing whose cost grows with the mailbox, since each query runs as its
// own process. The store is safe to share with a running daemon.
func (env *Env) OpenMailStore(ctx context.Context) (*mail.Store, error) {
	return env.openMail(ctx, 0)
}

// queryCachePages is the page cache of a process that runs one search,
// read or thread (see store.OpenOptions). `hestia mail search` without the
// daemon at 100k messages, interleaved, on a VM where a page fault costs
// ~10 µs: rare word 34.0 -> 25.6 ms, common 42.9 -> 35.6, phrase 28.4 ->
// 24.5, from + date 33.9 -> 26.8, subject 32.0 -> 25.3, absent word, read
// and thread unchanged; 16 pages did no better, 128 kept half the gain.
const queryCachePages = 32

// openMail opens the mirror alone, with each connection's page cache
// bounded to cachePages (0: SQLite's).
func (env *Env) openMail(ctx context.Context, cachePages int) (*mail.Store, error) {
	paths, cfg, log, err := env.open()
	if err != nil {
		return nil, err
	}
	return mail.Open(ctx, mail.Options{
		DBPath: paths.DB(mail.Schema.Name), BlobDir: filepath.Join(paths.Data, "mail", "blobs"),
		Logger: log.With("component", "mail"), Now: time.Now, EmbedMaxChars: cfg.Mail.EmbedMaxChars,
		CachePages: cachePages,
	})
}

// mailStore is the daemon's store when the daemon answers, else the mirror
// opened for this one command; done releases it.
func (env *Env) mailStore(ctx context.Context) (st *mail.Store, done func(), err error) {
	if env.Mail != nil {
		return env.Mail, func() {}, nil
	}
	if st, err = env.openMail(ctx, queryCachePages); err != nil {
		return nil, nil, err
	}
	return st, func() { st.Close() }, nil
}

// MailCommand returns the mail command `hestia mail SUB` that
// this package answers, or nil.
func MailCommand(sub string) func(context.Context, *Env, []string) error {
	switch sub {
	case "import":
		return MailImport(false)
	case "reconcile":
		return MailImport(true)
	case "search":
		return MailSearch
	case "read":
		return MailRead
	case "thread":
		return MailThread
	}
	return nil
}

// MailRead runs `hestia mail read ID`.
func MailRead(ctx context.Context, env *Env, args []string) error {
	fs := env.Flags("mail read")
	off := fs.Int("offset", 0, "body character offset")
	limit := fs.Int("limit", mail.MaxBodyChars, "body characters")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := ParseInterleaved(fs, args); err != nil {
		return err
	}
	id, err := IDArg(fs, "read")
	if err != nil {
		return err
	}
	st, done, err := env.mailStore(ctx)
	if err != nil {
		return err
	}
	defer done()
	msg, err := st.Read(ctx, id, *off, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return PrintJSON(env.Stdout, msg)
	}
	fmt.Fprintf(env.Stdout, "From:    %s\nTo:      %s\n", msg.From, msg.To)
	if msg.Cc != "" {
		fmt.Fprintf(env.Stdout, "Cc:      %s\n", msg.Cc)
	}
	fmt.Fprintf(env.Stdout, "Date:    %s\nSubject: %s\nMailbox: %s/%s  (thread %d, body %s)\n", msg.Date.In(env.zone()).Format(time.RFC1123), msg.Subject, msg.Account, msg.Mailbox, msg.ThreadID, msg.BodyState)
	for _, at := range msg.Attachments {
		fmt.Fprintf(env.Stdout, "Attach:  [%d] %s (%s, %d bytes)\n", at.Index, at.Filename, at.ContentType, at.Size)
	}
	fmt.Fprintf(env.Stdout, "\n%s\n", msg.Body)
	if msg.NextOffset > 0 {
		fmt.Fprintf(env.Stderr, "more: --offset %d\n", msg.NextOffset)
	}
	return nil
}

// MailSearch runs `hestia mail search [QUERY]`: the running daemon answers
// free-text queries when it is up, the mirror itself otherwise.
func MailSearch(ctx context.Context, env *Env, args []string) error {
	fs := env.Flags("mail search")
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
	if err := ParseInterleaved(fs, args); err != nil {
		return err
	}
	a.Query = strings.Join(fs.Args(), " ")
	a.Unread, a.Flagged, a.HasAttachment = unread.v, flagged.v, att.v
	after, err := env.DateFlag("after", a.After)
	if err != nil {
		return err
	}
	before, err := env.DateFlag("before", a.Before)
	if err != nil {
		return err
	}
	q := mail.Query{Text: a.Query, Account: a.Account, Mailbox: a.Mailbox, Role: a.Role, From: a.From, To: a.To, Cc: a.Cc,
		Subject: a.Subject, Body: a.Body, AttachmentName: a.AttachName, After: after, Before: before, Unread: a.Unread, Flagged: a.Flagged, Attachment: a.HasAttachment,
		Sort: a.Sort, PerMessage: a.PerMessage, Offset: a.Offset, Limit: a.Limit, Count: *countOnly}
	var res mail.Result
	ok := false
	if env.Mail == nil {
		res, ok = SearchViaDaemon(ctx, env, q)
	}
	if !ok {
		st, done, err := env.mailStore(ctx)
		if err != nil {
			return err
		}
		defer done()
		// Ranking by vectors needs every message vector in memory; the
		// daemon keeps them loaded (env.Mail, or above), a one-shot
		// process must not load the whole index for one query, so it
		// ranks lexically.
		q.NoVectors = env.Mail == nil
		q.NoSnippets = !*asJSON // the listing below prints none
		if res, err = st.Search(ctx, q); err != nil {
			return err
		}
	}
	if *countOnly {
		if res.Total == nil {
			res.Total = new(int)
		}
		if *asJSON {
			return PrintJSON(env.Stdout, map[string]int{"total": *res.Total})
		}
		fmt.Fprintln(env.Stdout, *res.Total)
		return nil
	}
	if *asJSON {
		return PrintJSON(env.Stdout, res)
	}
	related := false
	for _, s := range res.Messages {
		mark := " "
		if s.Unread {
			mark = "*"
		}
		switch {
		case s.Partial:
			mark += "~"
		case s.Related:
			mark += "≈"
			related = true
		default:
			mark += " "
		}
		fmt.Fprintf(env.Stdout, "%s %6d  %s  %-28.28s  %s\n", mark, s.ID, s.Date.In(env.zone()).Format("2006-01-02"), s.From, s.Subject)
	}
	if res.Note != "" {
		fmt.Fprintf(env.Stderr, "(~ %s)\n", res.Note)
	}
	if related {
		fmt.Fprintln(env.Stderr, "(≈ close in meaning, without the words)")
	}
	if res.Truncated {
		fmt.Fprintln(env.Stderr, "(ranking cut short: narrow the search to see later results)")
	}
	if res.Degraded != "" && a.Query != "" {
		fmt.Fprintf(env.Stderr, "(lexical only: %s)\n", res.Degraded)
	}
	if res.Page.Next > 0 {
		fmt.Fprintf(env.Stderr, "more: --offset %d\n", res.Page.Next)
	}
	return nil
}

// searchViaDaemon runs a free-text search on the running daemon of this
// home, whose hybrid (vector + lexical) ranking has its vectors loaded. It
// reports false when no daemon is running or it could not answer, and the
// caller searches the mirror itself. Date filters stay local: the CLI reads
// dates in local time, the HTTP API in UTC.
func SearchViaDaemon(ctx context.Context, env *Env, q mail.Query) (mail.Result, bool) {
	if env.Daemon == nil {
		return mail.Result{}, false
	}
	if strings.TrimSpace(q.Text) == "" || !q.After.IsZero() || !q.Before.IsZero() {
		return mail.Result{}, false
	}
	paths, err := env.Paths()
	if err != nil {
		return mail.Result{}, false
	}
	if held, _ := lock.Held(paths.LockFile()); !held {
		return mail.Result{}, false
	}
	c, err := env.Daemon()
	if err != nil {
		return mail.Result{}, false
	}
	v := url.Values{"q": {q.Text}, "limit": {strconv.Itoa(q.Limit)}, "offset": {strconv.Itoa(q.Offset)}}
	for k, s := range map[string]string{"account": q.Account, "mailbox": q.Mailbox, "role": q.Role, "from": q.From, "to": q.To, "cc": q.Cc,
		"subject": q.Subject, "body": q.Body, "attachment_name": q.AttachmentName, "sort": q.Sort} {
		if s != "" {
			v.Set(k, s)
		}
	}
	for k, b := range map[string]*bool{"unread": q.Unread, "flagged": q.Flagged, "attachments": q.Attachment} {
		if b != nil {
			v.Set(k, strconv.FormatBool(*b))
		}
	}
	if q.PerMessage {
		v.Set("per_message", "true")
	}
	if q.Count {
		v.Set("count", "true")
	}
	var res mail.Result
	if err := c.Do(ctx, "GET", "/api/mail/search?"+v.Encode(), nil, &res); err != nil {
		return mail.Result{}, false
	}
	if res.Messages == nil {
		res.Messages = []mail.Summary{}
	}
	return res, true
}

// MailThread runs `hestia mail thread ID`.
func MailThread(ctx context.Context, env *Env, args []string) error {
	fs := env.Flags("mail thread")
	off := fs.Int("offset", 0, "skip this many messages")
	limit := fs.Int("limit", 20, "messages per page")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := ParseInterleaved(fs, args); err != nil {
		return err
	}
	id, err := IDArg(fs, "thread")
	if err != nil {
		return err
	}
	st, done, err := env.mailStore(ctx)
	if err != nil {
		return err
	}
	defer done()
	tp, err := st.Thread(ctx, id, *off, *limit, 0)
	if err != nil {
		return err
	}
	if *asJSON {
		return PrintJSON(env.Stdout, tp)
	}
	fmt.Fprintf(env.Stdout, "thread %d: %s (%d messages, newest first)\n", tp.ThreadID, tp.Subject, tp.Count)
	for _, s := range tp.Messages {
		fmt.Fprintf(env.Stdout, "\n%6d  %s  %s\n        %s\n", s.ID, s.Date.In(env.zone()).Format("2006-01-02 15:04"), s.From, s.Snippet)
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

// MailImport returns `hestia mail import PATH` or, with reconcile, `hestia
// mail reconcile PATH`. They run in the front too: a rescan of an unchanged
// tree lists a few folder mtimes, so process start is most of its time.
func MailImport(reconcile bool) func(context.Context, *Env, []string) error {
	return func(ctx context.Context, env *Env, args []string) error {
		name := "mail import"
		if reconcile {
			name = "mail reconcile"
		}
		fs := env.Flags(name)
		account := fs.String("account", "local", "account name the messages belong to")
		quiet := fs.Bool("quiet", false, "no progress bar")
		asJSON := fs.Bool("json", false, "print the summary as JSON")
		full := fs.Bool("full", false, "list and check every file (by default Maildir folders whose mtime is unchanged are skipped)")
		if err := Parse(fs, args, 1); err != nil {
			return err
		}
		if fs.NArg() != 1 {
			return Usagef("usage: hestia %s PATH", name)
		}
		start := time.Now()
		opts := mail.ImportOptions{Account: *account, Full: *full}
		// The bar redraws in place on a terminal; into a log or pipe only
		// the final line is written, once.
		tty := IsTerminal(env.Stderr)
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
		st, err := env.OpenMailStore(ctx)
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
		if *asJSON {
			return PrintJSON(env.Stdout, p)
		}
		fmt.Fprintf(env.Stdout, "%d files: %d new messages, %d updated, %d unchanged, %d failed, %d removed, %d deleted in %s\n",
			p.Files, p.Added, p.Updated, p.Skipped, p.Failed, p.Removed, p.Deleted, time.Since(start).Round(time.Millisecond))
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
	if !IsTerminal(w) {
		cr = ""
	}
	fmt.Fprintf(w, cr+"[%s%s] %d/%d files, %d new, %.0f msg/s", strings.Repeat("#", n), strings.Repeat(".", width-n), p.Done, p.Files, p.Added, rate)
}

// IsTerminal reports whether w is a terminal (progress bars redraw only there).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
