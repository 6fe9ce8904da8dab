package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/imapsync"
	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/mailtools"
)

const mailUsage = `usage: hestia mail COMMAND
  import PATH      mirror a Maildir, mbox file or Apple Mail tree (resumable)
  reconcile PATH   like import, and forget messages whose files are gone
  sync [ACCOUNT]   sync IMAP accounts from the configuration
  embed            compute pending message vectors (offline local-embed)
  search [QUERY]   search or browse (filters: -h)
  read ID          read one message
  thread ID        list a message's conversation
  ops              list journaled send/reply/schedule operations
  mailboxes        list mailboxes and roles`

// runMail works on the mail stores directly (they are safe to share with
// a running daemon), so it needs no daemon. The read-only commands (search,
// read, thread) open only the mirror: no embedder, no send journal, nothing
// whose cost grows with the mailbox, since each runs as its own process.
func runMail(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", mailUsage)
	}
	sub, rest := args[0], args[1:]
	reads := map[string]func(context.Context, *Env, func() (*mail.Store, error), []string) error{
		"search": mailSearch, "read": mailRead, "thread": mailThread,
	}
	cmds := map[string]func(context.Context, *Env, *app.Mail, []string) error{
		"import": mailImport(false), "reconcile": mailImport(true), "sync": mailSync, "embed": mailEmbed,
		"ops": mailOps, "mailboxes": mailMailboxes,
	}
	read, isRead := reads[sub]
	fn, ok := cmds[sub]
	if !ok && !isRead {
		return usagef("unknown mail command %q\n%s", sub, mailUsage)
	}
	var a *app.App
	defer func() {
		if a != nil {
			a.Close()
		}
	}()
	openApp := func() (*app.App, error) {
		if a == nil {
			var err error
			if a, err = env.openApp(); err != nil {
				return nil, err
			}
		}
		return a, nil
	}
	if isRead {
		// Flags are checked before anything is opened.
		return read(ctx, env, func() (*mail.Store, error) {
			a, err := openApp()
			if err != nil {
				return nil, err
			}
			return a.OpenMailStore(ctx)
		}, rest)
	}
	a, err := openApp()
	if err != nil {
		return err
	}
	m, err := a.OpenMail(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, env, m, rest)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func mailImport(reconcile bool) func(context.Context, *Env, *app.Mail, []string) error {
	return func(ctx context.Context, env *Env, m *app.Mail, args []string) error {
		name := "mail import"
		if reconcile {
			name = "mail reconcile"
		}
		fs := env.flags(name)
		account := fs.String("account", "local", "account name the messages belong to")
		quiet := fs.Bool("quiet", false, "no progress bar")
		asJSON := fs.Bool("json", false, "print the summary as JSON")
		full := fs.Bool("full", false, "list and check every file (by default Maildir folders whose mtime is unchanged are skipped)")
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
		run := m.Store.Import
		if reconcile {
			run = m.Store.Reconcile
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
			return printJSON(env.Stdout, p)
		}
		fmt.Fprintf(env.Stdout, "%d files: %d new messages, %d updated, %d unchanged, %d failed, %d removed, %d deleted in %s\n",
			p.Files, p.Added, p.Updated, p.Skipped, p.Failed, p.Removed, p.Deleted, time.Since(start).Round(time.Millisecond))
		return nil
	}
}

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

func mailSync(ctx context.Context, env *Env, m *app.Mail, args []string) error {
	fs := env.flags("mail sync")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := parse(fs, args, 1); err != nil {
		return err
	}
	var names []string
	for _, n := range m.IMAPAccounts() {
		if fs.NArg() == 0 || n == fs.Arg(0) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no IMAP account to sync (configure [[mail.accounts]] with imap_host)")
	}
	out := map[string]imapsync.Result{}
	for _, n := range names {
		ia, err := m.IMAPAccount(n)
		if err != nil {
			return err
		}
		r, err := (&imapsync.Syncer{Store: m.Store}).Sync(ctx, ia)
		if err != nil {
			return fmt.Errorf("syncing %s: %w", n, err)
		}
		out[n] = r
		if !*asJSON {
			fmt.Fprintf(env.Stdout, "%s: %d mailboxes, %d fetched, %d flag changes, %d removed\n", n, r.Mailboxes, r.Fetched, r.Flags, r.Removed)
		}
	}
	if *asJSON {
		return printJSON(env.Stdout, out)
	}
	return nil
}

func mailEmbed(ctx context.Context, env *Env, m *app.Mail, args []string) error {
	fs := env.flags("mail embed")
	limit := fs.Int("limit", 1000000, "embed at most this many messages")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	n, err := m.Store.EmbedPending(ctx, 64, *limit)
	fmt.Fprintf(env.Stdout, "%d messages embedded\n", n)
	return err
}

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

