package davsync

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// calendarSource connects an account to the fake provider (device flow)
// and returns its calendar token source.
func calendarSource(t *testing.T, prov *oauthtest.Server) *oauth.Source {
	t.Helper()
	p := oauth.Custom(prov.AuthURL(), prov.TokenURL(), prov.DeviceAuthURL(), prov.RevokeURL(), []string{"calendar"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "gmail", Provider: p, ClientID: prov.ClientID()}}, oauth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(context.Background(), "gmail", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("gmail", oauth.Calendar)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// A CalDAV account with auth = "oauth2" against Radicale behind a
// Google-shaped bearer front end: discovery, a conditional write and the
// mirror go through with the bearer token; a token the provider stopped
// honouring is answered 401 invalid_token, refreshed once and the request
// retried; a revoked grant fails with the reconnect error.
func TestBearerCalDAV(t *testing.T) {
	ctx := context.Background()
	base := davtest.StartRadicale(t, "alice", "work", "Work")
	prov := oauthtest.New(oauthtest.Options{User: "alice"})
	t.Cleanup(prov.Close)
	front := davtest.StartBearer(t, base, davtest.Introspect(prov.IntrospectURL()))
	acc := Account{Name: "google", URL: front.URL, Bearer: calendarSource(t, prov)}

	cols, err := Discover(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != 1 || cols[0].Path != "/alice/work/" {
		t.Fatalf("discover %+v", cols)
	}
	be := Backend{Account: acc, Collection: cols[0].Path}
	if _, err := be.Create(ctx, "standup.ics", []byte(standup)); err != nil {
		t.Fatal(err)
	}
	mirror := filepath.Join(t.TempDir(), "mirror")
	if st, err := Mirror(ctx, acc, cols[0], mirror); err != nil || st.Fetched != 1 {
		t.Fatalf("mirror %+v %v", st, err)
	}
	if _, refused, basic := front.Counts(); refused != 0 || basic != 0 {
		t.Fatalf("%d requests refused, %d with Basic auth, before any expiry", refused, basic)
	}

	// Expired early at the provider: one 401 invalid_token, one refresh,
	// the same request again (a PUT with its body included).
	prov.ExpireAccessTokens()
	before := prov.Stats().Refreshes
	if _, err := be.Create(ctx, "second.ics", []byte(strings.ReplaceAll(standup, "UID:standup", "UID:second"))); err != nil {
		t.Fatalf("create after expiry: %v", err)
	}
	if n := prov.Stats().Refreshes - before; n != 1 {
		t.Errorf("%d refreshes after expiry, want 1", n)
	}
	if _, refused, _ := front.Counts(); refused != 1 {
		t.Errorf("%d refusals, want the one that triggered the refresh", refused)
	}
	if st, err := Mirror(ctx, acc, cols[0], mirror); err != nil || st.Fetched != 1 {
		t.Fatalf("mirror after refresh %+v %v", st, err)
	}

	// Revoked: the refresh after the 401 finds the grant dead, and the
	// mirror's error says to reconnect instead of a bare 401.
	prov.RevokeAll()
	_, err = Mirror(ctx, acc, cols[0], mirror)
	if !errors.Is(err, oauth.ErrReconnect) || !strings.Contains(err.Error(), "hestia accounts connect gmail") {
		t.Fatalf("mirror after revocation: %v", err)
	}
	if _, err := be.Get(ctx, "standup.ics"); !errors.Is(err, oauth.ErrReconnect) {
		t.Fatalf("get after revocation: %v", err)
	}
}
