package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/contacts"
	"github.com/hestia-dev/hestia/internal/contacts/contacttools"
)

const contactsUsage = `usage: hestia contacts COMMAND
  search QUERY [--json]              find people by name, nickname, organisation or address
  resolve NAME [--json]              rank recipients for a name ("Anna from Polimi") with evidence
  import PATH [--name NAME]          index a vdir folder of .vcf files
  sync [--json]                      re-read every known address book`

func runContacts(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", contactsUsage)
	}
	sub, rest := args[0], args[1:]
	cmds := map[string]func(context.Context, *Env, *app.Contacts, []string) error{
		"search": contactsSearch, "resolve": contactsResolve, "import": contactsImport, "sync": contactsSync,
	}
	fn, ok := cmds[sub]
	if !ok {
		return usagef("unknown contacts command %q\n%s", sub, contactsUsage)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	c, err := a.OpenContacts(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, env, c, rest)
}

func contactsErr(err error) error {
	if err != nil && strings.Contains(err.Error(), contacts.ErrBadQuery.Error()) {
		return usagef("%v", err)
	}
	return err
}

func contactsSearch(ctx context.Context, env *Env, c *app.Contacts, args []string) error {
	fs := env.flags("contacts search")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, calReorder(args), -1); err != nil {
		return err
	}
	res, err := c.Deps.Search(ctx, contacttools.SearchArgs{Query: strings.Join(fs.Args(), " ")})
	if err != nil {
		return contactsErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	for _, p := range res.People {
		org := ""
		if p.Org != "" {
			org = " (" + p.Org + ")"
		}
		where := "[" + strings.Join(p.Books, ",") + "]"
		if p.SeenInMail {
			where = "[seen in mail]"
		}
		if m := p.Mail; m != nil {
			last := "never"
			if m.Last != nil {
				last = m.Last.Format("2006-01-02")
			}
			where += fmt.Sprintf(" mailed %d, received %d, last %s", m.Sent, m.Received, last)
		}
		fmt.Fprintf(env.Stdout, "%s%s  %s  %s  %s\n", p.Name, org, strings.Join(p.Emails, ", "), strings.Join(p.Phones, ", "), where)
	}
	if len(res.People) == 0 {
		fmt.Fprintln(env.Stdout, "no contacts")
	}
	return nil
}

func contactsResolve(ctx context.Context, env *Env, c *app.Contacts, args []string) error {
	fs := env.flags("contacts resolve")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, calReorder(args), -1); err != nil {
		return err
	}
	res, err := c.Deps.Resolve(ctx, contacttools.ResolveArgs{Name: strings.Join(fs.Args(), " ")})
	if err != nil {
		return contactsErr(err)
	}
	if *asJSON {
		return printJSON(env.Stdout, res)
	}
	fmt.Fprintf(env.Stdout, "%s: %s\n", res.Status, res.Note)
	for i, cand := range res.Candidates {
		ev := cand.Evidence
		card := "no card"
		if ev.Card {
			card = "card in " + strings.Join(ev.Books, ",")
		}
		last := "never"
		if ev.Last != nil {
			last = ev.Last.Format("2006-01-02")
		}
		fmt.Fprintf(env.Stdout, "%d. %s <%s>  score %.2f — %s, mailed %d, received %d, last %s, matched %s\n",
			i+1, cand.Name, cand.Email, cand.Score, card, ev.Mailed, ev.Received, last, ev.Matched)
	}
	return nil
}

func contactsImport(ctx context.Context, env *Env, c *app.Contacts, args []string) error {
	fs := env.flags("contacts import")
	name := fs.String("name", "", "address book name (default: the folder's name)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, calReorder(args), 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("usage: hestia contacts import PATH [--name NAME]")
	}
	path, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	if *name == "" {
		*name = filepath.Base(path)
	}
	st, err := c.Store.Sync(ctx, contacts.Source{Name: *name, Path: path})
	if err != nil {
		return err
	}
	return printContactsSync(env, []contacts.SyncStats{st}, *asJSON)
}

func printContactsSync(env *Env, all []contacts.SyncStats, asJSON bool) error {
	if asJSON {
		return printJSON(env.Stdout, map[string]any{"books": all})
	}
	for _, st := range all {
		mirror := ""
		if st.Mirror != "" {
			mirror = " (server: " + st.Mirror + ")"
		}
		fmt.Fprintf(env.Stdout, "%s: %d files, %d added, %d updated, %d removed, %d unchanged, %d cards, %d skipped%s\n",
			st.Book, st.Files, st.Added, st.Updated, st.Removed, st.Unchanged, st.Cards, len(st.Skipped), mirror)
		for _, sk := range st.Skipped {
			fmt.Fprintf(env.Stdout, "  skipped %s: %s\n", sk.File, sk.Reason)
		}
		if st.Kept > 0 {
			fmt.Fprintf(env.Stdout, "  %d cards of broken files kept from their last good version\n", st.Kept)
		}
	}
	return nil
}

func contactsSync(ctx context.Context, env *Env, c *app.Contacts, args []string) error {
	fs := env.flags("contacts sync")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	all, err := c.SyncAll(ctx)
	if *asJSON {
		if perr := printContactsSync(env, all, true); perr != nil {
			return perr
		}
		return err
	}
	if perr := printContactsSync(env, all, false); perr != nil {
		return perr
	}
	if n, cerr := c.Store.CountCorrespondents(ctx); cerr == nil {
		fmt.Fprintf(env.Stdout, "seen in mail: %d addresses\n", n)
	}
	return err
}
