package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMailValidation(t *testing.T) {
	t.Parallel()
	ok := MailAccount{Name: "work", IMAPHost: "imap.example.org", IMAPPort: 993, IMAPSecurity: "tls", PasswordEnv: "WORK_PW"}
	cases := []struct {
		name    string
		mutate  func(*MailConfig)
		wantKey string
	}{
		{"defaults", func(*MailConfig) {}, ""},
		{"good account", func(m *MailConfig) { m.Accounts = []MailAccount{ok} }, ""},
		{"relative source", func(m *MailConfig) { m.Sources = []string{"Mail"} }, "mail.sources[0]"},
		{"plaintext remote", func(m *MailConfig) { a := ok; a.IMAPSecurity = "none"; m.Accounts = []MailAccount{a} }, "mail.accounts[0].imap_security"},
		{"plaintext loopback", func(m *MailConfig) {
			a := ok
			a.IMAPHost, a.IMAPSecurity = "127.0.0.1", "none"
			m.Accounts = []MailAccount{a}
		}, ""},
		{"no password source", func(m *MailConfig) { a := ok; a.PasswordEnv = ""; m.Accounts = []MailAccount{a} }, "mail.accounts[0].password_env"},
		{"duplicate names", func(m *MailConfig) { m.Accounts = []MailAccount{ok, ok} }, "mail.accounts[1].name"},
		{"bad port", func(m *MailConfig) { a := ok; a.IMAPPort = 0; m.Accounts = []MailAccount{a} }, "mail.accounts[0].imap_port"},
		{"confirm checks", func(m *MailConfig) { m.ConfirmChecks = 0 }, "mail.confirm_checks"},
		{"reconcile too often", func(m *MailConfig) { m.ReconcileInterval = Duration(time.Second) }, "mail.reconcile_interval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := defaultMail()
			c.mutate(&m)
			errs := m.validate()
			if c.wantKey == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors %v", errs)
				}
				return
			}
			var ce *Error
			if len(errs) == 0 || !errors.As(errs[0], &ce) || ce.Key != c.wantKey {
				t.Fatalf("errors %v, want key %s", errs, c.wantKey)
			}
			if !strings.Contains(ce.Error(), c.wantKey) {
				t.Errorf("message %q does not name the key", ce.Error())
			}
		})
	}
}
