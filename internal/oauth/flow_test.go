package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// The loopback flow end to end: the browser follows the provider's
// redirect to 127.0.0.1, the code is exchanged with the PKCE verifier,
// and the grant lands in an owner-only file.
func TestLoopbackFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{ClientSecret: "s3cret-value"}, nil)
	var authURL string
	done := make(chan struct{})
	st, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		authURL = u
		go func() { defer close(done); browser(t, u) }()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-done
	q := mustQuery(t, authURL)
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || len(q.Get("state")) < 32 {
		t.Errorf("authorization URL lacks PKCE S256 or a strong state: %s", authURL)
	}
	if ru := q.Get("redirect_uri"); !strings.HasPrefix(ru, "http://127.0.0.1:") || strings.HasSuffix(ru, ":0/") {
		t.Errorf("redirect_uri = %q, want 127.0.0.1 with the listener's port", ru)
	}
	if st.State != StateOK || st.Provider != "custom" || strings.Join(st.Scopes, " ") != "mail calendar" || st.Expiry.IsZero() {
		t.Errorf("status = %+v", st)
	}
	fi, err := os.Stat(filepath.Join(e.dir, "work.json"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(e.dir); di.Mode().Perm() != 0o700 {
		t.Errorf("token folder mode = %v, want 0700", di.Mode().Perm())
	}
	src, _ := e.m.Source("work", Mail)
	tok, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !e.srv.ActiveAccess(tok.AccessToken) {
		t.Error("the access token handed out is not active at the provider")
	}
	if s := e.srv.Stats(); s.CodeExchanges != 1 || s.Refreshes != 0 {
		t.Errorf("stats = %+v, want one exchange and no refresh (the first token is used)", s)
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// noRedirect is a browser that stops at the provider's redirect.
var noRedirect = &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// A redirect with another state is refused with a page and ignored: the
// flow goes on waiting for the real one.
func TestLoopbackWrongStateRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	type step struct {
		status int
		body   string
	}
	steps := make(chan step, 3)
	st, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		go func() {
			resp, err := noRedirect.Get(u)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			loc, _ := url.Parse(resp.Header.Get("Location"))
			forged := *loc
			v := forged.Query()
			v.Set("state", "forged-"+v.Get("state"))
			forged.RawQuery = v.Encode()
			c, b := browser(t, forged.String())
			steps <- step{c, b}
			// A state cut short, and none at all, are refused too.
			v.Set("state", loc.Query().Get("state")[:10])
			forged.RawQuery = v.Encode()
			c, b = browser(t, forged.String())
			steps <- step{c, b}
			c, b = browser(t, loc.String())
			steps <- step{c, b}
		}()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		s := <-steps
		if s.status != http.StatusBadRequest || !strings.Contains(s.body, "does not belong") {
			t.Errorf("forged redirect %d: %d %q", i, s.status, s.body)
		}
	}
	if s := <-steps; s.status != http.StatusOK {
		t.Errorf("real redirect: %d %q", s.status, s.body)
	}
	if st.State != StateOK {
		t.Errorf("status = %+v", st)
	}
}

// The callback is one-shot: a replay of the good redirect is refused.
func TestCallbackOneShot(t *testing.T) {
	t.Parallel()
	h := &callbackHandler{state: "st", got: make(chan callback, 1), outcome: make(chan error, 1)}
	h.outcome <- nil
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?code=c&state=st", nil))
	if rec.Code != 200 || (<-h.got).code != "c" {
		t.Fatalf("first: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?code=c&state=st", nil))
	if rec.Code != http.StatusGone {
		t.Errorf("replay: %d, want 410", rec.Code)
	}
	for _, u := range []string{"/favicon.ico", "/", "/?state=st"} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", u, rec.Code)
		}
	}
	if got := rec.Header().Get("Referrer-Policy"); got != "no-referrer" {
		t.Errorf("Referrer-Policy = %q", got)
	}
}

// The provider's refusal reaches both the terminal (ErrDenied) and the
// browser page.
func TestLoopbackDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{Deny: true}, nil)
	var page string
	var code int
	done := make(chan struct{})
	_, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		go func() { defer close(done); code, page = browser(t, u) }()
		return nil
	}})
	<-done
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "access_denied") || !strings.Contains(err.Error(), "the user said no") {
		t.Errorf("err = %v, want ErrDenied with the provider's words", err)
	}
	if code != http.StatusBadRequest || !strings.Contains(page, "Sign-in failed") || !strings.Contains(page, "denied") {
		t.Errorf("page: %d %q", code, page)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "work.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was written: %v", err)
	}
}

func TestLoopbackTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	_, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 100 * time.Millisecond, Open: func(string) error { return nil }})
	if !errors.Is(err, ErrExpired) {
		t.Errorf("err = %v, want ErrExpired", err)
	}
}

// A provider that hands out no refresh token cannot be kept connected.
func TestLoopbackWithoutRefreshToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{OmitRefresh: true}, nil)
	_, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		go browser(t, u)
		return nil
	}})
	if err == nil || !strings.Contains(err.Error(), "no refresh token") {
		t.Errorf("err = %v", err)
	}
}

// The fake provider checks PKCE: the right verifier is needed to redeem
// a code, and an authorization request without S256 is refused.
func TestFakeChecksPKCE(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	verifier := "a-verifier-of-enough-length-0123456789-abcdefghijkl"
	sum := sha256.Sum256([]byte(verifier))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	authorize := func(method string) *url.URL {
		v := url.Values{"response_type": {"code"}, "client_id": {srv.ClientID()}, "redirect_uri": {"http://127.0.0.1:9/"},
			"state": {"x"}, "scope": {"mail"}, "code_challenge": {challenge}, "code_challenge_method": {method}}
		resp, err := noRedirect.Get(srv.AuthURL() + "?" + v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		return loc
	}
	if loc := authorize("plain"); loc.Query().Get("error") != "invalid_request" {
		t.Errorf("plain PKCE accepted: %s", loc)
	}
	exchange := func(code, verifier string) (int, string) {
		resp, err := http.PostForm(srv.TokenURL(), url.Values{"grant_type": {"authorization_code"}, "code": {code},
			"redirect_uri": {"http://127.0.0.1:9/"}, "client_id": {srv.ClientID()}, "code_verifier": {verifier}})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	code := authorize("S256").Query().Get("code")
	if c, b := exchange(code, verifier+"x"); c != 400 || !strings.Contains(b, "PKCE verification failed") {
		t.Errorf("wrong verifier: %d %s", c, b)
	}
	code = authorize("S256").Query().Get("code")
	if c, b := exchange(code, verifier); c != 200 || !strings.Contains(b, "refresh_token") {
		t.Errorf("right verifier: %d %s", c, b)
	}
	if c, _ := exchange(code, verifier); c != 400 {
		t.Errorf("code redeemed twice: %d", c)
	}
}

// The device flow polls at the provider's interval, 5 s slower after
// slow_down, through authorization_pending, until the user approves.
func TestDeviceFlow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{DeviceInterval: 1}, nil)
	var shown DeviceCode
	var slept []time.Duration
	st, err := e.m.ConnectDevice(context.Background(), "work", DeviceOptions{
		Show: func(dc DeviceCode) error {
			shown = dc
			e.srv.ScriptDevice("authorization_pending", "slow_down", "authorization_pending")
			e.srv.ApproveDevice()
			return nil
		},
		Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return ctx.Err() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if shown.UserCode == "" || !strings.HasSuffix(shown.VerificationURI, "/verify") || shown.Expiry.IsZero() {
		t.Errorf("shown = %+v", shown)
	}
	want := []time.Duration{time.Second, time.Second, 6 * time.Second, 6 * time.Second}
	if len(slept) != len(want) {
		t.Fatalf("slept %v, want %v", slept, want)
	}
	for i := range want {
		if slept[i] != want[i] {
			t.Errorf("slept %v, want %v", slept, want)
			break
		}
	}
	if st.State != StateOK || e.srv.Stats().DevicePolls != 4 {
		t.Errorf("status %+v, stats %+v", st, e.srv.Stats())
	}
	src, _ := e.m.Source("work", Any)
	if tok, err := src.Token(context.Background()); err != nil || !e.srv.ActiveAccess(tok.AccessToken) {
		t.Errorf("token after device flow: %v", err)
	}
}

func TestDeviceFlowDeniedAndExpired(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		decide func(*oauthtest.Server)
		want   error
	}{
		{"denied", (*oauthtest.Server).DenyDevice, ErrDenied},
		{"expired", func(s *oauthtest.Server) { s.Advance(11 * time.Minute) }, ErrExpired},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.Options{DeviceInterval: 1}, nil)
			_, err := e.m.ConnectDevice(context.Background(), "work", DeviceOptions{
				Show:  func(DeviceCode) error { e.srv.ScriptDevice("authorization_pending"); c.decide(e.srv); return nil },
				Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
			})
			if !errors.Is(err, c.want) {
				t.Errorf("err = %v, want %v", err, c.want)
			}
			if _, err := os.Stat(filepath.Join(e.dir, "work.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a token file was written: %v", err)
			}
		})
	}
}

