package cli

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/mail"
)

// A query asks whatever answers on the home's socket, with the home's
// token; the daemon's error answers are the command's errors, in the
// store's words; a daemon that answers nothing (it hung up, or only its
// stale socket is left) sends the command to the stores, which answer as
// they do without a daemon.
func TestQueriesAskTheSocketAndFallBack(t *testing.T) {
	home, err := os.MkdirTemp("", "hq") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)
	if r := run(t, home, nil, "mail", "import", "--quiet", md); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	alone := run(t, home, nil, "mail", "read", "1")
	if alone.code != 0 || !strings.Contains(alone.stdout, "Solar panels") {
		t.Fatalf("mail read without a daemon: %+v", alone)
	}
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := authtoken.LoadOrCreate(paths.TokenFile())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var auth []string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		switch r.URL.Path {
		case "/api/mail/messages/2":
			httpjson.Error(w, http.StatusNotFound, "not_found", "message 2 is not in the daemon's mirror")
		case "/api/mail/messages/3":
			httpjson.Error(w, http.StatusInternalServerError, "internal", "disk on fire")
		default:
			panic(http.ErrAbortHandler) // hang up without an answer
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clisock.Serve(ctx, clisock.Path(home), h, nil, time.Second) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(clisock.Path(home)); err == nil {
			break
		}
		if i == 400 {
			t.Fatal("no socket")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if r := run(t, home, nil, "mail", "read", "2"); r.code != 1 || r.stderr != "hestia mail: message 2 is not in the daemon's mirror\n" {
		t.Errorf("a daemon's 404: %+v", r)
	}
	if r := run(t, home, nil, "mail", "read", "3"); r.code != 1 || !strings.Contains(r.stderr, "disk on fire (internal)") {
		t.Errorf("a daemon's 500: %+v", r)
	}
	r := run(t, home, nil, "mail", "read", "1")
	if r.code != 0 || r.stdout != alone.stdout || !strings.Contains(r.stderr, "the daemon did not answer") {
		t.Errorf("a daemon that hangs up: %+v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for _, a := range auth {
		if a != "Bearer "+tok.Value() {
			t.Errorf("a request carried %q, not the home's token", a)
		}
	}
	if len(auth) != 3 {
		t.Errorf("%d requests reached the socket, want 3", len(auth))
	}
	mu.Unlock()

	// A socket file left by a daemon that died: nothing listens.
	ln, err := net.Listen("unix", clisock.Path(home))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if r := run(t, home, nil, "mail", "read", "1"); r != alone {
		t.Errorf("with a stale socket: %+v, want %+v", r, alone)
	}
}

// A search, read or thread opens the mirror with a small page cache (see
// queryCachePages); an import keeps SQLite's.
func TestQueriesOpenWithASmallCache(t *testing.T) {
	home := t.TempDir()
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	}}
	ctx := context.Background()
	for pages, want := range map[int]int{queryCachePages: queryCachePages, 0: -2000} {
		var got int
		err := func() error {
			st, err := env.openMail(ctx, pages)
			if err != nil {
				return err
			}
			defer st.Close()
			return st.DB().QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&got)
		}()
		if err != nil || got != want {
			t.Errorf("opened with %d pages: cache_size = %d (%v), want %d", pages, got, err, want)
		}
	}
	// The queries use the small one.
	var used int
	if err := env.withMail(ctx, func(st *mail.Store) error {
		return st.DB().QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&used)
	}); err != nil || used != queryCachePages {
		t.Errorf("a query's cache_size = %d (%v), want %d", used, err, queryCachePages)
	}
}

// The queries' bad arguments are usage errors (exit status 2) naming what
// is wrong, daemon or not; -h prints the flags.
func TestQueryUsage(t *testing.T) {
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mail", "read", "abc"}, 2, `message id "abc" is not a number`},
		{[]string{"mail", "thread"}, 2, "usage: hestia mail thread ID"},
		{[]string{"mail", "search", "--after", "soon"}, 2, `--after "soon" is not a date like 2026-06-01`},
		{[]string{"mail", "search", "--unread=maybe"}, 2, "want true or false"},
		{[]string{"wiki", "search"}, 2, "usage: hestia wiki search QUERY"},
		{[]string{"--log-level", "loud", "wiki", "search", "x"}, 2, "log-level"},
		{[]string{"mail", "search", "-h"}, 0, "-from"},
	} {
		if r := run(t, home, nil, c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d naming %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}
