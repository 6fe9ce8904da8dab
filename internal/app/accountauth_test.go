package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

func davPut(t *testing.T, url, ctype, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(strings.ReplaceAll(body, "\n", "\r\n")))
	req.SetBasicAuth("alice", "x")
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode >= 300 {
		t.Fatalf("PUT %s: %v %v", url, err, resp)
	}
	resp.Body.Close()
}

// A Google-shaped account configured with OAuth only: [[oauth.accounts]]
// at the fake provider, and mail, CalDAV and CardDAV accounts with
// auth = "oauth2" naming it. The daemon's wiring hands them the account's
// token (mail: SASL Tokens; DAV: the bearer token, against Radicale
// behind a Google-shaped bearer front end), doctor shows each one's
// sign-in state, and a revoked grant fails the DAV sync with the
// reconnect error and the doctor checks with the command to run.
func TestAccountsWithOAuthOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "alice",
		davtest.Collection{Name: "work", Display: "Work"},
		davtest.Collection{Name: "default", Display: "My Contacts", AddressBook: true})
	davPut(t, base+"alice/work/standup.ics", "text/calendar", "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//t//EN\nBEGIN:VEVENT\nUID:standup\nDTSTAMP:20260101T000000Z\nDTSTART:20260302T093000Z\nDTEND:20260302T100000Z\nSUMMARY:Standup\nEND:VEVENT\nEND:VCALENDAR\n")
	davPut(t, base+"alice/default/marco.vcf", "text/vcard", "BEGIN:VCARD\nVERSION:3.0\nUID:marco\nFN:Marco Rossi\nEMAIL:marco@acme.example\nEND:VCARD\n")
	prov := oauthtest.New(oauthtest.Options{User: "alice"})
	t.Cleanup(prov.Close)
	front := davtest.StartBearer(t, base, davtest.Introspect(prov.IntrospectURL()))

	home := t.TempDir()
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.OAuth.Accounts = []config.OAuthAccount{{Name: "gmail", Provider: "custom", ClientID: prov.ClientID(),
		Scopes: []string{"mail", "calendar", "contacts"}, AuthURL: prov.AuthURL(), TokenURL: prov.TokenURL(), DeviceURL: prov.DeviceAuthURL(), RevokeURL: prov.RevokeURL()}}
	cfg.Mail.Accounts = []config.MailAccount{{Name: "gmail", Address: "alice", Auth: config.AuthOAuth2, OAuthAccount: "gmail",
		IMAPHost: "127.0.0.1", IMAPPort: 1143, IMAPSecurity: "none", SMTPHost: "127.0.0.1", SMTPPort: 1025, SMTPSecurity: "none"}}
	cfg.Calendar.CalDAV = []config.DAVAccount{{Name: "google", URL: front.URL, Auth: config.AuthOAuth2, OAuthAccount: "gmail"}}
	cfg.Contacts.CardDAV = []config.DAVAccount{{Name: "gcontacts", URL: front.URL, Auth: config.AuthOAuth2, OAuthAccount: "gmail"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a := New(paths, cfg, slog.New(slog.DiscardHandler), "test")
	t.Cleanup(func() { a.Close() })

	checks := func() map[string]string {
		out := map[string]string{}
		for _, c := range a.accountAuthChecks() {
			st, detail := c.Run(ctx)
			out[c.Name] = string(st) + ": " + detail
		}
		return out
	}
	for name, got := range checks() {
		if !strings.HasPrefix(got, string(doctor.Warn)) || !strings.Contains(got, "hestia accounts connect gmail") {
			t.Errorf("before connecting, %s = %s", name, got)
		}
	}
	m, err := a.OAuth()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(ctx, "gmail", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	got := checks()
	if len(got) != 3 {
		t.Fatalf("checks %v, want mail, caldav and carddav", got)
	}
	for _, name := range []string{"mail.gmail.signin", "caldav.google.signin", "carddav.gcontacts.signin"} {
		if !strings.HasPrefix(got[name], string(doctor.OK)) || !strings.Contains(got[name], "OAuth account gmail") {
			t.Errorf("connected: %s = %q", name, got[name])
		}
	}

	// Mail: IMAP and SMTP sign in with the account's token, no password.
	mm, err := a.OpenMail(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ia, err := mm.IMAPAccount("gmail")
	if err != nil || ia.Tokens == nil || ia.Password != "" || ia.Username != "alice" {
		t.Fatalf("IMAP account %+v, %v", ia, err)
	}
	sa, err := mm.smtpAccount("gmail")
	if err != nil || sa.Tokens == nil || sa.Password != "" {
		t.Fatalf("SMTP account %+v, %v", sa, err)
	}
	tok, err := ia.Tokens.Token(ctx)
	if err != nil || !prov.ActiveAccess(tok.AccessToken) {
		t.Fatalf("mail token: %v", err)
	}

	// Calendar and contacts mirror through the bearer front end.
	cal, err := a.OpenCalendar(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := cal.SyncAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	for _, s := range stats {
		events += s.Events
	}
	if events != 1 {
		t.Fatalf("calendar sync %+v", stats)
	}
	ag, err := cal.Store.Agenda(ctx, calendar.Query{From: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)})
	if err != nil || len(ag.Instances) != 1 || ag.Instances[0].Summary != "Standup" {
		t.Fatalf("agenda %+v %v", ag, err)
	}
	con, err := a.OpenContacts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	done, err := con.MirrorDAV(ctx)
	if err != nil || len(done) != 1 {
		t.Fatalf("contacts mirror %v %v", done, err)
	}
	if _, _, basic := front.Counts(); basic != 0 {
		t.Errorf("%d DAV requests went out with Basic auth", basic)
	}

	// The user removes the app's access: the next sync's refresh finds
	// the grant dead; the sync error and every dependent check say so.
	prov.RevokeAll()
	_, err = cal.MirrorDAV(ctx)
	if !errors.Is(err, oauth.ErrReconnect) || !strings.Contains(err.Error(), "hestia accounts connect gmail") {
		t.Fatalf("calendar sync after revocation: %v", err)
	}
	for name, got := range checks() {
		if !strings.HasPrefix(got, string(doctor.Fail)) || !strings.Contains(got, "reconnected: run hestia accounts connect gmail") {
			t.Errorf("after revocation, %s = %s", name, got)
		}
	}
	if _, err := con.MirrorDAV(ctx); !errors.Is(err, oauth.ErrReconnect) {
		t.Fatalf("contacts sync after revocation: %v", err)
	}
}
