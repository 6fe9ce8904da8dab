package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Account is one configured account ([[oauth.accounts]]).
type Account struct {
	Name         string
	Provider     Provider
	ClientID     string
	ClientSecret string   // "" for a public client (PKCE only)
	Scopes       []string // asked for at consent; nil: Provider.Scopes
}

// consentScopes are the scopes asked for when connecting.
func (a Account) consentScopes() []string {
	if len(a.Scopes) > 0 {
		return a.Scopes
	}
	return a.Provider.Scopes
}

// Options configure a Manager.
type Options struct {
	// Dir holds the token files (Dir(paths.Data)).
	Dir string
	// HTTPClient reaches the providers; nil: http.DefaultClient.
	HTTPClient *http.Client
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Log gets refreshes and failures, never a token; nil: discarded.
	Log *slog.Logger
	// RefreshAhead is how long before expiry a token is renewed
	// (default 5 minutes), so a caller never gets one that dies in use.
	RefreshAhead time.Duration
	// OnReconnect is called when a refresh finds a grant dead, once per
	// connection (the mark is kept in the token file until the account is
	// connected again). It runs synchronously; keep it short.
	OnReconnect func(ctx context.Context, err *ReconnectError)
}

// Manager owns the configured accounts and their token files.
type Manager struct {
	opts     Options
	store    fileStore
	accounts map[string]Account

	mu     sync.Mutex // guards states
	states map[string]*accountState
}

// accountState caches one account's token file in memory.
type accountState struct {
	// refreshing is a one-slot semaphore: one refresh of the account at a
	// time in this process; callers that queued behind it find the new
	// token when they get the slot, so concurrent callers share a refresh.
	refreshing chan struct{}

	mu sync.Mutex // guards the fields below
	g  *grant
	fi os.FileInfo // the file version g was read from; reloaded when it changes
	// rejected holds access tokens a server refused (Invalidate), by
	// audience key, so that they are refreshed even before their expiry.
	rejected map[string]string
}

// NewManager returns a Manager of accounts. Names must be unique.
func NewManager(accounts []Account, opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, errors.New("oauth: no token folder given")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.RefreshAhead <= 0 {
		opts.RefreshAhead = 5 * time.Minute
	}
	m := &Manager{opts: opts, store: fileStore{dir: opts.Dir, log: opts.Log}, accounts: map[string]Account{}, states: map[string]*accountState{}}
	for _, a := range accounts {
		if !accountNameRE.MatchString(a.Name) {
			return nil, fmt.Errorf("oauth: invalid account name %q", a.Name)
		}
		if _, dup := m.accounts[a.Name]; dup {
			return nil, fmt.Errorf("oauth: two accounts named %q", a.Name)
		}
		if a.Provider.TokenURL == "" || a.ClientID == "" {
			return nil, fmt.Errorf("oauth: account %s needs a token endpoint and a client id", a.Name)
		}
		m.accounts[a.Name] = a
	}
	return m, nil
}

