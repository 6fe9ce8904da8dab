package clisock

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// shortDir is a fresh folder with a short path: a socket path is at most
// 108 bytes, and t.TempDir's can be longer.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve runs Serve with h on a socket in a fresh folder until the test
// ends, checking that it stops cleanly and takes the socket with it.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	path := Path(shortDir(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, path, h, nil, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left behind after stop: %v", err)
		}
	})
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("socket never appeared")
	return ""
}

// client speaks HTTP on the socket at path, as the CLI does.
func client(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return Dial(ctx, path) }}}
}

func TestServeAnswersHTTPOnAnOwnerOnlySocket(t *testing.T) {
	t.Parallel()
	path := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Authorization"))
	}))
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, %v; want an owner-only socket", fi.Mode(), err)
	}
	req, _ := http.NewRequest("GET", "http://localhost/api/mail/search?q=rain", nil)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := client(path).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "GET /api/mail/search?q=rain Bearer t" {
		t.Errorf("answer %d %q", resp.StatusCode, body)
	}
}

// Without a daemon — no socket, or one a dead daemon left — a client
// learns so at once (ErrNoDaemon) and does the work itself.
func TestDialWithoutDaemon(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	if _, err := Dial(context.Background(), Path(dir)); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("no socket: %v, want ErrNoDaemon", err)
	}
	ln, err := net.Listen("unix", Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, as after a crash
	if _, err := Dial(context.Background(), Path(dir)); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("stale socket: %v, want ErrNoDaemon", err)
	}
	_, err = client(Path(dir)).Get("http://localhost/")
	if !errors.Is(err, ErrNoDaemon) {
		t.Errorf("an HTTP request on a stale socket: %v, want ErrNoDaemon", err)
	}
	// The next daemon replaces the stale file.
	ln2, err := Listen(Path(dir))
	if err != nil {
		t.Fatalf("listening over a stale socket: %v", err)
	}
	ln2.Close()
	if _, err := os.Stat(Path(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("closing the listener left the socket: %v", err)
	}
}

func TestListenErrorsNameThePath(t *testing.T) {
	t.Parallel()
	missing := Path(shortDir(t) + "/missing")
	if _, err := Listen(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("listening in a missing folder: %v; want an error naming %s", err, missing)
	}
}

// samePeer accepts this process's own connections; another uid is refused
// (checked by reading the kernel's credentials, which a test cannot fake).
func TestSamePeerAcceptsOwnUID(t *testing.T) {
	t.Parallel()
	path := Path(shortDir(t))
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatalf("dialing our own socket: %v", err)
	}
	c.Close()
}
