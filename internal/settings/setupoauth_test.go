package settings

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// connected returns a token source of an account signed in at prov.
func connected(t *testing.T, prov *oauthtest.Server, p oauth.Purpose) *oauth.Source {
	t.Helper()
	pr := oauth.Custom(prov.AuthURL(), prov.TokenURL(), prov.DeviceAuthURL(), prov.RevokeURL(), []string{"mail", "calendar"})
	m, err := oauth.NewManager([]oauth.Account{{Name: "home", Provider: pr, ClientID: prov.ClientID()}}, oauth.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.ConnectDevice(context.Background(), "home", oauth.DeviceOptions{
		Show:  func(oauth.DeviceCode) error { prov.ApproveDevice(); return nil },
		Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() },
	}); err != nil {
		t.Fatal(err)
	}
	src, err := m.Source("home", p)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// oauthIMAP is the in-memory IMAP server whose sessions take OAUTHBEARER
// tokens that check approves.
type oauthIMAPSession struct {
	imapserver.Session
	check func(token, user string) bool
	pass  string
}

func (s *oauthIMAPSession) AuthenticateMechanisms() []string { return []string{"OAUTHBEARER"} }
func (s *oauthIMAPSession) Authenticate(string) (sasl.Server, error) {
	return sasl.NewOAuthBearerServer(func(o sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
		if !s.check(o.Token, o.Username) || s.Login(o.Username, s.pass) != nil {
			return &sasl.OAuthBearerError{Status: "invalid_token", Schemes: "bearer"}
		}
		return nil
	}), nil
}

func startOAuthIMAP(t *testing.T, user string, check func(token, user string) bool) int {
	t.Helper()
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(user, "internal")
	if err := u.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	mem.AddUser(u)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return &oauthIMAPSession{Session: mem.NewSession(), check: check, pass: "internal"}, nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}},
		InsecureAuth: true,
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

type oauthSMTPBackend struct{ check func(token, user string) bool }

func (b oauthSMTPBackend) NewSession(*smtp.Conn) (smtp.Session, error) {
	return &oauthSMTPSession{check: b.check}, nil
}

type oauthSMTPSession struct{ check func(token, user string) bool }

func (s *oauthSMTPSession) AuthMechanisms() []string { return []string{"XOAUTH2", "OAUTHBEARER"} }
func (s *oauthSMTPSession) Auth(string) (sasl.Server, error) {
	return sasl.NewOAuthBearerServer(func(o sasl.OAuthBearerOptions) *sasl.OAuthBearerError {
		if !s.check(o.Token, o.Username) {
			return &sasl.OAuthBearerError{Status: "invalid_token", Schemes: "bearer"}
		}
		return nil
	}), nil
}
func (s *oauthSMTPSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *oauthSMTPSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *oauthSMTPSession) Data(io.Reader) error                 { return nil }
func (s *oauthSMTPSession) Reset()                               {}
func (s *oauthSMTPSession) Logout() error                        { return nil }