// Names lists the accounts, sorted.
func (m *Manager) Names() []string {
	names := make([]string, 0, len(m.accounts))
	for n := range m.accounts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Account returns the named account's configuration.
func (m *Manager) Account(name string) (Account, error) {
	a, ok := m.accounts[name]
	if !ok {
		return Account{}, &UnknownAccountError{Name: name}
	}
	return a, nil
}

func (m *Manager) state(name string) *accountState {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.states[name]
	if st == nil {
		st = &accountState{refreshing: make(chan struct{}, 1), rejected: map[string]string{}}
		m.states[name] = st
	}
	return st
}

func (m *Manager) client(a Account) *endpointClient {
	return &endpointClient{p: a.Provider, clientID: a.ClientID, secret: a.ClientSecret, http: m.opts.HTTPClient, now: m.opts.Now}
}

// current returns the account's grant, read again when the file changed
// (connected or refreshed by another process, deleted by a disconnect).
// The caller must not modify it.
func (st *accountState) current(s fileStore, name string) (*grant, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	path, err := s.path(name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(path)
	if err == nil && st.g != nil && os.SameFile(fi, st.fi) && fi.ModTime().Equal(st.fi.ModTime()) && fi.Size() == st.fi.Size() {
		return st.g, nil
	}
	g, fi, err := s.load(name)
	if err != nil {
		st.g, st.fi = nil, nil
		return nil, err
	}
	if st.g == nil || st.g.RefreshToken != g.RefreshToken {
		clear(st.rejected)
	}
	st.g, st.fi = g, fi
	return g, nil
}

func (st *accountState) set(g *grant, fi os.FileInfo) {
	st.mu.Lock()
	st.g, st.fi = g, fi
	st.mu.Unlock()
}

// keep replaces the cached grant without a new file version (a save
// failed), so this process goes on with what it learnt.
func (st *accountState) keep(g *grant) {
	st.mu.Lock()
	st.g = g
	st.mu.Unlock()
}

func (st *accountState) forget() {
	st.mu.Lock()
	st.g, st.fi = nil, nil
	clear(st.rejected)
	st.mu.Unlock()
}

// usable reports the token for key when it is not near expiry nor refused.
func (m *Manager) usable(st *accountState, g *grant, key string) (Token, bool) {
	t, ok := g.Access[key]
	if !ok || t.Token == "" {
		return Token{}, false
	}
	st.mu.Lock()
	refused := st.rejected[key] == t.Token
	st.mu.Unlock()
	if refused {
		return Token{}, false
	}
	if !t.Expiry.IsZero() && !m.opts.Now().Add(m.opts.RefreshAhead).Before(t.Expiry) {
		return Token{}, false
	}
	return Token{AccessToken: t.Token, TokenType: "Bearer", Expiry: t.Expiry}, true
}

// checkGrant refuses a grant already known dead, or made for another
// client id (its refresh token would be refused anyway).
func checkGrant(a Account, g *grant) error {
	if g.Reconnect != nil {
		return &ReconnectError{Account: a.Name, Code: g.Reconnect.Code, Detail: g.Reconnect.Detail}
	}
	if g.ClientID != a.ClientID {
		return &ReconnectError{Account: a.Name, Code: "client_changed", Detail: "the token was issued to another client_id than the one configured"}
	}
	return nil
}

// Source is one account's access tokens for one purpose.
type Source struct {
	m       *Manager
	account Account
	purpose Purpose
}

// Source returns the token source of account name for purpose p. It
// fails only for an unknown account; a purpose the account was not
// granted is reported by Token.
func (m *Manager) Source(name string, p Purpose) (*Source, error) {
	a, err := m.Account(name)
	if err != nil {
		return nil, err
	}
	return &Source{m: m, account: a, purpose: p}, nil
}

// Account is the name of the source's account.
func (s *Source) Account() string { return s.account.Name }

// Token returns a valid access token, refreshing it first when it
// expires within RefreshAhead. Errors: ErrNotConnected, *ReconnectError
// (a dead grant: stop and wait for the user), or a retryable one.
func (s *Source) Token(ctx context.Context) (Token, error) {
	return s.m.token(ctx, s.account, s.purpose)
}

// Invalidate tells the source that a server refused t (HTTP 401 with
// invalid_token, an IMAP AUTHENTICATE failure): the next Token refreshes
// even if t has not reached its expiry.
func (s *Source) Invalidate(t Token) {
	st := s.m.state(s.account.Name)
	g, err := st.current(s.m.store, s.account.Name)
	if err != nil {
		return
	}
	key, _, err := s.account.Provider.audience(s.purpose, g.Scopes)
	if err != nil {
		return
	}
	st.mu.Lock()
	st.rejected[key] = t.AccessToken
	st.mu.Unlock()
}

func (m *Manager) token(ctx context.Context, a Account, p Purpose) (Token, error) {
	st := m.state(a.Name)
	g, err := st.current(m.store, a.Name)
	if err != nil {
		return Token{}, err
	}
	if err := checkGrant(a, g); err != nil {
		return Token{}, err
	}
	key, scopes, err := a.Provider.audience(p, g.Scopes)
	if err != nil {
		return Token{}, fmt.Errorf("account %s: %w", a.Name, err)
	}
	if t, ok := m.usable(st, g, key); ok {
		return t, nil
	}
	// Queue for the refresh slot; whoever held it may have done our work.
	select {
	case st.refreshing <- struct{}{}:
	case <-ctx.Done():
		return Token{}, fmt.Errorf("waiting for the refresh of %s: %w", a.Name, ctx.Err())
	}
	defer func() { <-st.refreshing }()
	unlock, err := m.store.lock(ctx, a.Name)
	if err != nil {
		return Token{}, err
	}
	defer unlock()
	// Another process may have refreshed (or reconnected) meanwhile.
	if g, err = st.current(m.store, a.Name); err != nil {
		return Token{}, err
	}
	if err := checkGrant(a, g); err != nil {
		return Token{}, err
	}
	if t, ok := m.usable(st, g, key); ok {
		return t, nil
	}
	return m.refresh(ctx, st, a, g, p, key, scopes)
}

// refresh renews the access token for key; the caller holds the slot and
// the file lock.
func (m *Manager) refresh(ctx context.Context, st *accountState, a Account, g *grant, p Purpose, key string, scopes []string) (Token, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.RefreshToken}}
	if scopes != nil {
		form.Set("scope", strings.Join(scopes, " "))
	}
	old := g.Access[key]
	res, err := m.client(a).token(ctx, form, g.RefreshToken, old.Token)
	if err != nil {
		err = classifyRefresh(a.Name, err)
		var re *ReconnectError
		if errors.As(err, &re) {
			return Token{}, m.markDead(ctx, st, g, re)
		}
		// The old token still works: use it and try again next time.
		if old.Token != "" && m.opts.Now().Before(old.Expiry) {
			st.mu.Lock()
			refused := st.rejected[key] == old.Token
			st.mu.Unlock()
			if !refused {
				m.opts.Log.Warn("oauthRefreshFailed", "account", a.Name, "purpose", string(p), "expiry", old.Expiry, "err", err)
				return Token{AccessToken: old.Token, TokenType: "Bearer", Expiry: old.Expiry}, nil
			}
		}
		m.opts.Log.Warn("oauthRefreshFailed", "account", a.Name, "purpose", string(p), "err", err)
		return Token{}, fmt.Errorf("refreshing the token of account %s: %w", a.Name, err)
	}
	ng := g.clone()
	ng.Access[key] = storedToken{Token: res.Access.AccessToken, Expiry: res.Access.Expiry}
	rotated := res.Refresh != "" && res.Refresh != g.RefreshToken
	if rotated {
		ng.RefreshToken = res.Refresh
	}
	if res.Scopes != nil && !a.Provider.PerResource {
		ng.Scopes = res.Scopes
	}
	ng.RefreshedAt = m.opts.Now().UTC()
	fi, err := m.store.save(ng)
	if err != nil {
		// The new refresh token may be the only valid one now; keep it in
		// memory so this process at least goes on working.
		st.keep(ng)
		return Token{}, fmt.Errorf("saving the refreshed token of account %s: %w", a.Name, err)
	}
	st.set(ng, fi)
	m.opts.Log.Info("oauthRefreshed", "account", a.Name, "purpose", string(p), "expiry", res.Access.Expiry, "rotated", rotated)
	return res.Access, nil
}