func mailSearch(ctx context.Context, env *Env, open func() (*mail.Store, error), args []string) error {
	fs := env.flags("mail search")
	var a mailtools.SearchArgs
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
	q := mail.Query{Text: a.Query, Account: a.Account, Mailbox: a.Mailbox, Role: a.Role, From: a.From, To: a.To, Cc: a.Cc,
		Subject: a.Subject, Body: a.Body, AttachmentName: a.AttachName, After: after, Before: before, Unread: a.Unread, Flagged: a.Flagged, Attachment: a.HasAttachment,
		Sort: a.Sort, PerMessage: a.PerMessage, Offset: a.Offset, Limit: a.Limit, Count: *countOnly}
	res, ok := searchViaDaemon(ctx, env, q)
	if !ok {
		st, err := open()
		if err != nil {
			return err
		}
		// Ranking by vectors needs every message vector in memory; the
		// daemon keeps them loaded (above), a one-shot process must not
		// load the whole index for one query, so it ranks lexically.
		q.NoVectors = true
		if res, err = st.Search(ctx, q); err != nil {
			return err
		}
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
	for _, s := range res.Messages {
		mark := " "
		if s.Unread {
			mark = "*"
		}
		if s.Partial {
			mark += "~"
		} else {
			mark += " "
		}
		fmt.Fprintf(env.Stdout, "%s %6d  %s  %-28.28s  %s\n", mark, s.ID, s.Date.Local().Format("2006-01-02"), s.From, s.Subject)
	}
	if res.Note != "" {
		fmt.Fprintf(env.Stderr, "(~ %s)\n", res.Note)
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
func searchViaDaemon(ctx context.Context, env *Env, q mail.Query) (mail.Result, bool) {
	if strings.TrimSpace(q.Text) == "" || !q.After.IsZero() || !q.Before.IsZero() {
		return mail.Result{}, false
	}
	paths, _, err := env.load()
	if err != nil {
		return mail.Result{}, false
	}
	if held, _ := lock.Held(paths.LockFile()); !held {
		return mail.Result{}, false
	}
	c, err := env.daemon()
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

// parseInterleaved allows flags after the free-text words.
func parseInterleaved(fs *flag.FlagSet, args []string) error {
	var words []string
	for {
		if err := parse(fs, args, -1); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	return fs.Parse(append([]string{"--"}, words...))
}

func dateFlag(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(time.DateOnly, v, time.Local)
	if err != nil {
		return time.Time{}, usagef("--%s %q is not a date like 2026-06-01", name, v)
	}
	return t, nil
}

func idArg(fs *flag.FlagSet, what string) (int64, error) {
	if fs.NArg() != 1 {
		return 0, usagef("usage: hestia mail %s ID", what)
	}
	id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		return 0, usagef("message id %q is not a number", fs.Arg(0))
	}
	return id, nil
}

func mailRead(ctx context.Context, env *Env, open func() (*mail.Store, error), args []string) error {
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
	st, err := open()
	if err != nil {
		return err
	}
	msg, err := st.Read(ctx, id, *off, *limit)
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

func mailThread(ctx context.Context, env *Env, open func() (*mail.Store, error), args []string) error {
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
	st, err := open()
	if err != nil {
		return err
	}
	tp, err := st.Thread(ctx, id, *off, *limit, 0)
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

func mailOps(ctx context.Context, env *Env, m *app.Mail, args []string) error {
	fs := env.flags("mail ops")
	state := fs.String("state", "", "only operations in this state (e.g. needs_review)")
	limit := fs.Int("limit", 50, "how many (max 200)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	ops, err := m.Journal.List(ctx, *state, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if ops == nil {
			ops = []journal.Op{}
		}
		return printJSON(env.Stdout, map[string]any{"operations": ops})
	}
	for _, op := range ops {
		fmt.Fprintf(env.Stdout, "%5d  %-8s %-12s %s  %s → %s  %q\n", op.ID, op.Kind, op.State, op.CreatedAt.Local().Format("2006-01-02 15:04"),
			op.Account, strings.Join(op.Draft.To, ","), op.Draft.Subject)
		if op.State == "needs_review" {
			fmt.Fprintf(env.Stdout, "       %s\n", op.Evidence)
		}
	}
	return nil
}

func mailMailboxes(ctx context.Context, env *Env, m *app.Mail, args []string) error {
	fs := env.flags("mail mailboxes")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	boxes, err := m.Store.Mailboxes(ctx, "")
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, boxes)
	}
	for _, b := range boxes {
		fmt.Fprintf(env.Stdout, "%-12s %-30s %-8s %d\n", b.Account, b.Name, b.Role, b.Messages)
	}
	return nil
}
