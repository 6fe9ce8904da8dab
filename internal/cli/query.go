package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/logging"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/wiki"
)

// The read-only queries (`mail search|read|thread`, `wiki search`) are what
// people run one process at a time, as they run `notmuch search`. With a
// daemon running they are its HTTP API's requests, sent on its Unix socket
// (askDaemon), so the CLI answers exactly as the API does, from the
// daemon's warm stores and with its vectors loaded. Without one, the
// command opens the store itself, lexically (below).

// daemonWait bounds how long a query waits for the daemon's answer; a
// daemon that does not answer in time is left to itself and the command
// reads the stores instead.
const daemonWait = 30 * time.Second

// askDaemon sends GET path to this home's running daemon on its socket and
// decodes the answer into out. It reports false, with no error, when no
// daemon answers there: the caller then answers from the stores itself
// (a read-only query is safe to run again). An error the daemon answers
// with is the command's error.
func (env *Env) askDaemon(ctx context.Context, path string, out any) (bool, error) {
	if env.logLevel != "" {
		if _, err := logging.ParseLevel(env.logLevel); err != nil {
			return false, usagef("--log-level: %v", err)
		}
	}
	paths, err := config.ResolvePaths(env.Getenv)
	if err != nil {
		return false, err
	}
	// No socket file is the common case without a daemon: a stat says so
	// before the token is read and an HTTP client is set up.
	if _, err := os.Stat(clisock.Path(paths.Data)); err != nil {
		return false, nil
	}
	c, err := daemonclient.Socket(paths)
	if err != nil {
		return false, nil // no token: no daemon ever ran on this home
	}
	ctx, cancel := context.WithTimeout(ctx, daemonWait)
	defer cancel()
	err = c.Do(ctx, "GET", path, nil, out)
	var apiErr *daemonclient.APIError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &apiErr) && apiErr.Status < 500:
		// The store's own words, as the command prints them without a
		// daemon (the bad request is the caller's).
		return true, errors.New(apiErr.Message)
	case errors.As(err, &apiErr):
		return true, err
	case !errors.Is(err, clisock.ErrNoDaemon):
		fmt.Fprintf(env.Stderr, "(the daemon did not answer: %v; reading the stores here)\n", err)
	}
	return false, nil
}

// open resolves what a command that works on a store directly needs: the
// paths (created when missing), the configuration and its logger.
func (env *Env) open() (config.Paths, config.Config, *slog.Logger, error) {
	paths, cfg, err := env.load()
	if err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	if err := paths.Ensure(); err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	log, err := env.logger()
	if err != nil {
		return config.Paths{}, config.Config{}, nil, err
	}
	return paths, cfg, log, nil
}

// queryCachePages is the page cache of a process that runs one search,
// read or thread (see store.OpenOptions). `hestia mail search` without the
// daemon at 100k messages, interleaved, on a VM where a page fault costs
// ~10 µs: rare word 34.0 -> 25.6 ms, common 42.9 -> 35.6, phrase 28.4 ->
// 24.5, from + date 33.9 -> 26.8, subject 32.0 -> 25.3, absent word, read
// and thread unchanged; 16 pages did no better, 128 kept half the gain.
const queryCachePages = 32

// openMail opens the mail mirror alone — no embedder, no send journal,
// nothing whose cost grows with the mailbox — with each connection's page
// cache bounded to cachePages (0: SQLite's). The store is safe to share
// with a running daemon.
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

// dateFlag reads a YYYY-MM-DD flag value in local time.
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

// idArg reads the one positional message id of `mail read|thread`.
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
