package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAccountAuthValidation(t *testing.T) {
	t.Parallel()
	oauth := OAuthConfig{Accounts: []OAuthAccount{
		{Name: "gmail", Provider: "google", ClientID: "123.apps.googleusercontent.com"},
		{Name: "work", Provider: "microsoft", ClientID: "0000-1111"},
	}}
	gmail := MailAccount{Name: "gmail", Address: "me@gmail.com", Auth: AuthOAuth2, OAuthAccount: "gmail",
		IMAPHost: "imap.gmail.com", IMAPPort: 993, IMAPSecurity: "tls", SMTPHost: "smtp.gmail.com", SMTPPort: 465, SMTPSecurity: "tls"}
	cal := DAVAccount{Name: "gcal", URL: GoogleCalDAVURL, Auth: AuthOAuth2, OAuthAccount: "gmail"}
	card := DAVAccount{Name: "gcontacts", URL: GoogleCardDAV("me@gmail.com"), Auth: AuthOAuth2, OAuthAccount: "gmail"}
	cases := []struct {
		name     string
		edit     func(c *Config)
		wantKey  string
		wantText string
	}{
		{"valid", func(c *Config) {}, "", ""},
		{"password account unchanged", func(c *Config) {
			c.Mail.Accounts[0] = MailAccount{Name: "p", Username: "u", PasswordEnv: "PW", IMAPHost: "imap.example.org", IMAPPort: 993, IMAPSecurity: "tls"}
		}, "", ""},
		{"explicit password auth", func(c *Config) {
			c.Mail.Accounts[0] = MailAccount{Name: "p", Auth: AuthPassword, Username: "u", PasswordFile: "/pw", IMAPHost: "imap.example.org", IMAPPort: 993, IMAPSecurity: "tls"}
		}, "", ""},
		{"microsoft mail", func(c *Config) { c.Mail.Accounts[0].OAuthAccount = "work" }, "", ""},
		{"unknown auth", func(c *Config) { c.Mail.Accounts[0].Auth = "kerberos" }, "mail.accounts[0].auth", "password or oauth2"},
		{"unknown oauth account", func(c *Config) { c.Mail.Accounts[0].OAuthAccount = "yahoo" }, "mail.accounts[0].oauth_account", "gmail, work"},
		{"no oauth account", func(c *Config) { c.Mail.Accounts[0].OAuthAccount = "" }, "mail.accounts[0].oauth_account", "[[oauth.accounts]]"},
		{"no oauth section", func(c *Config) { c.OAuth.Accounts = nil }, "mail.accounts[0].oauth_account", "none is configured"},
		{"oauth account with password", func(c *Config) {
			c.Mail.Accounts[0].Auth, c.Mail.Accounts[0].PasswordEnv = "", "PW"
		}, "mail.accounts[0].oauth_account", "unless auth"},
		{"password with oauth", func(c *Config) { c.Mail.Accounts[0].PasswordFile = "/pw" }, "mail.accounts[0].password_env", "replaces the password"},
		{"no user", func(c *Config) { c.Mail.Accounts[0].Address = "" }, "mail.accounts[0].username", "names the user"},
		{"caldav microsoft", func(c *Config) { c.Calendar.CalDAV[0].OAuthAccount = "work" }, "calendar.caldav[0].oauth_account", "Microsoft Graph, not CalDAV"},
		{"carddav microsoft", func(c *Config) { c.Contacts.CardDAV[0].OAuthAccount = "work" }, "contacts.carddav[0].oauth_account", "not CardDAV"},
		{"carddav placeholder", func(c *Config) { c.Contacts.CardDAV[0].URL = GoogleCardDAVURL }, "contacts.carddav[0].url", "in place of EMAIL"},
		{"caldav bad auth", func(c *Config) { c.Calendar.CalDAV[0].Auth = "bearer" }, "calendar.caldav[0].auth", "password or oauth2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			c.OAuth = OAuthConfig{Accounts: append([]OAuthAccount(nil), oauth.Accounts...)}
			c.Mail.Accounts = []MailAccount{gmail}
			c.Calendar.CalDAV = []DAVAccount{cal}
			c.Contacts.CardDAV = []DAVAccount{card}
			tc.edit(&c)
			err := c.Validate()
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *Error
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					if errors.As(e, &ce) && ce.Key == tc.wantKey {
						break
					}
					ce = nil
				}
			}
			if ce == nil {
				t.Fatalf("error %v, want key %s", err, tc.wantKey)
			}
			if !strings.Contains(ce.Error(), tc.wantText) {
				t.Errorf("message %q lacks %q", ce.Error(), tc.wantText)
			}
		})
	}
}

// The keys parse from TOML; an OAuth mail account needs no password.
func TestAccountAuthTOML(t *testing.T) {
	t.Parallel()
	src := `
[[oauth.accounts]]
name = "gmail"
provider = "google"
client_id = "123.apps.googleusercontent.com"

[[mail.accounts]]
name = "gmail"
address = "me@gmail.com"
auth = "oauth2"
oauth_account = "gmail"
imap_host = "imap.gmail.com"
imap_port = 993
imap_security = "tls"

[[calendar.caldav]]
name = "google"
url = "https://apidata.googleusercontent.com/caldav/v2/"
auth = "oauth2"
oauth_account = "gmail"
`
	c, err := Parse([]byte(src), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if !c.Mail.Accounts[0].UsesOAuth() || c.Mail.Accounts[0].OAuthAccount != "gmail" || !c.Calendar.CalDAV[0].UsesOAuth() {
		t.Errorf("parsed %+v %+v", c.Mail.Accounts[0], c.Calendar.CalDAV[0])
	}
}
