package wire

import (
	"bytes"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, req := range []Request{
		{Args: []string{"mail", "search", "rain"}, TZ: "Europe/Rome"},
		{Args: []string{"mail", "search", "line one\nline two", "", "naïve \x00 bytes"}},
		{Args: []string{strings.Repeat("x", 1000)}},
	} {
		got, err := ReadRequest(bytes.NewReader(AppendRequest(nil, req)))
		if err != nil || !slices.Equal(got.Args, req.Args) || got.TZ != req.TZ {
			t.Errorf("%q: got %q, %v", req.Args, got, err)
		}
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	good := AppendRequest(nil, Request{Args: []string{"mail", "read", "7"}})
	for name, c := range map[string]struct {
		in   []byte
		want string
	}{
		"empty":          {nil, "frame's start"},
		"JSON":           {[]byte(`{"args":["mail"]}` + "\n"), "the frame starts"},
		"no arguments":   {AppendRequest(nil, Request{}), "0 arguments"},
		"cut short":      {good[:len(good)-3], "argument 3"},
		"no time zone":   {good[:len(good)-1], "time zone"},
		"huge count":     {append([]byte(requestMagic), 0xff, 0xff, 0xff, 0xff, 0x0f), "arguments: want"},
		"huge length":    {append([]byte(requestMagic), 1, 0xff, 0xff, 0xff, 0xff, 0x0f), "over"},
		"over the limit": {AppendRequest(nil, Request{Args: []string{strings.Repeat("a", MaxRequest)}}), "argument 1"},
	} {
		_, err := ReadRequest(bytes.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.want)
		}
	}
}

func TestReplyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, rep := range []Reply{
		{},
		{Handled: true, Stdout: []byte("a\nb\n"), Stderr: []byte("warn"), Code: 3},
		{Handled: true, Code: -1},
		{Handled: true, Stdout: bytes.Repeat([]byte("x"), 100000), Code: 1<<31 - 1},
	} {
		got, err := ParseReply(AppendReply(nil, rep))
		if err != nil || got.Handled != rep.Handled || got.Code != rep.Code || !bytes.Equal(got.Stdout, rep.Stdout) || !bytes.Equal(got.Stderr, rep.Stderr) {
			t.Errorf("%+v: got %+v, %v", rep, got, err)
		}
	}
}

func TestBadReplies(t *testing.T) {
	t.Parallel()
	good := AppendReply(nil, Reply{Handled: true, Stdout: []byte("out"), Stderr: []byte("err")})
	for name, c := range map[string]struct {
		in   []byte
		want string
	}{
		"empty":          {nil, "reply frame"},
		"old JSON":       {[]byte(`{"handled":true}`), "reply frame"},
		"handled byte":   {append([]byte(replyMagic), 2, 0, 0, 0), "handled byte 2"},
		"no status":      {append([]byte(replyMagic), 1), "exit status"},
		"status too big": {append(append([]byte(replyMagic), 1), 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0), "exit status"},
		"stdout short":   {good[:len(replyMagic)+4], "stdout"},
		"no stderr":      {good[:len(good)-4], "stderr"},
		"trailing bytes": {append(bytes.Clone(good), 'x'), "after the reply"},
	} {
		_, err := ParseReply(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", name, err, c.want)
		}
	}
}

// serve answers one connection on a socket in a fresh folder with f.
func serve(t *testing.T, f func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "wire") // short: socket paths are limited to 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", Path(dir))
	if err != nil {
		t.Skipf("unix sockets: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		f(c)
	}()
	return Path(dir)
}

func TestAsk(t *testing.T) {
	t.Parallel()
	path := serve(t, func(c net.Conn) {
		req, err := ReadRequest(c)
		if err != nil {
			return
		}
		c.Write(AppendReply(nil, Reply{Handled: true, Stdout: []byte(strings.Join(req.Args, " ")), Stderr: []byte(req.TZ), Code: 2}))
	})
	rep, err := Ask(path, Request{Args: []string{"mail", "search", "rain"}, TZ: "UTC"}, 5*time.Second)
	if err != nil || !rep.Handled || string(rep.Stdout) != "mail search rain" || string(rep.Stderr) != "UTC" || rep.Code != 2 {
		t.Fatalf("%+v, %v", rep, err)
	}
}

// A reply longer than one read (the client's buffer grows).
func TestAskLongReply(t *testing.T) {
	t.Parallel()
	long := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	path := serve(t, func(c net.Conn) {
		if _, err := ReadRequest(c); err == nil {
			c.Write(AppendReply(nil, Reply{Handled: true, Stdout: long}))
		}
	})
	rep, err := Ask(path, Request{Args: []string{"mail", "search", "x"}}, 5*time.Second)
	if err != nil || !bytes.Equal(rep.Stdout, long) {
		t.Fatalf("%d bytes back, %v", len(rep.Stdout), err)
	}
}

func TestAskFailures(t *testing.T) {
	t.Parallel()
	if _, err := Ask(Path(t.TempDir()), Request{Args: []string{"mail"}}, time.Second); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("no socket: %v", err)
	}
	// A daemon that does not speak this frame (one from before it) hangs
	// up without a reply.
	path := serve(t, func(c net.Conn) { c.Read(make([]byte, 100)) })
	if _, err := Ask(path, Request{Args: []string{"mail"}}, 5*time.Second); err == nil || !strings.Contains(err.Error(), "reply frame") {
		t.Errorf("hung up: %v", err)
	}
	// A daemon that does not answer in time.
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	path = serve(t, func(c net.Conn) { <-done })
	if _, err := Ask(path, Request{Args: []string{"mail"}}, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "in time") {
		t.Errorf("silent daemon: %v", err)
	}
}

func FuzzReadRequest(f *testing.F) {
	f.Add(AppendRequest(nil, Request{Args: []string{"mail", "search", "rain"}, TZ: "UTC"}))
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := ReadRequest(bytes.NewReader(in))
		if err != nil {
			return
		}
		if len(req.Args) == 0 {
			t.Fatal("a request without arguments accepted")
		}
		again, err := ReadRequest(bytes.NewReader(AppendRequest(nil, req)))
		if err != nil || !slices.Equal(again.Args, req.Args) || again.TZ != req.TZ {
			t.Fatalf("re-encoded request reads back as %q, %v", again, err)
		}
	})
}

func FuzzParseReply(f *testing.F) {
	f.Add(AppendReply(nil, Reply{Handled: true, Stdout: []byte("a"), Stderr: []byte("b"), Code: 1}))
	f.Fuzz(func(t *testing.T, in []byte) {
		rep, err := ParseReply(in)
		if err != nil {
			return
		}
		if out := AppendReply(nil, rep); !bytes.Equal(out, in) {
			// Varints have one shortest form; a longer one parses too.
			if again, err := ParseReply(out); err != nil || again.Code != rep.Code || !bytes.Equal(again.Stdout, rep.Stdout) {
				t.Fatalf("re-encoded reply reads back as %+v, %v", again, err)
			}
		}
	})
}

func TestAnswered(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"mail", "search", "x"}, {"mail", "read", "1"}, {"mail", "thread", "1"}, {"wiki", "search", "x"}} {
		if !Answered(args) {
			t.Errorf("%q not sent to the daemon", args)
		}
	}
	for _, args := range [][]string{nil, {"mail"}, {"mail", "import", "dir"}, {"mail", "sync"}, {"wiki", "read", "x"}, {"chat", "search"}, {"--log-level", "debug", "mail", "search"}} {
		if Answered(args) {
			t.Errorf("%q sent to the daemon", args)
		}
	}
}
