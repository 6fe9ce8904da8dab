package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// ErrDenied: the user (or the provider's policy) refused the consent.
var ErrDenied = errors.New("the sign-in was denied")

// ErrExpired: the sign-in was not finished in time.
var ErrExpired = errors.New("the sign-in was not finished in time")

// LoopbackOptions tune ConnectLoopback.
type LoopbackOptions struct {
	// Open is given the authorization URL once the redirect listener is
	// up: print it, open the browser. An error from it is returned.
	Open func(authURL string) error
	// Port fixes the listener's port (for an SSH tunnel to a headless
	// machine); 0 picks a free one.
	Port int
	// Timeout bounds the whole sign-in (default 5 minutes).
	Timeout time.Duration
}

// callback is what the redirect brought: a code or the provider's error.
type callback struct {
	code string
	err  error
}

// ConnectLoopback connects account name with the authorization code grant
// and PKCE (RFC 7636, S256) through a loopback redirect (RFC 8252 §7.3):
// it listens on 127.0.0.1 (Entra ID: localhost) on a free port, hands
// Open the URL to show the user, and waits for the one redirect carrying
// its state (compared in constant time; others are refused and it goes on
// waiting), exchanges the code and stores the grant. The browser is told
// the outcome.
func (m *Manager) ConnectLoopback(ctx context.Context, name string, opts LoopbackOptions) (Status, error) {
	a, err := m.Account(name)
	if err != nil {
		return Status{}, err
	}
	if a.Provider.AuthURL == "" {
		return Status{}, fmt.Errorf("provider %s of account %s has no authorization endpoint", a.Provider.Name, name)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	lns, port, err := listenLoopback(a.Provider.RedirectHost, opts.Port)
	if err != nil {
		return Status{}, err
	}
	host := a.Provider.RedirectHost
	if host == "" {
		host = "127.0.0.1"
	}
	redirect := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + "/"
	state, verifier := randomToken(), oauth2.GenerateVerifier()
	conf := oauth2.Config{ClientID: a.ClientID, Endpoint: oauth2.Endpoint{AuthURL: a.Provider.AuthURL}, RedirectURL: redirect, Scopes: a.consentScopes()}
	params := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for k, v := range a.Provider.AuthParams {
		params = append(params, oauth2.SetAuthURLParam(k, v))
	}
	authURL := conf.AuthCodeURL(state, params...)

	cb := &callbackHandler{state: state, got: make(chan callback, 1), outcome: make(chan error, 1)}
	srv := &http.Server{Handler: cb, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	for _, ln := range lns {
		wg.Add(1)
		go func() { defer wg.Done(); srv.Serve(ln) }()
	}
	defer func() {
		// Let the browser get its page, then stop.
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		srv.Shutdown(sctx)
		scancel()
		wg.Wait()
	}()
	if opts.Open != nil {
		if err := opts.Open(authURL); err != nil {
			return Status{}, err
		}
	}
	var got callback
	select {
	case got = <-cb.got:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Status{}, fmt.Errorf("connecting %s: %w (no answer from the browser in %s)", name, ErrExpired, opts.Timeout)
		}
		return Status{}, ctx.Err()
	}
	st, err := m.finishLoopback(ctx, a, got, redirect, verifier)
	cb.outcome <- err
	return st, err
}

func (m *Manager) finishLoopback(ctx context.Context, a Account, got callback, redirect, verifier string) (Status, error) {
	if got.err != nil {
		return Status{}, fmt.Errorf("connecting %s: %w", a.Name, got.err)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {got.code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	res, err := m.client(a).token(ctx, form, got.code, verifier)
	if err != nil {
		return Status{}, fmt.Errorf("connecting %s: exchanging the code: %w", a.Name, err)
	}
	return m.saveNew(ctx, a, res)
}

// listenLoopback listens on host's loopback address; for "localhost" it
// also takes the same port on ::1 where it can, since a browser may try
// either.
func listenLoopback(host string, port int) ([]net.Listener, int, error) {
	first := "127.0.0.1"
	if host != "" && host != "localhost" {
		first = host
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(first, strconv.Itoa(port)))
	if err != nil {
		return nil, 0, fmt.Errorf("listening for the sign-in redirect on %s: %w", first, err)
	}
	lns := []net.Listener{ln}
	port = ln.Addr().(*net.TCPAddr).Port
	if host == "localhost" {
		if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
			lns = append(lns, ln6)
		}
	}
	return lns, port, nil
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// callbackHandler serves the loopback redirect: one request with the
// right state is taken, everything else is refused.
type callbackHandler struct {
	state   string
	once    sync.Once
	got     chan callback
	outcome chan error
}

func (h *callbackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/" {
		page(w, http.StatusNotFound, "Not here", "Hestia is waiting for the sign-in to finish in another tab.")
		return
	}
	q := r.URL.Query()
	if q.Get("code") == "" && q.Get("error") == "" {
		page(w, http.StatusNotFound, "Not here", "Hestia is waiting for the sign-in to finish in another tab.")
		return
	}
	// RFC 6749 §10.12: a redirect without our state is someone else's
	// (a forged request); refuse it and keep waiting for ours.
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(h.state)) != 1 {
		page(w, http.StatusBadRequest, "Sign-in refused", "This answer does not belong to the sign-in Hestia started, so it was ignored. Go back to the terminal and try again if needed.")
		return
	}
	first := false
	h.once.Do(func() { first = true })
	if !first {
		page(w, http.StatusGone, "Already done", "This sign-in was already handled. You can close this tab.")
		return
	}
	var cb callback
	if e := q.Get("error"); e != "" {
		pe := &ProviderError{Code: scrub(e, nil), Description: scrub(q.Get("error_description"), nil)}
		if e == "access_denied" {
			cb.err = fmt.Errorf("%w: %w", ErrDenied, pe)
		} else {
			cb.err = pe
		}
	} else {
		cb.code = q.Get("code")
	}
	h.got <- cb
	var err error
	select {
	case err = <-h.outcome:
	case <-r.Context().Done():
		return
	}
	if err != nil {
		page(w, http.StatusBadRequest, "Sign-in failed", "Hestia could not connect the account: "+err.Error())
		return
	}
	page(w, http.StatusOK, "Connected", "Hestia is connected to your account. You can close this tab.")
}

// pageTmpl is parsed on first use: a package-level parse would cost every
// hestia process at start.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Hestia: {{.Title}}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:32em;margin:4em auto;padding:0 1em;color:#222}h1{font-size:1.4em}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))
})

