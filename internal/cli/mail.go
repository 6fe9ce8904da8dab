package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/mail/imapsync"
	"github.com/hestia-dev/hestia/internal/mail/journal"
)

const mailUsage = `usage: hestia mail COMMAND
  import PATH      mirror a Maildir, mbox file or Apple Mail tree (resumable);
                   a folder becomes a source the daemon rescans (--once: copy only)
  sources          list rescanned folders (sources remove PATH to stop)
  reconcile PATH   like import, and forget messages whose files are gone
  sync [ACCOUNT]   sync IMAP accounts from the configuration
  embed            compute pending message vectors (offline local-embed)
  search [QUERY]   search or browse (filters: -h)
  read ID          read one message
  thread ID        list a message's conversation
  ops              list journaled send/reply/schedule operations
  mailboxes        list mailboxes and roles`

// runMail works on the mail stores directly (they are safe to share with
// a running daemon), so it needs no daemon. The read-only queries (search,
// read, thread) ask the running daemon when there is one (mailquery.go).
func runMail(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", mailUsage)
	}
	sub, rest := args[0], args[1:]
	cmds := map[string]func(context.Context, *Env, *app.Mail, []string) error{
		"sync": mailSync, "embed": mailEmbed,
		"ops": mailOps, "mailboxes": mailMailboxes, "sources": mailSources,
	}
	if query := mailQuery(sub); query != nil {
		return query(ctx, env, rest)
	}
	fn, ok := cmds[sub]
	if !ok {
		return usagef("unknown mail command %q\n%s", sub, mailUsage)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	m, err := a.OpenMail(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, env, m, rest)
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
