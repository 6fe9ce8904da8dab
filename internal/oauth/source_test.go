package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

func readGrant(t *testing.T, dir, name string) grant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g grant
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// A token is renewed once it is within five minutes of expiry, and
// callers that ask at the same time share one refresh.
func TestRefreshAheadSharedByConcurrentCallers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{AccessTTL: 10 * time.Minute}, nil)
	e.connect(t)
	src, _ := e.m.Source("work", Any)
	first, err := src.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(4 * time.Minute) // 6 minutes left: still good
	if tok, _ := src.Token(context.Background()); tok.AccessToken != first.AccessToken || e.srv.Stats().Refreshes != 0 {
		t.Fatalf("refreshed %d times with 6 minutes left", e.srv.Stats().Refreshes)
	}
	e.clock.Advance(2 * time.Minute) // 4 minutes left: renew now
	const n = 16
	toks := make([]Token, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half through a second Manager: another process on the files.
			m := e.m
			if i%2 == 1 {
				m = e.manager(t)
			}
			s, _ := m.Source("work", Mail)
			toks[i], errs[i] = s.Token(context.Background())
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if toks[i].AccessToken == first.AccessToken || toks[i].AccessToken != toks[0].AccessToken {
			t.Errorf("caller %d got %v, want the one new token", i, toks[i])
		}
	}
	if got := e.srv.Stats().Refreshes; got != 1 {
		t.Errorf("refreshes = %d, want 1 shared by %d callers in two processes", got, n)
	}
	if !toks[0].Expiry.Equal(e.clock.Now().Add(10 * time.Minute)) {
		t.Errorf("expiry = %v", toks[0].Expiry)
	}
}

// A rotated refresh token is saved at once: a restarted process refreshes
// with it, while the old one is refused.
func TestRotatedRefreshTokenPersisted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{Rotate: true, AccessTTL: time.Hour}, nil)
	e.connect(t)
	before := readGrant(t, e.dir, "work").RefreshToken
	e.clock.Advance(time.Hour)
	src, _ := e.m.Source("work", Any)
	if _, err := src.Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := readGrant(t, e.dir, "work")
	if after.RefreshToken == before || after.RefreshToken == "" {
		t.Fatal("the rotated refresh token was not saved")
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, "work.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after rotation = %v", fi.Mode().Perm())
	}
	e.clock.Advance(time.Hour)
	m2 := e.manager(t)
	src2, _ := m2.Source("work", Any)
	if _, err := src2.Token(context.Background()); err != nil {
		t.Fatalf("a restarted process could not refresh with the saved token: %v", err)
	}
	if e.srv.Stats().Refreshes != 2 || e.reconnectCount() != 0 {
		t.Errorf("stats %+v, reconnects %d", e.srv.Stats(), e.reconnectCount())
	}
}

// A revoked grant becomes a *ReconnectError, reported once through
// OnReconnect, remembered across restarts without asking the provider
// again, and cleared by connecting again.
func TestRevokedGrantNeedsReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	e.connect(t)
	e.srv.RevokeAll()
	e.clock.Advance(2 * time.Hour)
	src, _ := e.m.Source("work", Calendar)
	_, err := src.Token(context.Background())
	var re *ReconnectError
	if !errors.As(err, &re) || !errors.Is(err, ErrReconnect) || re.Code != "invalid_grant" || Retryable(err) {
		t.Fatalf("err = %v, want a ReconnectError for invalid_grant", err)
	}
	if !strings.Contains(err.Error(), "hestia accounts connect work") {
		t.Errorf("error does not say how to fix it: %v", err)
	}
	refreshes := e.srv.Stats().Refreshes
	for range 3 {
		if _, err := src.Token(context.Background()); !errors.Is(err, ErrReconnect) {
			t.Fatalf("retry: %v", err)
		}
	}
	m2 := e.manager(t)
	if st, _ := m2.Status("work"); st.State != StateReconnect || !strings.Contains(st.Detail, "invalid_grant") {
		t.Errorf("status after restart = %+v", st)
	}
	if _, err := m2.Check(context.Background(), "work"); !errors.Is(err, ErrReconnect) {
		t.Errorf("check after restart: %v", err)
	}
	if got := e.srv.Stats().Refreshes; got != refreshes {
		t.Errorf("a dead grant was refreshed again (%d → %d)", refreshes, got)
	}
	if e.reconnectCount() != 1 {
		t.Errorf("OnReconnect called %d times, want once", e.reconnectCount())
	}
	if rs := m2.Reconnects(); len(rs) != 1 || rs[0].Account != "work" {
		t.Errorf("Reconnects = %v", rs)
	}
	e.connect(t)
	if _, err := src.Token(context.Background()); err != nil {
		t.Errorf("token after reconnecting: %v", err)
	}
	if st, _ := m2.Status("work"); st.State != StateOK {
		t.Errorf("status after reconnecting = %+v", st)
	}
	if rs := m2.Reconnects(); len(rs) != 0 {
		t.Errorf("Reconnects after reconnecting = %v", rs)
	}
}