// page writes a small HTML page. No script, no outside resource and no
// referrer: the address bar holds the code.
func page(w http.ResponseWriter, status int, title, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	pageTmpl().Execute(w, struct{ Title, Text string }{title, text})
}

// DeviceCode is what the user needs to finish a device sign-in elsewhere.
type DeviceCode struct {
	VerificationURI         string
	VerificationURIComplete string // may be empty
	UserCode                string
	Expiry                  time.Time
}

// DeviceOptions tune ConnectDevice.
type DeviceOptions struct {
	// Show tells the user where to go and which code to type.
	Show func(DeviceCode) error
	// Sleep waits between polls; nil waits for real (tests pass their own).
	Sleep func(ctx context.Context, d time.Duration) error
}

// ConnectDevice connects account name with the device authorization
// grant (RFC 8628): it asks for a user code, shows it, and polls the
// token endpoint at the interval the provider set (5 s by default, 5 s
// more after each slow_down) until the user approves (the grant is
// stored), denies (ErrDenied) or the code expires (ErrExpired).
// Transport errors while polling are retried.
func (m *Manager) ConnectDevice(ctx context.Context, name string, opts DeviceOptions) (Status, error) {
	a, err := m.Account(name)
	if err != nil {
		return Status{}, err
	}
	if a.Provider.DeviceAuthURL == "" {
		return Status{}, fmt.Errorf("provider %s of account %s has no device sign-in; connect without --device (a browser on this machine, or an SSH tunnel to its port)", a.Provider.Name, name)
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	conf := oauth2.Config{ClientID: a.ClientID, Endpoint: oauth2.Endpoint{DeviceAuthURL: a.Provider.DeviceAuthURL}, Scopes: a.consentScopes()}
	hctx := ctx
	if m.opts.HTTPClient != nil {
		hctx = context.WithValue(ctx, oauth2.HTTPClient, m.opts.HTTPClient)
	}
	da, err := conf.DeviceAuth(hctx)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			pe := &ProviderError{Code: scrub(re.ErrorCode, nil), Description: scrub(re.ErrorDescription, nil)}
			if re.Response != nil {
				pe.Status = re.Response.StatusCode
			}
			err = pe
			if pe.Code == "invalid_scope" && a.Provider.Name == "google" {
				err = fmt.Errorf("%w; Google's device sign-in does not cover Gmail, Calendar or Contacts: connect without --device through an SSH tunnel (docs/oauth.md)", pe)
			}
		}
		return Status{}, fmt.Errorf("connecting %s: starting the device sign-in: %w", name, err)
	}
	if da.DeviceCode == "" || da.UserCode == "" || da.VerificationURI == "" {
		return Status{}, fmt.Errorf("connecting %s: the device sign-in answer lacks a device code, user code or verification URI", name)
	}
	if !da.Expiry.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, da.Expiry)
		defer cancel()
	}
	if opts.Show != nil {
		if err := opts.Show(DeviceCode{VerificationURI: da.VerificationURI, VerificationURIComplete: da.VerificationURIComplete, UserCode: da.UserCode, Expiry: da.Expiry}); err != nil {
			return Status{}, err
		}
	}
	// RFC 8628 §3.2: 5 seconds when the provider names no interval.
	interval := 5 * time.Second
	if da.Interval > 0 {
		interval = time.Duration(min(da.Interval, 300)) * time.Second
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {da.DeviceCode}}
	for {
		if err := sleep(ctx, interval); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return Status{}, fmt.Errorf("connecting %s: %w (the code expired)", name, ErrExpired)
			}
			return Status{}, err
		}
		res, err := m.client(a).token(ctx, cloneValues(form), da.DeviceCode)
		if err == nil {
			return m.saveNew(ctx, a, res)
		}
		var pe *ProviderError
		if !errors.As(err, &pe) {
			if ctx.Err() != nil {
				continue // the next sleep reports it
			}
			m.opts.Log.Warn("oauthDevicePoll", "account", name, "err", err)
			continue
		}
		switch pe.Code {
		case "authorization_pending":
		case "slow_down":
			// RFC 8628 §3.5: this and every later poll 5 seconds slower.
			interval += 5 * time.Second
		case "access_denied":
			return Status{}, fmt.Errorf("connecting %s: %w", name, ErrDenied)
		case "expired_token":
			return Status{}, fmt.Errorf("connecting %s: %w (the code expired; run the command again)", name, ErrExpired)
		default:
			if Retryable(pe) {
				continue
			}
			return Status{}, fmt.Errorf("connecting %s: %w", name, pe)
		}
	}
}