// markDead records a dead grant in the token file and reports it once.
func (m *Manager) markDead(ctx context.Context, st *accountState, g *grant, re *ReconnectError) error {
	ng := g.clone()
	ng.Reconnect = &reconnectMark{Code: re.Code, Detail: re.Detail, At: m.opts.Now().UTC()}
	if fi, err := m.store.save(ng); err != nil {
		m.opts.Log.Error("oauthMarkReconnect", "account", g.Account, "err", err)
		st.keep(ng)
	} else {
		st.set(ng, fi)
	}
	m.opts.Log.Warn("oauthReconnectNeeded", "account", g.Account, "code", re.Code)
	if m.opts.OnReconnect != nil {
		m.opts.OnReconnect(ctx, re)
	}
	return re
}

// State of an account.
const (
	StateOK           = "ok"
	StateReconnect    = "reconnect needed"
	StateNotConnected = "not connected"
)

// Status describes an account without any secret.
type Status struct {
	Account     string    `json:"account"`
	Provider    string    `json:"provider"`
	Scopes      []string  `json:"scopes"`
	State       string    `json:"state"`
	Detail      string    `json:"detail,omitempty"`
	ConnectedAt time.Time `json:"connected_at,omitzero"`
	RefreshedAt time.Time `json:"refreshed_at,omitzero"`
	// Expiry is the latest expiry of the access tokens held; zero when
	// none is held. The grant itself outlives it.
	Expiry time.Time `json:"expiry,omitzero"`
}