// While the provider is unreachable a token that has not expired yet is
// still handed out; once expired the error is retryable, not a reconnect.
func TestTransportFailureIsRetryable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{AccessTTL: 10 * time.Minute}, nil)
	e.connect(t)
	src, _ := e.m.Source("work", Any)
	first, _ := src.Token(context.Background())
	e.m.opts.HTTPClient = &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("dial tcp: connection refused")
	})}
	e.clock.Advance(7 * time.Minute)
	if tok, err := src.Token(context.Background()); err != nil || tok.AccessToken != first.AccessToken {
		t.Errorf("near expiry, provider down: %v %v", tok, err)
	}
	e.clock.Advance(5 * time.Minute)
	_, err := src.Token(context.Background())
	if err == nil || errors.Is(err, ErrReconnect) || !Retryable(err) {
		t.Errorf("expired, provider down: %v (retryable %v)", err, Retryable(err))
	}
	if e.reconnectCount() != 0 {
		t.Error("a transport failure was reported as a reconnect")
	}
	if st, _ := e.m.Status("work"); st.State != StateOK {
		t.Errorf("status = %+v", st)
	}
}

// A provider 5xx is retryable; invalid_client is neither retryable nor a
// reconnect (the configuration is wrong).
func TestRefreshErrorClasses(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status    int
		body      string
		retryable bool
		reconnect bool
	}{
		{503, `oops`, true, false},
		{429, ``, true, false},
		{401, `{"error":"invalid_client"}`, false, false},
		{400, `{"error":"invalid_grant","error_description":"AADSTS70008: expired"}`, false, true},
		{400, `{"error":"interaction_required"}`, false, true},
	} {
		t.Run(fmt.Sprint(c.status, c.body), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, oauthtest.Options{}, nil)
			e.connect(t)
			e.m.opts.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(c.body)), Request: r}, nil
			})}
			e.clock.Advance(2 * time.Hour)
			src, _ := e.m.Source("work", Any)
			_, err := src.Token(context.Background())
			if err == nil || Retryable(err) != c.retryable || errors.Is(err, ErrReconnect) != c.reconnect {
				t.Errorf("err = %v: retryable %v reconnect %v", err, Retryable(err), errors.Is(err, ErrReconnect))
			}
		})
	}
}

// A token file made for another client id cannot be refreshed with the
// configured one: reconnect.
func TestClientIDChangedNeedsReconnect(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	e.connect(t)
	e.acct.ClientID = "another-client"
	m2 := e.manager(t)
	src, _ := m2.Source("work", Any)
	_, err := src.Token(context.Background())
	var re *ReconnectError
	if !errors.As(err, &re) || re.Code != "client_changed" {
		t.Errorf("err = %v", err)
	}
}

