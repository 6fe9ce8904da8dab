package clisock

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/clisock/wire"
)

func echo(_ context.Context, req Request) Reply {
	if req.Args[0] != "mail" {
		return Reply{}
	}
	return Reply{Handled: true, Stdout: []byte(strings.Join(req.Args, " ") + "\n"), Stderr: []byte("tz=" + req.TZ), Code: 3}
}

// start runs a server answering with echo in a fresh data folder and
// returns its socket path.
func start(t *testing.T) string {
	t.Helper()
	return startWith(t, echo)
}

// startWith runs a server with handler h and stops it when the test ends,
// checking that the socket goes with it.
func startWith(t *testing.T, h Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cs") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := Path(dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Path: path, Handler: h}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left behind after stop: %v", err)
		}
	})
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(path); err == nil {
			return path
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("socket never appeared")
	return ""
}

func TestAskAnswersAndHandsBack(t *testing.T) {
	t.Parallel()
	path := start(t)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, %v; want an owner-only socket", fi.Mode(), err)
	}
	rep, err := wire.Ask(path, Request{Args: []string{"mail", "search", "rain"}, TZ: "Europe/Rome"}, 5*time.Second)
	if err != nil || !rep.Handled || string(rep.Stdout) != "mail search rain\n" || string(rep.Stderr) != "tz=Europe/Rome" || rep.Code != 3 {
		t.Fatalf("reply %+v, %v", rep, err)
	}
	rep, err = wire.Ask(path, Request{Args: []string{"chat"}}, 5*time.Second)
	if err != nil || rep.Handled {
		t.Errorf("a command the handler does not take: %+v, %v", rep, err)
	}
}

func TestAskWithoutDaemon(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := wire.Ask(Path(dir), Request{Args: []string{"mail"}}, time.Second); !errors.Is(err, wire.ErrNoDaemon) {
		t.Errorf("no socket: %v, want ErrNoDaemon", err)
	}
	// A socket file left by a daemon that died: nobody accepts.
	ln, err := net.Listen("unix", Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := wire.Ask(Path(dir), Request{Args: []string{"mail"}}, time.Second); !errors.Is(err, wire.ErrNoDaemon) {
		t.Errorf("stale socket: %v, want ErrNoDaemon", err)
	}
}

func TestRunReplacesStaleSocket(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "cs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(Path(dir), []byte("left over"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&Server{Path: Path(dir), Handler: echo}).Run(ctx) }()
	var rep Reply
	for i := 0; i < 200; i++ {
		if rep, err = wire.Ask(Path(dir), Request{Args: []string{"mail", "x"}}, time.Second); err == nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err != nil || !rep.Handled {
		t.Errorf("after a stale socket file: %+v, %v", rep, err)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

func TestMalformedRequestsGetNoAnswer(t *testing.T) {
	t.Parallel()
	s := &Server{Handler: echo}
	good := wire.AppendRequest(nil, Request{Args: []string{"mail", "read", "7"}, TZ: "UTC"})
	for name, in := range map[string][]byte{
		"JSON, the old frame": []byte(`{"args":["mail","read","7"]}` + "\n"),
		"empty":               nil,
		"cut short":           good[:len(good)-2],
		"no command line":     wire.AppendRequest(nil, Request{}),
		"too long":            wire.AppendRequest(nil, Request{Args: []string{strings.Repeat("a", wire.MaxRequest)}}),
	} {
		if b, err := s.answer(context.Background(), bytes.NewReader(in)); err == nil {
			t.Errorf("%s: answered %q", name, b)
		}
	}
	b, err := s.answer(context.Background(), bytes.NewReader(good))
	if err != nil {
		t.Fatalf("well-formed request: %v", err)
	}
	if rep, err := wire.ParseReply(b); err != nil || !rep.Handled || string(rep.Stdout) != "mail read 7\n" || string(rep.Stderr) != "tz=UTC" || rep.Code != 3 {
		t.Errorf("well-formed request: %+v, %v", rep, err)
	}
}

func TestPeerIsThisUser(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Skipf("unix sockets: %v", err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("unix", filepath.Join(dir, "s")); err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := samePeer(c.(*net.UnixConn)); err != nil {
		t.Errorf("a connection from this user refused: %v", err)
	}
}

func FuzzAnswer(f *testing.F) {
	f.Add(wire.AppendRequest(nil, Request{Args: []string{"mail", "search", "rain"}, TZ: "UTC"}))
	f.Add(wire.AppendRequest(nil, Request{Args: []string{"mail"}}))
	f.Add([]byte("hq1\n\x00"))
	f.Add([]byte(`{"args":["mail"]}` + "\n"))
	s := &Server{Handler: echo}
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := s.answer(context.Background(), bytes.NewReader(in))
		if err != nil {
			return
		}
		if _, err := wire.ParseReply(b); err != nil {
			t.Fatalf("answered a reply that does not parse: %v", err)
		}
	})
}

// A handler that panics leaves the server running and the client without an
// answer (it then runs the command itself).
func TestPanickingHandler(t *testing.T) {
	t.Parallel()
	path := startWith(t, func(_ context.Context, req Request) Reply {
		if req.Args[0] == "boom" {
			panic("boom")
		}
		return echo(context.Background(), req)
	})
	if rep, err := wire.Ask(path, Request{Args: []string{"boom"}}, 5*time.Second); err == nil {
		t.Errorf("a panicking query answered: %+v", rep)
	}
	if rep, err := wire.Ask(path, Request{Args: []string{"mail", "x"}}, 5*time.Second); err != nil || !rep.Handled {
		t.Errorf("after a panic: %+v, %v", rep, err)
	}
}
