package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/hestia-dev/hestia/internal/app"
	"github.com/hestia-dev/hestia/internal/mail"
)

// registerImportSource registers an imported folder as a mail source the
// daemon keeps rescanning, unless once is set or path is a single file
// (an mbox or .eml: nothing new arrives in a file we would track).
func registerImportSource(ctx context.Context, st *mail.Store, path, account string, once bool) (mail.Source, bool, error) {
	if once {
		return mail.Source{}, false, nil
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return mail.Source{}, false, nil
	}
	src, err := st.AddSource(ctx, path, account)
	if err != nil {
		return mail.Source{}, false, err
	}
	return src, true, nil
}

// mailSources is `hestia mail sources [remove PATH]`: the folders the
// daemon rescans because `hestia mail import` registered them.
func mailSources(ctx context.Context, env *Env, m *app.Mail, args []string) error {
	if len(args) > 0 && args[0] == "remove" {
		if len(args) != 2 {
			return usagef("usage: hestia mail sources remove PATH")
		}
		if err := m.Store.RemoveSource(ctx, args[1]); err != nil {
			return err
		}
		fmt.Fprintf(env.Stdout, "%s is no longer rescanned (its mail stays in the mirror)\n", args[1])
		return nil
	}
	fs := env.flags("mail sources")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	srcs, err := m.Store.Sources(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if srcs == nil {
			srcs = []mail.Source{}
		}
		return printJSON(env.Stdout, map[string]any{"sources": srcs})
	}
	for _, s := range srcs {
		fmt.Fprintf(env.Stdout, "%-10s %s\n", s.Account, s.Path)
	}
	return nil
}