// Microsoft-style providers get one access token per resource, each
// refreshed with that resource's scopes (plus offline_access).
func TestPerResourceTokens(t *testing.T) {
	t.Parallel()
	imap, graphCal := "https://outlook.office.com/IMAP.AccessAsUser.All", "https://graph.microsoft.com/Calendars.ReadWrite"
	e := newEnv(t, oauthtest.Options{}, func(a *Account) {
		p := Microsoft("")
		p.AuthURL, p.TokenURL, p.DeviceAuthURL, p.RedirectHost = a.Provider.AuthURL, a.Provider.TokenURL, a.Provider.DeviceAuthURL, "127.0.0.1"
		a.Provider = p
		a.Scopes = []string{OfflineAccess, imap, graphCal, "https://graph.microsoft.com/Contacts.Read"}
	})
	e.connect(t)
	mail, _ := e.m.Source("work", Mail)
	cal, _ := e.m.Source("work", Calendar)
	contacts, _ := e.m.Source("work", Contacts)
	tm, err := mail.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tc, err := cal.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := contacts.Token(context.Background())
	if tm.AccessToken == tc.AccessToken || tk.AccessToken != tc.AccessToken {
		t.Error("want one token for outlook.office.com and one shared by the Graph purposes")
	}
	want := []string{OfflineAccess + " " + imap, OfflineAccess + " " + graphCal + " https://graph.microsoft.com/Contacts.Read"}
	if got := e.srv.Stats().RefreshScopes; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refresh scopes = %q, want %q", got, want)
	}
	tasks, _ := e.m.Source("work", Tasks)
	var se *ScopeError
	if _, err := tasks.Token(context.Background()); !errors.As(err, &se) || Retryable(err) || !strings.Contains(err.Error(), "not granted a tasks scope") {
		t.Errorf("tasks: %v", err)
	}
	if st, err := e.m.Check(context.Background(), "work"); err != nil || st.State != StateOK {
		t.Errorf("check: %+v %v", st, err)
	}
}

// Transport adds the bearer token and, after a 401 invalid_token, retries
// once with a fresh token (the body replayed); insufficient_scope is
// passed through.
func TestTransportRetriesStaleToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	e.connect(t)
	var mu sync.Mutex
	var bodies []string
	challenge := `Bearer realm="dav", error="invalid_token", error_description="expired"`
	dav := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !e.srv.ActiveAccess(tok) {
			w.Header().Set("WWW-Authenticate", challenge)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/forbidden" {
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	defer dav.Close()
	src, _ := e.m.Source("work", Calendar)
	hc := &http.Client{Transport: &Transport{Source: src}}
	if resp, err := hc.Post(dav.URL, "text/plain", strings.NewReader("one")); err != nil || resp.StatusCode != 200 {
		t.Fatalf("first: %v %v", resp, err)
	}
	e.srv.ExpireAccessTokens() // revoked early, before its expiry
	resp, err := hc.Post(dav.URL, "text/plain", strings.NewReader("two"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the token went stale: %v %v", resp, err)
	}
	if fmt.Sprint(bodies) != "[one two two]" || e.srv.Stats().Refreshes != 1 {
		t.Errorf("bodies %q, refreshes %d", bodies, e.srv.Stats().Refreshes)
	}
	resp, err = hc.Get(dav.URL + "/forbidden")
	if err != nil || resp.StatusCode != 401 || e.srv.Stats().Refreshes != 1 {
		t.Errorf("insufficient_scope: %v %v, refreshes %d", resp, err, e.srv.Stats().Refreshes)
	}
	for _, c := range []struct {
		h    string
		want bool
	}{
		{challenge, true}, {`Bearer`, true}, {`Bearer realm="a,b", error="invalid_request"`, false},
		{`Basic realm="x"`, false}, {`Bearer error="insufficient_scope"`, false},
	} {
		if got := staleTokenChallenge(http.Header{"Www-Authenticate": {c.h}}); got != c.want {
			t.Errorf("staleTokenChallenge(%q) = %v", c.h, got)
		}
	}
}

func TestUnknownAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t, oauthtest.Options{}, nil)
	_, err := e.m.Source("nope", Mail)
	var ue *UnknownAccountError
	if !errors.As(err, &ue) || Retryable(err) {
		t.Errorf("err = %v", err)
	}
	if st, err := e.m.Status("work"); err != nil || st.State != StateNotConnected {
		t.Errorf("status before connecting: %+v %v", st, err)
	}
	if _, err := e.m.Check(context.Background(), "work"); !errors.Is(err, ErrNotConnected) || !strings.Contains(err.Error(), "hestia accounts connect work") {
		t.Errorf("check before connecting: %v", err)
	}
	if _, err := NewManager([]Account{e.acct, e.acct}, e.opts); err == nil {
		t.Error("two accounts with one name accepted")
	}
	if _, err := NewManager([]Account{{Name: "../x", Provider: e.acct.Provider, ClientID: "c"}}, e.opts); err == nil {
		t.Error("a path as account name accepted")
	}
}
