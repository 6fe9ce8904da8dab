package davmirror

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

func bearerSource(t *testing.T) (*oauthtest.Server, *oauth.Source) {
	t.Helper()
	prov := oauthtest.New(oauthtest.Options{})
	t.Cleanup(prov.Close)
	p := oauth.Custom(prov.AuthURL(), prov.TokenURL(), prov.DeviceAuthURL(), prov.RevokeURL(), []string{"calendar"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "g", Provider: p, ClientID: prov.ClientID()}}, oauth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(context.Background(), "g", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("g", oauth.Calendar)
	if err != nil {
		t.Fatal(err)
	}
	return prov, src
}

// headers records the Authorization header of each request.
type headers struct {
	mu  sync.Mutex
	got []string
}

func (h *headers) add(r *http.Request) {
	h.mu.Lock()
	h.got = append(h.got, r.Header.Get("Authorization"))
	h.mu.Unlock()
}

func (h *headers) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// The bearer token goes to the account's host only: a redirect to another
// host is followed without it (and without the Basic credentials).
func TestBearerStaysOnHost(t *testing.T) {
	t.Parallel()
	_, src := bearerSource(t)
	var other headers
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.add(r)
		w.Header().Set("ETag", `"1"`)
		w.Write([]byte("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n"))
	}))
	t.Cleanup(elsewhere.Close)
	var own headers
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		own.add(r)
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(home.Close)
	a := Account{Name: "g", URL: home.URL + "/", Username: "u", Password: "p", Bearer: src}
	data, _, err := Get(context.Background(), a, ICalendar, "/cal/x.ics")
	if err != nil || !strings.Contains(string(data), "VCALENDAR") {
		t.Fatalf("get: %q %v", data, err)
	}
	if got := own.list(); len(got) != 1 || !strings.HasPrefix(got[0], "Bearer ") {
		t.Errorf("own host got Authorization %q", got)
	}
	if got := other.list(); len(got) != 1 || got[0] != "" {
		t.Errorf("the other host got Authorization %q", got)
	}
}

// A 401 that a new token cannot mend (insufficient_scope) is returned as
// it came, without a refresh; one with invalid_token is retried once.
func TestBearer401(t *testing.T) {
	t.Parallel()
	prov, src := bearerSource(t)
	var seen headers
	challenge := `Bearer error="insufficient_scope", scope="calendar"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		w.Header().Set("WWW-Authenticate", challenge)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	a := Account{Name: "g", URL: srv.URL + "/", Bearer: src}
	before := prov.Stats().Refreshes
	if _, _, err := Get(context.Background(), a, ICalendar, "/x.ics"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("insufficient scope: %v", err)
	}
	if n := len(seen.list()); n != 1 || prov.Stats().Refreshes != before {
		t.Errorf("%d requests and %d refreshes for insufficient_scope", n, prov.Stats().Refreshes-before)
	}
	challenge = `Bearer realm="x", error="invalid_token"`
	if _, _, err := Get(context.Background(), a, ICalendar, "/x.ics"); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("invalid token: %v", err)
	}
	got := seen.list()[1:]
	if len(got) != 2 || got[0] == got[1] || prov.Stats().Refreshes != before+1 {
		t.Errorf("invalid_token: requests with %q, %d refreshes; want one retry with a new token", got, prov.Stats().Refreshes-before)
	}
}