// Transport errors while polling are retried; the flow still finishes.
func TestDeviceFlowRetriesTransportErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{DeviceInterval: 1}, nil)
	fails := 2
	e.m.opts.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Path == "/token" && fails > 0 {
			fails--
			return nil, errors.New("network is unreachable")
		}
		return http.DefaultTransport.RoundTrip(r)
	})}
	_, err := e.m.ConnectDevice(context.Background(), "work", DeviceOptions{
		Show:  func(DeviceCode) error { e.srv.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() },
	})
	if err != nil || fails != 0 {
		t.Errorf("err = %v, fails left %d", err, fails)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDeviceFlowUnsupported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, func(a *Account) { a.Provider.DeviceAuthURL = "" })
	_, err := e.m.ConnectDevice(context.Background(), "work", DeviceOptions{})
	if err == nil || !strings.Contains(err.Error(), "no device sign-in") {
		t.Errorf("err = %v", err)
	}
}

func TestDisconnect(t *testing.T) {
	t.Parallel()
	t.Run("revokes", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.Options{}, nil)
		e.connect(t)
		src, _ := e.m.Source("work", Any)
		tok, _ := src.Token(context.Background())
		res, err := e.m.Disconnect(context.Background(), "work")
		if err != nil || !res.Revoked || res.RevokeErr != nil {
			t.Fatalf("disconnect: %+v %v", res, err)
		}
		if e.srv.ActiveAccess(tok.AccessToken) || e.srv.Stats().Revocations != 1 {
			t.Errorf("grant still active at the provider: %+v", e.srv.Stats())
		}
		if _, err := os.Stat(filepath.Join(e.dir, "work.json")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("token file left: %v", err)
		}
		if _, err := src.Token(context.Background()); !errors.Is(err, ErrNotConnected) {
			t.Errorf("token after disconnect: %v", err)
		}
		if _, err := e.m.Disconnect(context.Background(), "work"); !errors.Is(err, ErrNotConnected) {
			t.Errorf("second disconnect: %v", err)
		}
	})
	t.Run("no revocation endpoint", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, oauthtest.Options{}, func(a *Account) { a.Provider.RevokeURL = ""; a.Provider.ManageURL = "https://manage.example" })
		e.connect(t)
		res, err := e.m.Disconnect(context.Background(), "work")
		if err != nil || res.Revoked || res.ManageURL != "https://manage.example" {
			t.Errorf("disconnect: %+v %v", res, err)
		}
	})
}

// The fake's consent page (for a browser test): Allow completes the
// sign-in, and a Microsoft-style localhost redirect reaches the listener.
func TestLoopbackConsentPageAndLocalhost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{ConsentPage: true}, func(a *Account) { a.Provider.RedirectHost = "localhost" })
	var page string
	done := make(chan struct{})
	st, err := e.m.ConnectLoopback(context.Background(), "work", LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		if ru := mustQuery(t, u).Get("redirect_uri"); !strings.HasPrefix(ru, "http://localhost:") {
			t.Errorf("redirect_uri = %s", ru)
		}
		go func() {
			defer close(done)
			_, form := browser(t, u)
			m := regexp.MustCompile(`name="request" value="([^"]+)"`).FindStringSubmatch(form)
			if m == nil || !strings.Contains(form, `id="allow"`) {
				t.Errorf("consent page: %q", form)
				return
			}
			resp, err := (&http.Client{Timeout: 10 * time.Second}).PostForm(e.srv.AuthURL(), url.Values{"request": {m[1]}, "decision": {"allow"}})
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			page = string(b)
		}()
		return nil
	}})
	<-done
	if err != nil || st.State != StateOK || !strings.Contains(page, "You can close this tab") {
		t.Errorf("consent page flow: %v %+v %q", err, st, page)
	}
}