func startOAuthSMTP(t *testing.T, check func(token, user string) bool) int {
	t.Helper()
	srv := smtp.NewServer(oauthSMTPBackend{check})
	srv.Domain, srv.AllowInsecureAuth = "localhost", true
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// introspectUser adapts davtest.Introspect to a (token, user) check.
func introspectUser(endpoint string) func(token, user string) bool {
	in := davtest.Introspect(endpoint)
	return func(token, user string) bool {
		u, ok := in(token)
		return ok && u == user
	}
}

func readConfig(t *testing.T, s *Service) config.Config {
	t.Helper()
	data, err := os.ReadFile(s.Paths.ConfigFile())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(data, func(string) string { return "" })
	if err != nil {
		t.Fatalf("written config invalid: %v\n%s", err, data)
	}
	return cfg
}

// Choosing the Gmail preset with "Sign in with Google" before any sign-in:
// the step writes the OAuth account (secret in an owner-only file) and the
// mail account naming it, no password, and says which command connects.
func TestSetupMailOAuthBeforeConnecting(t *testing.T) {
	s := newService(t, "")
	var gmail MailPreset
	for _, p := range MailPresets() {
		if p.ID == "gmail" {
			gmail = p
		}
	}
	if gmail.OAuth != "google" || len(gmail.OAuthScopes) != 1 || gmail.OAuthScopes[0] != "https://mail.google.com/" {
		t.Fatalf("gmail preset %+v", gmail)
	}
	in := StepInput{Name: "Personal", Address: "anna@gmail.com", Password: "left in the form", Auth: config.AuthOAuth2,
		OAuthProvider: gmail.OAuth, ClientID: "123.apps.googleusercontent.com", ClientSecret: "shh",
		IMAPHost: gmail.IMAPHost, IMAPPort: gmail.IMAPPort, IMAPSecurity: gmail.IMAPSecurity,
		SMTPHost: gmail.SMTPHost, SMTPPort: gmail.SMTPPort, SMTPSecurity: gmail.SMTPSecurity}
	out, err := s.SaveStep(context.Background(), StepMail, in)
	if err != nil {
		t.Fatal(err)
	}
	if out["tested"] != false || out["connect"] != "hestia accounts connect personal" {
		t.Errorf("answer %v", out)
	}
	cfg := readConfig(t, s)
	oa, ok := cfg.OAuth.Account("personal")
	if !ok || oa.Provider != "google" || oa.ClientID != "123.apps.googleusercontent.com" {
		t.Fatalf("oauth accounts %+v", cfg.OAuth.Accounts)
	}
	if fi, err := os.Stat(oa.ClientSecretFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client secret file %s: %v %v", oa.ClientSecretFile, fi, err)
	}
	a := cfg.Mail.Accounts[0]
	if !a.UsesOAuth() || a.OAuthAccount != "personal" || a.PasswordFile != "" || a.PasswordEnv != "" || a.Username != "anna@gmail.com" {
		t.Errorf("mail account %+v", a)
	}
	data, _ := os.ReadFile(s.Paths.ConfigFile())
	if strings.Contains(string(data), "shh") || strings.Contains(string(data), "left in the form") {
		t.Fatalf("a secret went into config.toml:\n%s", data)
	}
	if _, err := os.Stat(filepath.Join(SecretsDir(s.Paths), "mail-Personal")); err == nil {
		t.Error("a password file was written for an OAuth account")
	}
	// A second account reuses the OAuth account without a client id.
	in2 := in
	in2.Name, in2.OAuthAccount, in2.ClientID, in2.ClientSecret = "again", "personal", "", ""
	if _, err := s.SaveStep(context.Background(), StepMail, in2); err != nil {
		t.Fatal(err)
	}
	if cfg := readConfig(t, s); len(cfg.OAuth.Accounts) != 1 || len(cfg.Mail.Accounts) != 2 {
		t.Errorf("after a second account: %d oauth, %d mail accounts", len(cfg.OAuth.Accounts), len(cfg.Mail.Accounts))
	}
}

func TestSetupOAuthRefusals(t *testing.T) {
	s := newService(t, "")
	base := StepInput{Name: "w", Address: "a@b.example", Auth: config.AuthOAuth2, OAuthProvider: "microsoft",
		IMAPHost: "outlook.office365.com", IMAPPort: 993, IMAPSecurity: "tls", SMTPHost: "smtp.office365.com", SMTPPort: 587, SMTPSecurity: "starttls"}
	for _, tc := range []struct {
		name string
		step string
		edit func(*StepInput)
		want string
	}{
		{"no client id for a new account", StepMail, func(in *StepInput) {}, "client_id"},
		{"bad auth", StepMail, func(in *StepInput) { in.Auth = "token" }, "not password or oauth2"},
		{"bad oauth name", StepMail, func(in *StepInput) { in.OAuthAccount = "Work Account" }, "lower-case"},
		{"unknown provider", StepMail, func(in *StepInput) { in.OAuthProvider = "yahoo" }, "not google or microsoft"},
		{"tenant on google", StepMail, func(in *StepInput) { in.OAuthProvider, in.Tenant = "google", "common" }, "microsoft only"},
		{"microsoft caldav", StepCalendar, func(in *StepInput) { in.URL, in.ClientID = "https://dav.example/", "id" }, "Microsoft Graph"},
		{"dav folder", StepCalendar, func(in *StepInput) { in.URL, in.Path = "", "/tmp" }, "server's url"},
		{"carddav without address", StepContacts, func(in *StepInput) {
			in.URL, in.OAuthProvider, in.ClientID, in.Username = config.GoogleCardDAVURL, "google", "id", ""
		}, "in place of EMAIL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.edit(&in)
			_, err := s.SaveStep(context.Background(), tc.step, in)
			if !errors.Is(err, ErrStepInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(s.Paths.ConfigFile()); err == nil {
		data, _ := os.ReadFile(s.Paths.ConfigFile())
		t.Errorf("a refused step wrote config.toml:\n%s", data)
	}
}

// A build that carries a Microsoft client (config.PackagedClient) lets a
// new account leave the client id out: config.toml names none, so a later
// build's client is used, and the written file still loads.
func TestSetupOAuthPackagedClient(t *testing.T) {
	s := newService(t, "")
	s.Env = func(k string) string {
		if k == "HESTIA_OAUTH_MICROSOFT_CLIENT_ID" {
			return "0000-packaged"
		}
		return ""
	}
	in := StepInput{Name: "w", Address: "a@b.example", Auth: config.AuthOAuth2, OAuthProvider: "microsoft",
		IMAPHost: "outlook.office365.com", IMAPPort: 993, IMAPSecurity: "tls", SMTPHost: "smtp.office365.com", SMTPPort: 587, SMTPSecurity: "starttls"}
	if _, err := s.SaveStep(context.Background(), StepMail, in); err != nil {
		t.Fatal(err)
	}
	if data := read(t, s); strings.Contains(data, "client_id") {
		t.Errorf("config.toml names a client id:\n%s", data)
	}
	cfg, err := config.Parse([]byte(read(t, s)), s.Env)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := cfg.OAuth.Account("w"); !ok || a.ClientID != "0000-packaged" || !a.Packaged {
		t.Errorf("account %+v", a)
	}
	// Google has none in this build: the client id is still required.
	in.Name, in.OAuthAccount, in.OAuthProvider = "g", "g", "google"
	in.IMAPHost, in.SMTPHost = "imap.gmail.com", "smtp.gmail.com"
	if _, err := s.SaveStep(context.Background(), StepMail, in); !errors.Is(err, ErrStepInput) || !strings.Contains(err.Error(), "client_id") {
		t.Errorf("google without a client id: %v", err)
	}
}

// Once the account is signed in (and the daemon knows it), the step logs
// in to IMAP and SMTP with the token, and a CalDAV step sends it as a
// bearer token; Google's CardDAV URL gets the address in place of EMAIL.
func TestSetupOAuthConnected(t *testing.T) {
	prov := oauthtest.New(oauthtest.Options{User: "anna@example.org"})
	t.Cleanup(prov.Close)
	check := introspectUser(prov.IntrospectURL())
	mailSrc, calSrc := connected(t, prov, oauth.Mail), connected(t, prov, oauth.Calendar)
	s := newService(t, "")
	s.OAuthTokens = func(name string, p oauth.Purpose) (mailauth.Tokens, error) {
		if name != "home" {
			return nil, errors.New("unknown")
		}
		if p == oauth.Mail {
			return mailSrc, nil
		}
		return calSrc, nil
	}
	in := StepInput{Name: "home", Address: "anna@example.org", Auth: config.AuthOAuth2, OAuthProvider: "google", ClientID: "id",
		IMAPHost: "127.0.0.1", IMAPPort: startOAuthIMAP(t, "anna@example.org", check), IMAPSecurity: "none",
		SMTPHost: "127.0.0.1", SMTPPort: startOAuthSMTP(t, check), SMTPSecurity: "none"}
	out, err := s.SaveStep(context.Background(), StepMail, in)
	if err != nil {
		t.Fatal(err)
	}
	if out["mailboxes"] != 1 || out["connect"] != nil {
		t.Errorf("answer %v", out)
	}
	// A token the servers refuse fails the step and names the part.
	wrong := in
	wrong.Address, wrong.Username = "mallory@example.org", ""
	if _, err := s.TestStep(context.Background(), StepMail, wrong); err == nil || !strings.Contains(err.Error(), "IMAP login as mallory@example.org") {
		t.Errorf("wrong user: %v", err)
	}

	base := davtest.StartRadicale(t, "anna@example.org", "work", "Work")
	front := davtest.StartBearer(t, base, davtest.Introspect(prov.IntrospectURL()))
	cal := StepInput{Name: "gcal", URL: front.URL, Auth: config.AuthOAuth2, OAuthAccount: "home"}
	if out, err := s.SaveStep(context.Background(), StepCalendar, cal); err != nil || out["url"] != front.URL {
		t.Fatalf("calendar step: %v %v", out, err)
	}
	card := StepInput{Name: "gcontacts", URL: config.GoogleCardDAVURL, Username: "anna@example.org", Auth: config.AuthOAuth2, OAuthAccount: "nobody-yet", OAuthProvider: "google", ClientID: "id"}
	if out, err := s.SaveStep(context.Background(), StepContacts, card); err != nil || out["tested"] != false {
		t.Fatalf("contacts step: %v %v", out, err)
	}
	cfg := readConfig(t, s)
	if len(cfg.OAuth.Accounts) != 2 || !cfg.Calendar.CalDAV[0].UsesOAuth() || cfg.Contacts.CardDAV[0].URL != config.GoogleCardDAV("anna@example.org") {
		t.Errorf("config: oauth %+v caldav %+v carddav %+v", cfg.OAuth.Accounts, cfg.Calendar.CalDAV, cfg.Contacts.CardDAV)
	}
}

// Every preset offering OAuth makes a valid configuration signed in that
// way; Microsoft 365's is the one its users must take.
func TestOAuthPresetsAreValidConfig(t *testing.T) {
	n := 0
	for _, p := range MailPresets() {
		if p.OAuth == "" {
			continue
		}
		n++
		cfg := config.Default()
		cfg.OAuth.Accounts = []config.OAuthAccount{{Name: "acct", Provider: p.OAuth, ClientID: "id"}}
		cfg.Mail.Accounts = []config.MailAccount{{Name: p.ID, Address: "a@b.c", Auth: config.AuthOAuth2, OAuthAccount: "acct",
			IMAPHost: p.IMAPHost, IMAPPort: p.IMAPPort, IMAPSecurity: p.IMAPSecurity, SMTPHost: p.SMTPHost, SMTPPort: p.SMTPPort, SMTPSecurity: p.SMTPSecurity}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("preset %s: %v", p.ID, err)
		}
		if p.OAuthHelp == "" || len(p.OAuthScopes) == 0 {
			t.Errorf("preset %s lacks OAuth help or scopes", p.ID)
		}
	}
	if n != 2 {
		t.Errorf("%d OAuth presets, want gmail and microsoft365", n)
	}
	for _, p := range DAVPresets() {
		if p.OAuth == "" {
			continue
		}
		cfg := config.Default()
		cfg.OAuth.Accounts = []config.OAuthAccount{{Name: "acct", Provider: p.OAuth, ClientID: "id"}}
		cfg.Calendar.CalDAV = []config.DAVAccount{{Name: "c", URL: p.CalDAVURL, Auth: config.AuthOAuth2, OAuthAccount: "acct"}}
		cfg.Contacts.CardDAV = []config.DAVAccount{{Name: "k", URL: strings.Replace(p.CardDAVURL, "EMAIL", "a@b.c", 1), Auth: config.AuthOAuth2, OAuthAccount: "acct"}}
		if err := cfg.Validate(); err != nil {
			t.Errorf("DAV preset %s: %v", p.ID, err)
		}
	}
}
