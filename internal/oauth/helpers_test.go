package oauth

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// clock is a settable clock for the Manager.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one test's fake provider, manager and captured log.
type env struct {
	srv   *oauthtest.Server
	m     *Manager
	clock *clock
	log   *syncBuffer
	dir   string
	acct  Account
	opts  Options
	// reconnects counts OnReconnect calls.
	mu         sync.Mutex
	reconnects []*ReconnectError
}

func fakeProvider(srv *oauthtest.Server, scopes ...string) Provider {
	if len(scopes) == 0 {
		scopes = []string{"mail", "calendar"}
	}
	return Custom(srv.AuthURL(), srv.TokenURL(), srv.DeviceAuthURL(), srv.RevokeURL(), scopes)
}

func newEnv(t *testing.T, so oauthtest.Options, mutate func(*Account)) *env {
	t.Helper()
	srv := oauthtest.New(so)
	t.Cleanup(srv.Close)
	e := &env{srv: srv, clock: newClock(), log: &syncBuffer{}, dir: filepath.Join(t.TempDir(), "oauth")}
	e.acct = Account{Name: "work", Provider: fakeProvider(srv), ClientID: srv.ClientID(), ClientSecret: so.ClientSecret}
	if mutate != nil {
		mutate(&e.acct)
	}
	e.opts = Options{
		Dir: e.dir, HTTPClient: &http.Client{Timeout: 10 * time.Second}, Now: e.clock.Now,
		Log: slog.New(slog.NewJSONHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		OnReconnect: func(_ context.Context, re *ReconnectError) {
			e.mu.Lock()
			e.reconnects = append(e.reconnects, re)
			e.mu.Unlock()
		},
	}
	e.m = e.manager(t)
	return e
}

// manager builds another Manager on the same files, as a second process
// (or a restarted daemon) would.
func (e *env) manager(t *testing.T) *Manager {
	t.Helper()
	m, err := NewManager([]Account{e.acct}, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (e *env) reconnectCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.reconnects)
}

// browser plays the user's browser: it follows the provider's redirect
// to the loopback listener and returns the last page.
func browser(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
	if err != nil {
		t.Errorf("browser: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// connect runs the loopback flow with a test browser and fails the test
// unless it succeeds.
func (e *env) connect(t *testing.T) Status {
	t.Helper()
	var page string
	done := make(chan struct{})
	st, err := e.m.ConnectLoopback(context.Background(), e.acct.Name, LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		go func() {
			defer close(done)
			_, page = browser(t, u)
		}()
		return nil
	}})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	<-done
	if !strings.Contains(page, "You can close this tab") {
		t.Errorf("browser page after connecting: %q", page)
	}
	return st
}