// Status reads an account's token file; it makes no request.
func (m *Manager) Status(name string) (Status, error) {
	a, err := m.Account(name)
	if err != nil {
		return Status{}, err
	}
	s := Status{Account: name, Provider: a.Provider.Name, Scopes: a.consentScopes()}
	g, err := m.state(name).current(m.store, name)
	switch {
	case errors.Is(err, ErrNotConnected):
		s.State = StateNotConnected
		return s, nil
	case errors.Is(err, ErrReconnect):
		s.State, s.Detail = StateReconnect, err.Error()
		return s, nil
	case err != nil:
		return s, err
	}
	s.Scopes, s.ConnectedAt, s.RefreshedAt = slices.Clone(g.Scopes), g.ConnectedAt, g.RefreshedAt
	for _, t := range g.Access {
		if t.Expiry.After(s.Expiry) {
			s.Expiry = t.Expiry
		}
	}
	s.State = StateOK
	if err := checkGrant(a, g); err != nil {
		s.State, s.Detail = StateReconnect, err.Error()
	}
	return s, nil
}

// Check makes sure the account can get a token for each resource it was
// granted (refreshing where due) and returns its status. The error is
// ErrNotConnected, a *ReconnectError, or a retryable failure.
func (m *Manager) Check(ctx context.Context, name string) (Status, error) {
	a, err := m.Account(name)
	if err != nil {
		return Status{}, err
	}
	s, err := m.Status(name)
	if err != nil {
		return s, err
	}
	if s.State == StateNotConnected {
		return s, fmt.Errorf("account %s: %w (run: hestia accounts connect %s)", name, ErrNotConnected, name)
	}
	purposes := []Purpose{Any}
	if a.Provider.PerResource {
		// One token per resource: ask for each purpose, deduplicated by
		// the resource it maps to.
		purposes = nil
		seen := map[string]bool{}
		for _, p := range []Purpose{Mail, Calendar, Contacts, Tasks} {
			if key, _, err := a.Provider.audience(p, s.Scopes); err == nil && !seen[key] {
				seen[key] = true
				purposes = append(purposes, p)
			}
		}
		if len(purposes) == 0 {
			purposes = []Purpose{Any}
		}
	}
	for _, p := range purposes {
		if _, err := m.token(ctx, a, p); err != nil {
			s2, _ := m.Status(name)
			return s2, err
		}
	}
	return m.Status(name)
}

// Reconnects lists the accounts whose token file says they must be
// reconnected, with the reason (for a notification missed while the
// daemon was down).
func (m *Manager) Reconnects() []*ReconnectError {
	var out []*ReconnectError
	for _, name := range m.Names() {
		g, err := m.state(name).current(m.store, name)
		var re *ReconnectError
		switch {
		case errors.As(err, &re):
			out = append(out, re)
		case err == nil:
			if err := checkGrant(m.accounts[name], g); errors.As(err, &re) {
				out = append(out, re)
			}
		}
	}
	return out
}

// ConnectedAt is when the account's grant was made (zero when it has
// none); a notification key made of it is new for each connection.
func (m *Manager) ConnectedAt(name string) time.Time {
	g, err := m.state(name).current(m.store, name)
	if err != nil {
		return time.Time{}
	}
	return g.ConnectedAt
}
