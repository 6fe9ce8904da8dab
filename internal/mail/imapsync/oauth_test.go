package imapsync

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// oauthEnv is a fake authorization server, a Manager with one account
// connected to it through the device flow, and the reconnect reports.
type oauthEnv struct {
	srv        *oauthtest.Server
	src        *oauth.Source
	mu         sync.Mutex
	reconnects []string
}

func newOAuthEnv(t *testing.T, user string) *oauthEnv {
	t.Helper()
	e := &oauthEnv{srv: oauthtest.New(oauthtest.Options{User: user})}
	t.Cleanup(e.srv.Close)
	p := oauth.Custom(e.srv.AuthURL(), e.srv.TokenURL(), e.srv.DeviceAuthURL(), e.srv.RevokeURL(), []string{"mail"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "dove", Provider: p, ClientID: e.srv.ClientID()}}, oauth.Options{
		Dir: t.TempDir(),
		OnReconnect: func(_ context.Context, re *oauth.ReconnectError) {
			e.mu.Lock()
			e.reconnects = append(e.reconnects, re.Account+":"+re.Code)
			e.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(context.Background(), "dove", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { e.srv.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	if e.src, err = m.Source("dove", oauth.Mail); err != nil {
		t.Fatal(err)
	}
	return e
}

// loginWith logs in as user to dovecot on port offering only mech, the
// way Dial does.
func loginWith(ctx context.Context, port int, user string, tokens mailauth.Tokens, mech string) error {
	c, err := imapclient.DialInsecure(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil)
	if err != nil {
		return err
	}
	defer c.Close()
	offered := c.Caps().AuthMechanisms()
	found := false
	for _, m := range offered {
		found = found || strings.EqualFold(m, mech)
	}
	if !found {
		return errors.New("dovecot does not offer " + mech + ": " + strings.Join(offered, " "))
	}
	err = mailauth.Authenticate(ctx, tokens, mailauth.Login{User: user, Host: "127.0.0.1", Port: port,
		Offered: []string{mech}, Auth: c.Authenticate, Refused: Refused, IMAP: true})
	if err != nil {
		return err
	}
	// Authenticated for real: the mailbox can be opened.
	if _, err := c.Select("INBOX", nil).Wait(); err != nil {
		return err
	}
	return c.Logout().Wait()
}

// Dovecot's oauth2 passdb checks each token at the fake provider's RFC
// 7662 introspection endpoint: both SASL mechanisms log in with a valid
// token; a token the provider no longer honours is refreshed once and the
// login retried; a revoked grant fails with the reconnect error.
func TestOAuthLoginAgainstDovecot(t *testing.T) {
	ctx := context.Background()
	e := newOAuthEnv(t, "alice")
	d := emailtest.StartDovecotWith(t, emailtest.DovecotOptions{IntrospectURL: e.srv.IntrospectURL()})

	for _, mech := range []string{mailauth.OAuthBearer, mailauth.XOAuth2} {
		before := e.srv.Stats()
		if err := loginWith(ctx, d.Port, d.User, e.src, mech); err != nil {
			t.Fatalf("%s with a valid token: %v", mech, err)
		}
		if st := e.srv.Stats(); st.Introspections <= before.Introspections || st.Refreshes != before.Refreshes {
			t.Errorf("%s: introspections %d→%d, refreshes %d→%d; want dovecot to introspect, no refresh",
				mech, before.Introspections, st.Introspections, before.Refreshes, st.Refreshes)
		}
	}

	// A wrong user name is refused with the same token even after a
	// refresh: the error says what to check.
	err := loginWith(ctx, d.Port, "mallory", e.src, mailauth.XOAuth2)
	var re *mailauth.RefusedError
	if !errors.As(err, &re) || !Refused(err) {
		t.Fatalf("login as another user: %v", err)
	}

	// The provider stops honouring the access tokens (expired early):
	// the refusal triggers one refresh and the retry works, for a sync
	// through the account's Tokens too.
	for _, mech := range []string{mailauth.OAuthBearer, mailauth.XOAuth2} {
		e.srv.ExpireAccessTokens()
		before := e.srv.Stats()
		if err := loginWith(ctx, d.Port, d.User, e.src, mech); err != nil {
			t.Fatalf("%s after the token expired: %v", mech, err)
		}
		if st := e.srv.Stats(); st.Refreshes != before.Refreshes+1 {
			t.Errorf("%s: %d refreshes, want 1", mech, st.Refreshes-before.Refreshes)
		}
	}
	d.Deliver(t, "", rawMsg("one@x", "bob@example.org", "Token test", "hello over oauth"))
	e.srv.ExpireAccessTokens()
	acct := Account{Name: "dove", Host: "127.0.0.1", Port: d.Port, Security: "none", Username: d.User, Tokens: e.src}
	s := openStore(t)
	res, err := (&Syncer{Store: s}).Sync(ctx, acct)
	if err != nil || res.Fetched != 1 {
		t.Fatalf("sync over OAuth after expiry = %+v, %v", res, err)
	}
	if r, _ := s.Search(ctx, mail.Query{Text: "oauth", Account: "dove"}); len(r.Messages) != 1 {
		t.Fatalf("synced message not found: %+v", r.Messages)
	}

	// The user removes the app's access at the provider: the refused
	// login's refresh finds the grant dead, which is reported once and
	// named in the error; no password or token appears in it.
	e.srv.RevokeAll()
	_, err = (&Syncer{Store: s}).Sync(ctx, acct)
	if !errors.Is(err, oauth.ErrReconnect) || !strings.Contains(err.Error(), "hestia accounts connect dove") || !strings.Contains(err.Error(), "IMAP login as alice") {
		t.Fatalf("sync after revocation: %v", err)
	}
	e.mu.Lock()
	got := strings.Join(e.reconnects, ",")
	e.mu.Unlock()
	if got != "dove:invalid_grant" {
		t.Errorf("reconnect reports = %q", got)
	}
	// Later attempts fail at once, without asking dovecot or the provider.
	before := e.srv.Stats()
	if _, err := Dial(ctx, acct); !errors.Is(err, oauth.ErrReconnect) {
		t.Fatalf("dial after revocation: %v", err)
	}
	if st := e.srv.Stats(); st.Introspections != before.Introspections || st.Refreshes != before.Refreshes {
		t.Errorf("a dead grant still reached the provider: %+v → %+v", before, st)
	}
}
