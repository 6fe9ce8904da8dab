package fast

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/wiki"
)

// WikiSearch runs `hestia wiki search QUERY`. It asks the running daemon when there is one (its index is warm
// and its page vectors are loaded, so the answer includes meaning search);
// otherwise it opens the index itself without an embedder: loading every
// page vector to answer one query costs seconds on a large wiki.
func WikiSearch(ctx context.Context, env *Env, args []string) error {
	fs := env.Flags("wiki search")
	asJSON := fs.Bool("json", false, "print results as JSON")
	limit := fs.Int("limit", 10, "most pages to show (1-50)")
	if err := ParseInterleaved(fs, args); err != nil {
		return err
	}
	q := strings.Join(fs.Args(), " ")
	if strings.TrimSpace(q) == "" {
		return Usagef("usage: hestia wiki search QUERY [--json]")
	}
	var res wiki.SearchResult
	ok := false
	if env.Wiki == nil {
		res, ok = wikiSearchViaDaemon(ctx, env, q, *limit)
	}
	if !ok {
		w, done, err := env.wikiIndex(ctx)
		if err != nil {
			return err
		}
		defer done()
		if res, err = w.Search(ctx, q, *limit); err != nil {
			return err
		}
		if env.Wiki == nil {
			res.VectorNote = "meaning search runs in the daemon, which is not running"
		}
	}
	if *asJSON {
		return PrintJSON(env.Stdout, res)
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

// wikiSearchViaDaemon runs the search on this home's running daemon. It
// reports false when no daemon runs or it could not answer; the caller
// then searches the index itself.
func wikiSearchViaDaemon(ctx context.Context, env *Env, q string, limit int) (wiki.SearchResult, bool) {
	if env.Daemon == nil {
		return wiki.SearchResult{}, false
	}
	paths, err := env.Paths()
	if err != nil {
		return wiki.SearchResult{}, false
	}
	if held, _ := lock.Held(paths.LockFile()); !held {
		return wiki.SearchResult{}, false
	}
	c, err := env.Daemon()
	if err != nil {
		return wiki.SearchResult{}, false
	}
	var res wiki.SearchResult
	v := url.Values{"q": {q}, "limit": {strconv.Itoa(limit)}}
	if err := c.Do(ctx, "GET", "/api/wiki/search?"+v.Encode(), nil, &res); err != nil {
		return wiki.SearchResult{}, false
	}
	if res.Hits == nil {
		res.Hits = []wiki.Hit{}
	}
	return res, true
}

// wikiIndex is the daemon's wiki when the daemon answers, else the index
// opened lexically for this one command; done releases it.
func (env *Env) wikiIndex(ctx context.Context) (w *wiki.Wiki, done func(), err error) {
	if env.Wiki != nil {
		return env.Wiki, func() {}, nil
	}
	if w, err = env.openWikiLexical(ctx); err != nil {
		return nil, nil, err
	}
	return w, func() { w.Close() }, nil
}

// openWikiLexical opens the wiki without an embedder: meaning search needs
// every page vector in memory, which the daemon keeps loaded; a process
// that answers one query must not load them all (seconds on a large wiki),
// so it searches words and substrings.
func (env *Env) openWikiLexical(ctx context.Context) (*wiki.Wiki, error) {
	paths, cfg, log, err := env.open()
	if err != nil {
		return nil, err
	}
	return wiki.Open(ctx, wiki.Options{Root: cfg.Wiki.Root(paths), DBPath: paths.DB(wiki.Schema.Name), Logger: log.With("component", "wiki"), Now: time.Now})
}
