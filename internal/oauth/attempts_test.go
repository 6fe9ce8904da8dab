package oauth

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// waitAttempt polls the account's attempt until it leaves "waiting".
func waitAttempt(t *testing.T, s *Attempts, name string) Attempt {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if a, ok := s.Attempt(name); ok && a.State != AttemptWaiting {
			return a
		}
	}
	t.Fatalf("the sign-in of %s is still waiting", name)
	return Attempt{}
}

// A sign-in started in the background answers its address at once, waits
// for the browser, and records the outcome; the grant lands owner-only.
func TestAttemptsConnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	s := NewAttempts(e.m, 10*time.Second)
	defer s.Close()
	ctx := context.Background()
	u, a, err := s.Start(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	if a.State != AttemptWaiting || a.Account != "work" || !a.Deadline.Equal(a.StartedAt.Add(10*time.Second)) {
		t.Errorf("attempt = %+v", a)
	}
	if ru := mustQuery(t, u).Get("redirect_uri"); !strings.HasPrefix(ru, "http://127.0.0.1:") {
		t.Errorf("redirect_uri = %q", ru)
	}
	if st, _ := e.m.Status("work"); st.State != StateNotConnected {
		t.Errorf("before the browser came back: %+v", st)
	}
	// A second start while it waits is the same sign-in.
	u2, _, err := s.Start(ctx, "work")
	if err != nil || u2 != u {
		t.Errorf("second start = %q, %v; want the same address", u2, err)
	}
	code, page := browser(t, u)
	if code != http.StatusOK || !strings.Contains(page, "You can close this tab") {
		t.Errorf("browser: %d %q", code, page)
	}
	got := waitAttempt(t, s, "work")
	if got.State != AttemptConnected || got.Error != "" || got.FinishedAt.IsZero() {
		t.Errorf("attempt after consent = %+v", got)
	}
	if st, _ := e.m.Status("work"); st.State != StateOK {
		t.Errorf("status = %+v", st)
	}
	fi, err := os.Stat(filepath.Join(e.dir, "work.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi, err)
	}
	// Once done, a new start is a new sign-in with a new address.
	u3, _, err := s.Start(ctx, "work")
	if err != nil || u3 == u {
		t.Errorf("start after connecting = %q, %v; want a new address", u3, err)
	}
	if !s.Cancel("work") {
		t.Error("Cancel found nothing waiting")
	}
}

// Concurrent starts share one sign-in (one listener, one address).
func TestAttemptsOneAtATime(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	s := NewAttempts(e.m, 10*time.Second)
	defer s.Close()
	var wg sync.WaitGroup
	urls := make([]string, 8)
	for i := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, _, err := s.Start(context.Background(), "work")
			if err != nil {
				t.Error(err)
			}
			urls[i] = u
		}()
	}
	wg.Wait()
	for _, u := range urls[1:] {
		if u != urls[0] {
			t.Fatalf("addresses differ: %q", urls)
		}
	}
}

// The provider's refusal, a sign-in nobody finishes and an unknown
// account each end with a reason; the failed one can be started again.
func TestAttemptsFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("denied", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.Options{Deny: true}, nil)
		s := NewAttempts(e.m, 10*time.Second)
		defer s.Close()
		u, _, err := s.Start(ctx, "work")
		if err != nil {
			t.Fatal(err)
		}
		code, page := browser(t, u)
		if code != http.StatusBadRequest || !strings.Contains(page, "access_denied") {
			t.Errorf("browser: %d %q", code, page)
		}
		a := waitAttempt(t, s, "work")
		if a.State != AttemptFailed || !strings.Contains(a.Error, "denied") || !strings.Contains(a.Error, "the user said no") {
			t.Errorf("attempt = %+v", a)
		}
		if st, _ := e.m.Status("work"); st.State != StateNotConnected {
			t.Errorf("status = %+v", st)
		}
		if u2, a2, err := s.Start(ctx, "work"); err != nil || u2 == u || a2.State != AttemptWaiting {
			t.Errorf("start after a refusal = %q %+v %v", u2, a2, err)
		}
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.Options{}, nil)
		s := NewAttempts(e.m, 150*time.Millisecond)
		defer s.Close()
		u, _, err := s.Start(ctx, "work")
		if err != nil {
			t.Fatal(err)
		}
		a := waitAttempt(t, s, "work")
		if a.State != AttemptFailed || !strings.Contains(a.Error, ErrExpired.Error()) {
			t.Errorf("attempt = %+v", a)
		}
		// The listener is gone: the redirect finds nobody.
		ru, _ := url.Parse(mustQuery(t, u).Get("redirect_uri"))
		if c, err := net.DialTimeout("tcp", ru.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("the listener on %s outlived its sign-in", ru.Host)
		}
	})
	t.Run("unknown account", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.Options{}, nil)
		s := NewAttempts(e.m, time.Second)
		defer s.Close()
		var ue *UnknownAccountError
		if _, _, err := s.Start(ctx, "nope"); !errors.As(err, &ue) {
			t.Errorf("err = %v", err)
		}
		if _, ok := s.Attempt("nope"); ok {
			t.Error("an attempt was recorded for an unknown account")
		}
	})
}

// Cancel and Close stop a waiting sign-in and free its port; after Close
// nothing starts.
func TestAttemptsCancelAndClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, oauthtest.Options{}, nil)
	s := NewAttempts(e.m, time.Minute)
	u, _, err := s.Start(ctx, "work")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Cancel("work") {
		t.Error("Cancel found nothing waiting")
	}
	if _, ok := s.Attempt("work"); ok {
		t.Error("a cancelled attempt is still listed")
	}
	ru, _ := url.Parse(mustQuery(t, u).Get("redirect_uri"))
	if c, err := net.DialTimeout("tcp", ru.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("the listener on %s outlived Cancel", ru.Host)
	}
	if s.Cancel("work") {
		t.Error("a second Cancel found something waiting")
	}
	if _, _, err := s.Start(ctx, "work"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	a, _ := s.Attempt("work")
	if a.State != AttemptFailed || !strings.Contains(a.Error, ErrCancelled.Error()) {
		t.Errorf("attempt after Close = %+v", a)
	}
	if _, _, err := s.Start(ctx, "work"); !errors.Is(err, ErrCancelled) {
		t.Errorf("start after Close: %v", err)
	}
}
