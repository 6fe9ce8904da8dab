package oauth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// States of a sign-in started in the background (Attempt.State).
const (
	AttemptWaiting   = "waiting"   // the listener waits for the browser's redirect
	AttemptConnected = "connected" // the grant is stored
	AttemptFailed    = "failed"    // denied, expired, refused or cancelled: Error says which
)

// ErrCancelled: a background sign-in was stopped (a disconnect, the
// daemon shutting down) before the browser came back.
var ErrCancelled = errors.New("the sign-in was cancelled")

// Attempt is the state of a background sign-in as the web app shows it.
// It carries no secret: the authorization URL (whose state parameter
// guards the loopback listener) is handed only to whoever started it.
type Attempt struct {
	Account    string    `json:"account"`
	State      string    `json:"state"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	Deadline   time.Time `json:"deadline"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// Attempts runs loopback sign-ins for a user interface that is not a
// terminal (the web app): the daemon listens on 127.0.0.1 for the
// redirect and the user's browser, on the same machine, does the consent
// in a tab the page opened. At most one sign-in per account runs at a
// time; starting one while it waits hands back the same address. Each
// ends at its timeout, at Cancel, or at Close. The last outcome per
// account is kept in memory for the page that polls; nothing is written
// but the grant itself (Manager.ConnectLoopback).
type Attempts struct {
	m       *Manager
	timeout time.Duration
	now     func() time.Time

	// base is the parent of every sign-in's context; stop cancels it
	// (Close), wg counts the sign-ins still running.
	base context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu   sync.Mutex // guards runs
	runs map[string]*run
}

// run is one background sign-in. ready is closed once authURL or err is
// known, done once it has ended and its outcome is recorded; cancel
// stops it. a, authURL and err are guarded by Attempts.mu.
type run struct {
	a       Attempt
	authURL string
	err     error
	ready   chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
}

// NewAttempts returns the background sign-ins of m's accounts, each
// bounded by timeout (5 minutes when 0). Close stops them.
func NewAttempts(m *Manager, timeout time.Duration) *Attempts {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	base, stop := context.WithCancel(context.Background())
	return &Attempts{m: m, timeout: timeout, now: m.opts.Now, base: base, stop: stop, runs: map[string]*run{}}
}

// Start begins a loopback sign-in of account name without opening any
// browser and returns, once the listener is up, the authorization URL
// for the user to open, with the attempt. A sign-in already waiting for
// the account is reused (same URL, same deadline). Errors: an
// *UnknownAccountError, a listener that could not start, ErrCancelled
// after Close, or ctx's error while waiting for the listener (the
// sign-in itself goes on: it does not belong to the request).
func (s *Attempts) Start(ctx context.Context, name string) (string, Attempt, error) {
	if _, err := s.m.Account(name); err != nil {
		return "", Attempt{}, err
	}
	s.mu.Lock()
	if s.base.Err() != nil {
		s.mu.Unlock()
		return "", Attempt{}, ErrCancelled
	}
	r := s.runs[name]
	if r == nil || r.a.State != AttemptWaiting {
		now := s.now()
		r = &run{a: Attempt{Account: name, State: AttemptWaiting, StartedAt: now, Deadline: now.Add(s.timeout)},
			ready: make(chan struct{}), done: make(chan struct{})}
		var rctx context.Context
		rctx, r.cancel = context.WithCancel(s.base)
		s.runs[name] = r
		s.wg.Add(1)
		go s.connect(rctx, name, r)
	}
	s.mu.Unlock()
	select {
	case <-r.ready:
	case <-ctx.Done():
		return "", Attempt{}, fmt.Errorf("starting the sign-in of %s: %w", name, ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.err != nil {
		return "", r.a, r.err
	}
	return r.authURL, r.a, nil
}

// connect runs one sign-in to its end and records the outcome.
func (s *Attempts) connect(ctx context.Context, name string, r *run) {
	defer s.wg.Done()
	defer close(r.done)
	defer r.cancel()
	var once sync.Once
	markReady := func() { once.Do(func() { close(r.ready) }) }
	_, err := s.m.ConnectLoopback(ctx, name, LoopbackOptions{Timeout: s.timeout, Open: func(u string) error {
		s.mu.Lock()
		r.authURL = u
		s.mu.Unlock()
		markReady()
		return nil
	}})
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = fmt.Errorf("connecting %s: %w", name, ErrCancelled)
	}
	s.mu.Lock()
	r.a.FinishedAt = s.now()
	if err != nil {
		r.a.State, r.a.Error, r.err = AttemptFailed, err.Error(), err
	} else {
		r.a.State = AttemptConnected
	}
	s.mu.Unlock()
	markReady()
	if err != nil {
		s.m.opts.Log.Info("oauthConnectFailed", "account", name, "err", err)
	}
}

// Attempt returns the account's current or last background sign-in.
func (s *Attempts) Attempt(name string) (Attempt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[name]
	if r == nil {
		return Attempt{}, false
	}
	return r.a, true
}

// Cancel stops the account's waiting sign-in and waits until it has let
// its listener go; it reports whether one was waiting. Its record is
// dropped, so the page shows the account's own state again.
func (s *Attempts) Cancel(name string) bool {
	s.mu.Lock()
	r := s.runs[name]
	waiting := r != nil && r.a.State == AttemptWaiting
	delete(s.runs, name)
	s.mu.Unlock()
	if r == nil {
		return false
	}
	r.cancel()
	<-r.done
	return waiting
}

// Close cancels every sign-in and waits for them to end.
func (s *Attempts) Close() error {
	s.mu.Lock()
	s.stop()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
