package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// oauthApp is an App with one custom OAuth account at a fake provider.
func oauthApp(t *testing.T, srv *oauthtest.Server, clk *testClock) *App {
	t.Helper()
	a := testApp(t, t.TempDir())
	a.Now = clk.Now
	a.Config.OAuth = config.OAuthConfig{Accounts: []config.OAuthAccount{{
		Name: "work", Provider: "custom", ClientID: srv.ClientID(), Scopes: []string{"mail", "calendar"},
		AuthURL: srv.AuthURL(), TokenURL: srv.TokenURL(), RevokeURL: srv.RevokeURL(),
	}}}
	if err := a.Config.Validate(); err != nil {
		t.Fatal(err)
	}
	return a
}

func connectOAuth(t *testing.T, m *oauth.Manager) {
	t.Helper()
	done := make(chan struct{})
	_, err := m.ConnectLoopback(context.Background(), "work", oauth.LoopbackOptions{Timeout: 10 * time.Second, Open: func(u string) error {
		go func() {
			defer close(done)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	<-done
}

func runOAuthCheck(t *testing.T, a *App) doctor.Result {
	t.Helper()
	checks := a.oauthChecks()
	if len(checks) != 1 || checks[0].Name != "oauth.work" {
		t.Fatalf("checks = %v", checks)
	}
	return doctor.Run(context.Background(), checks, 5*time.Second)[0]
}

// A revoked grant: the doctor check fails naming the command, and the
// user is notified once — not on each retry, not again after a restart —
// until connecting again marks it read; a later revocation of the new
// connection notifies again.
func TestOAuthRevokedGrantDoctorAndNotification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	clk := &testClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := oauthApp(t, srv, clk)
	n, err := notify.Open(ctx, filepath.Join(t.TempDir(), "notify.db"), notify.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	a.Notify = n
	m, err := a.OAuth()
	if err != nil {
		t.Fatal(err)
	}
	if r := runOAuthCheck(t, a); r.Status != doctor.Warn || !strings.Contains(r.Detail, "hestia accounts connect work") {
		t.Errorf("before connecting: %+v", r)
	}
	connectOAuth(t, m)
	if r := runOAuthCheck(t, a); r.Status != doctor.OK || !strings.Contains(r.Detail, "token valid until") {
		t.Errorf("connected: %+v", r)
	}
	unread := func() []notify.Notification {
		in, err := n.List(ctx, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		return in.Notifications
	}

	srv.RevokeAll()
	clk.Advance(2 * time.Hour)
	r := runOAuthCheck(t, a)
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, "reconnect with hestia accounts connect work") || !strings.Contains(r.Detail, "invalid_grant") {
		t.Errorf("revoked: %+v", r)
	}
	notified := map[string]string{}
	for range 3 { // retries, polls
		src, _ := m.Source("work", oauth.Mail)
		src.Token(ctx)
		runOAuthCheck(t, a)
		a.notifyReconnects(ctx, m, notified)
	}
	a.notifyReconnects(ctx, m, map[string]string{}) // a restarted daemon
	got := unread()
	if len(got) != 1 || got[0].Kind != "account" || !strings.Contains(got[0].Body, "hestia accounts connect work") || !strings.Contains(got[0].Title, "work") {
		t.Fatalf("notifications = %+v, want one asking to reconnect", got)
	}

	clk.Advance(time.Second)
	connectOAuth(t, m)
	a.notifyReconnects(ctx, m, notified)
	if got := unread(); len(got) != 0 {
		t.Errorf("after reconnecting, unread = %+v", got)
	}
	if r := runOAuthCheck(t, a); r.Status != doctor.OK {
		t.Errorf("reconnected: %+v", r)
	}

	srv.RevokeAll()
	clk.Advance(2 * time.Hour)
	runOAuthCheck(t, a)
	a.notifyReconnects(ctx, m, notified)
	if got := unread(); len(got) != 1 {
		t.Errorf("second revocation: unread = %+v, want a new notification", got)
	}
}

// The worker notifies as soon as a refresh finds the grant dead.
func TestOAuthReconnectWorkerKicked(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	clk := &testClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := oauthApp(t, srv, clk)
	n, err := notify.Open(ctx, filepath.Join(t.TempDir(), "notify.db"), notify.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	a.Notify = n
	m, _ := a.OAuth()
	connectOAuth(t, m)
	done := make(chan error, 1)
	go func() { done <- a.oauthReconnects(ctx) }()
	defer func() { cancel(); <-done }()
	srv.RevokeAll()
	clk.Advance(2 * time.Hour)
	src, _ := m.Source("work", oauth.Calendar)
	if _, err := src.Token(ctx); err == nil {
		t.Fatal("a revoked grant gave a token")
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if in, _ := n.List(ctx, true, 0); in.Unread == 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Error("no notification after the grant was found dead")
}

func TestOAuthAccountsFromConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "google-client")
	os.WriteFile(secret, []byte("  the-secret\n"), 0o600)
	accts, err := oauthAccounts(config.OAuthConfig{Accounts: []config.OAuthAccount{
		{Name: "gmail", Provider: "google", ClientID: "g", ClientSecretFile: secret},
		{Name: "work", Provider: "microsoft", ClientID: "m", Tenant: "contoso.com"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if accts[0].ClientSecret != "the-secret" || accts[0].Provider.Name != "google" {
		t.Errorf("gmail = %+v", accts[0].Provider.Name)
	}
	if !strings.Contains(accts[1].Provider.TokenURL, "/contoso.com/oauth2/v2.0/token") || accts[1].ClientSecret != "" {
		t.Errorf("work token URL = %s", accts[1].Provider.TokenURL)
	}
	os.Chmod(secret, 0o644)
	_, err = oauthAccounts(config.OAuthConfig{Accounts: []config.OAuthAccount{{Name: "gmail", Provider: "google", ClientID: "g", ClientSecretFile: secret}}})
	if err == nil || !strings.Contains(err.Error(), "oauth.accounts[0].client_secret_file") || strings.Contains(err.Error(), "the-secret") {
		t.Errorf("loose secret file: %v", err)
	}
}
