package cli

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/wiki"
)

const wikiUsage = `usage: hestia wiki COMMAND
  search QUERY [--json] [--limit N]   search pages (words, partial words, meaning)
  read PAGE [--offset N] [--json]     print a page (path, file name or title)
  links PAGE [--json]                 outgoing links and backlinks of a page
  lint [--json]                       broken links, orphans, duplicate titles, missing front matter, due reviews
  reindex                             rebuild the index from the folder
  import PATH...                      copy files or folders into sources/ (never follows symlinks)`

// runWiki works on the wiki folder and index directly (safe alongside a
// running daemon: SQLite serialises writers, the folder is the truth).
func runWiki(ctx context.Context, env *Env, args []string) error {
	if len(args) == 0 {
		return usagef("%s", wikiUsage)
	}
	sub, rest := args[0], args[1:]
	cmds := map[string]func(context.Context, *Env, *wiki.Wiki, []string) error{
		"read": wikiRead, "links": wikiLinks, "lint": wikiLint, "reindex": wikiReindex, "import": wikiImport,
	}
	if sub == "search" {
		return wikiSearch(ctx, env, rest)
	}
	fn, ok := cmds[sub]
	if !ok {
		return usagef("unknown wiki command %q\n%s", sub, wikiUsage)
	}
	a, err := env.openApp()
	if err != nil {
		return err
	}
	defer a.Close()
	w, err := a.OpenWiki(ctx)
	if err != nil {
		return err
	}
	return fn(ctx, env, w, rest)
}

// wikiSearch runs `hestia wiki search QUERY`: GET /api/wiki/search on the
// running daemon (its page vectors loaded, so the answer includes meaning
// search), else the index opened for this command, lexically.
func wikiSearch(ctx context.Context, env *Env, args []string) error {
	fs := env.flags("wiki search")
	asJSON := fs.Bool("json", false, "print results as JSON")
	limit := fs.Int("limit", 10, "most pages to show (1-50)")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	q := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(q) == "" {
		return usagef("usage: hestia wiki search QUERY [--json]")
	}
	var res wiki.SearchResult
	v := url.Values{"q": {q}, "limit": {strconv.Itoa(*limit)}}
	asked, err := env.askDaemon(ctx, "/api/wiki/search?"+v.Encode(), &res)
	if !asked && err == nil {
		var w *wiki.Wiki
		if w, err = env.openWikiLexical(ctx); err != nil {
			return err
		}
		defer w.Close()
		if res, err = w.Search(ctx, q, *limit); err == nil {
			res.VectorNote = "meaning search runs in the daemon, which is not running"
		}
	}
	if err != nil {
		return err
	}
	if *asJSON {
		if res.Hits == nil {
			res.Hits = []wiki.Hit{}
		}
		return printJSON(env.Stdout, res)
	}
	if len(res.Hits) == 0 {
		fmt.Fprintln(env.Stdout, "no pages found")
	}
	for _, h := range res.Hits {
		where := h.Path
		if h.Heading != "" {
			where += " § " + h.Heading
		}
		mark := ""
		if h.Untrusted {
			mark = " [from outside]"
		}
		fmt.Fprintf(env.Stdout, "%s — %s%s\n    %s\n", h.Title, where, mark, h.Snippet)
	}
	return nil
}

func wikiRead(ctx context.Context, env *Env, w *wiki.Wiki, args []string) error {
	fs := env.flags("wiki read")
	asJSON := fs.Bool("json", false, "print the page window as JSON")
	offset := fs.Int64("offset", 0, "byte offset to start at (next_offset of a previous read)")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("usage: hestia wiki read PAGE [--offset N] [--json]")
	}
	ref := strings.Join(fs.Args(), " ")
	if *asJSON {
		r, err := w.Read(ctx, ref, *offset, 0)
		if err != nil {
			return err
		}
		return printJSON(env.Stdout, r)
	}
	for off := *offset; ; {
		r, err := w.Read(ctx, ref, off, wiki.MaxReadChars)
		if err != nil {
			return err
		}
		fmt.Fprint(env.Stdout, r.Content)
		if r.NextOffset == 0 {
			return nil
		}
		off = r.NextOffset
	}
}

func wikiLinks(ctx context.Context, env *Env, w *wiki.Wiki, args []string) error {
	fs := env.flags("wiki links")
	asJSON := fs.Bool("json", false, "print as JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("usage: hestia wiki links PAGE [--json]")
	}
	l, err := w.PageLinks(ctx, strings.Join(fs.Args(), " "))
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, l)
	}
	fmt.Fprintf(env.Stdout, "%s\n  links to:\n", l.Path)
	for _, o := range l.Outgoing {
		to := o.Path
		if o.Broken {
			to = "(broken)"
		}
		fmt.Fprintf(env.Stdout, "    [[%s]] → %s (line %d)\n", o.Target, to, o.Line)
	}
	fmt.Fprintln(env.Stdout, "  linked from:")
	for _, b := range l.Backlinks {
		fmt.Fprintf(env.Stdout, "    %s (line %d)\n", b.Path, b.Line)
	}
	return nil
}

func wikiLint(ctx context.Context, env *Env, w *wiki.Wiki, args []string) error {
	fs := env.flags("wiki lint")
	asJSON := fs.Bool("json", false, "print findings as JSON")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	if _, err := w.Reconcile(ctx); err != nil {
		return err
	}
	fs2, err := w.Lint(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"findings": fs2})
	}
	for _, f := range fs2 {
		loc := f.Path
		if f.Line > 0 {
			loc = fmt.Sprintf("%s:%d", f.Path, f.Line)
		}
		fmt.Fprintf(env.Stdout, "%s: %s: %s\n", loc, f.Kind, f.Detail)
	}
	fmt.Fprintf(env.Stdout, "%d findings\n", len(fs2))
	return nil
}

func wikiReindex(ctx context.Context, env *Env, w *wiki.Wiki, args []string) error {
	fs := env.flags("wiki reindex")
	if err := parse(fs, args, 0); err != nil {
		return err
	}
	st, err := w.Reindex(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%d files, %d indexed, %d unreadable\n", st.Seen, st.Indexed, st.Failed)
	return nil
}

func wikiImport(ctx context.Context, env *Env, w *wiki.Wiki, args []string) error {
	fs := env.flags("wiki import")
	asJSON := fs.Bool("json", false, "print results as JSON")
	if err := parseInterleaved(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usagef("usage: hestia wiki import PATH...")
	}
	rs, err := w.Import(ctx, fs.Args())
	if err != nil {
		return err
	}
	if _, err := w.Reconcile(ctx); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(env.Stdout, map[string]any{"results": rs})
	}
	for _, r := range rs {
		line := fmt.Sprintf("%-8s %s", r.Status, r.Origin)
		if r.Dest != "" {
			line += " → " + r.Dest
		}
		if r.Reason != "" {
			line += " (" + r.Reason + ")"
		}
		fmt.Fprintln(env.Stdout, line)
	}
	return nil
}
