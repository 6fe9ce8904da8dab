package cardsync

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/davmirror"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// A CardDAV account with auth = "oauth2" (Google Contacts' shape): the
// address book is discovered and mirrored with the bearer token, an
// expired token is refreshed once after the 401 invalid_token, and a
// revoked grant fails with the reconnect error.
func TestBearerCardDAV(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "dana", davtest.Collection{Name: "default", Display: "My Contacts", AddressBook: true})
	putCard(t, base, "dana/default/marco.vcf", "BEGIN:VCARD\nVERSION:3.0\nUID:marco\nFN:Marco Rossi\nEMAIL:marco@acme.example\nEND:VCARD\n")
	prov := oauthtest.New(oauthtest.Options{User: "dana"})
	t.Cleanup(prov.Close)
	front := davtest.StartBearer(t, base, davtest.Introspect(prov.IntrospectURL()))

	p := oauth.Custom(prov.AuthURL(), prov.TokenURL(), prov.DeviceAuthURL(), prov.RevokeURL(), []string{"contacts"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "gmail", Provider: p, ClientID: prov.ClientID()}}, oauth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(ctx, "gmail", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("gmail", oauth.Contacts)
	if err != nil {
		t.Fatal(err)
	}
	// A Username is ignored once Bearer is set: no Basic auth goes out.
	acc := davmirror.Account{Name: "google", URL: front.URL, Username: "dana", Password: "unused", Bearer: src}

	books, err := Discover(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(books) != 1 || books[0].Path != "/dana/default/" {
		t.Fatalf("discover %+v", books)
	}
	dir := filepath.Join(t.TempDir(), FolderName(books[0]))
	if st, err := Mirror(ctx, acc, books[0], dir); err != nil || st.Fetched != 1 {
		t.Fatalf("mirror %+v %v", st, err)
	}
	prov.ExpireAccessTokens()
	putCard(t, base, "dana/default/anna.vcf", "BEGIN:VCARD\nVERSION:4.0\nUID:anna\nFN:Anna Bianchi\nEND:VCARD\n")
	before := prov.Stats().Refreshes
	if st, err := Mirror(ctx, acc, books[0], dir); err != nil || st.Fetched != 1 {
		t.Fatalf("mirror after expiry %+v %v", st, err)
	}
	if n := prov.Stats().Refreshes - before; n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if _, refused, basic := front.Counts(); refused != 1 || basic != 0 {
		t.Errorf("%d refusals (want 1), %d Basic-auth requests (want 0)", refused, basic)
	}
	prov.RevokeAll()
	if _, err := Mirror(ctx, acc, books[0], dir); !errors.Is(err, oauth.ErrReconnect) || !strings.Contains(err.Error(), "hestia accounts connect gmail") {
		t.Fatalf("mirror after revocation: %v", err)
	}
}