func cloneValues(v url.Values) url.Values {
	c := make(url.Values, len(v))
	for k, vs := range v {
		c[k] = append([]string(nil), vs...)
	}
	return c
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// saveNew stores the grant a connect obtained, replacing any earlier one
// (and its reconnect mark).
func (m *Manager) saveNew(ctx context.Context, a Account, res tokenResult) (Status, error) {
	if res.Refresh == "" {
		hint := ""
		switch a.Provider.Name {
		case "microsoft":
			hint = " (is offline_access among the scopes?)"
		case "google":
			hint = " (Google hands one out only with access_type=offline)"
		}
		return Status{}, fmt.Errorf("connecting %s: the provider handed out no refresh token%s", a.Name, hint)
	}
	now := m.opts.Now().UTC()
	g := &grant{Account: a.Name, Provider: a.Provider.Name, ClientID: a.ClientID, Scopes: a.consentScopes(),
		RefreshToken: res.Refresh, Access: map[string]storedToken{}, ConnectedAt: now, RefreshedAt: now}
	// A single-token provider says which scopes the user left ticked.
	if res.Scopes != nil && !a.Provider.PerResource {
		g.Scopes = res.Scopes
	}
	// The first access token is kept where its audience is known: a
	// per-resource provider names it by the scopes it answered with.
	key, known := "", true
	if a.Provider.PerResource {
		key, known = singleResource(res.Scopes)
	}
	if known {
		g.Access[key] = storedToken{Token: res.Access.AccessToken, Expiry: res.Access.Expiry}
	}
	unlock, err := m.store.lock(ctx, a.Name)
	if err != nil {
		return Status{}, err
	}
	defer unlock()
	fi, err := m.store.save(g)
	if err != nil {
		return Status{}, err
	}
	st := m.state(a.Name)
	st.forget()
	st.set(g, fi)
	m.opts.Log.Info("oauthConnected", "account", a.Name, "provider", a.Provider.Name)
	return m.Status(a.Name)
}

// DisconnectResult says what Disconnect did.
type DisconnectResult struct {
	// Revoked: the provider confirmed the revocation (RFC 7009).
	Revoked bool
	// RevokeErr is why revoking failed (the file is deleted anyway).
	RevokeErr error
	// ManageURL is where to remove the app's access by hand when the
	// provider has no revocation endpoint or revoking failed.
	ManageURL string
}

// Disconnect revokes the account's refresh token at the provider when it
// has a revocation endpoint and deletes the token file. A failed
// revocation is reported in the result, not as an error: the user asked
// to forget the account, and the file goes either way.
func (m *Manager) Disconnect(ctx context.Context, name string) (DisconnectResult, error) {
	a, err := m.Account(name)
	if err != nil {
		return DisconnectResult{}, err
	}
	unlock, err := m.store.lock(ctx, name)
	if err != nil {
		return DisconnectResult{}, err
	}
	defer unlock()
	g, _, err := m.store.load(name)
	if errors.Is(err, ErrNotConnected) {
		return DisconnectResult{}, err
	}
	var res DisconnectResult
	switch {
	case err != nil:
		// A damaged file: nothing to revoke with, delete it anyway.
		res.RevokeErr = err
	case a.Provider.RevokeURL == "":
	default:
		rerr := m.client(a).revoke(ctx, g.RefreshToken, "refresh_token")
		res.Revoked, res.RevokeErr = rerr == nil, rerr
	}
	if !res.Revoked {
		res.ManageURL = a.Provider.ManageURL
	}
	if err := m.store.remove(name); err != nil {
		return res, err
	}
	m.state(name).forget()
	m.opts.Log.Info("oauthDisconnected", "account", name, "revoked", res.Revoked)
	return res, nil
}

// singleResource is the one resource scopes belong to, if there is one.
func singleResource(scopes []string) (string, bool) {
	key := ""
	for _, s := range scopes {
		switch r := resourceOf(s); {
		case r == "":
		case key == "":
			key = r
		case r != key:
			return "", false
		}
	}
	return key, key != ""
}
