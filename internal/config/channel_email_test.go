package config

import (
	"strings"
	"testing"
	"time"
)

func TestEmailDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := cfg.Channels.Email
	if e.Enabled() || e.IMAPPort != 993 || e.IMAPSecurity != "tls" || e.SMTPPort != 587 || e.SMTPSecurity != "starttls" ||
		e.Mailbox != "INBOX" || e.PollInterval.D() != time.Minute || e.MaxAge.D() != 24*time.Hour || e.Verify != "any" ||
		strings.Join(e.AuthMethods, ",") != "dkim,dmarc" || e.FromName != "Hestia" {
		t.Errorf("defaults: %+v", e)
	}
}

const emailGood = `[channels.email]
address = "hestia@example.org"
owners = ["me@example.org"]
imap_host = "mail.example.org"
smtp_host = "mail.example.org"
password = "hunter2"
authserv_id = "mx.example.org"
`

func TestEmailValid(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{
		"minimal":    emailGood,
		"tag only":   strings.Replace(emailGood, `authserv_id = "mx.example.org"`, `secret_tag = "k3j4h5g6f7d8s9a0"`, 1),
		"both, all":  emailGood + "secret_tag_file = \"/run/secrets/tag\"\nverify = \"all\"\n",
		"plus tag":   strings.Replace(emailGood, "hestia@example.org", "me+hestia@example.org", 1),
		"loopback":   strings.Replace(emailGood, `imap_host = "mail.example.org"`, `imap_host = "127.0.0.1"`, 1) + "imap_security = \"none\"\n",
		"files":      strings.Replace(emailGood, `password = "hunter2"`, `password_file = "/run/secrets/mail"`, 1),
		"contacts":   emailGood + "contacts = [\"anna@example.net\", \"bob@example.com:chat+approve\"]\nauth_methods = [\"dmarc\", \"spf\"]\n",
		"moving":     emailGood + "done_mailbox = \"Hestia/Done\"\nsave_sent = true\nsent_mailbox = \"Sent\"\nmax_age = \"0s\"\n",
		"disabled":   "[channels.email]\nowners = []\n",
		"no max age": emailGood + "max_age = \"0s\"\npoll_interval = \"30s\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, file, nil)
			if err != nil {
				t.Fatal(err)
			}
			if name != "disabled" && !cfg.Channels.Email.Enabled() {
				t.Error("not enabled")
			}
		})
	}
}

func TestEmailSecretsMasked(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, emailGood+"secret_tag = \"k3j4h5g6f7d8s9a0\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Masked().Channels.Email
	if m.Password != "********" || m.SecretTag != "********" {
		t.Errorf("secrets not masked: %+v", m)
	}
}

func TestEmailInvalid(t *testing.T) {
	t.Parallel()
	noProof := strings.Replace(emailGood, `authserv_id = "mx.example.org"`, "", 1)
	cases := []struct {
		name, file string
		want       []string
	}{
		{"no owner", strings.Replace(emailGood, `owners = ["me@example.org"]`, "", 1), []string{"channels.email.owners", "serves nobody"}},
		{"owner not an address", strings.Replace(emailGood, "me@example.org", "Me <me@example.org>", 1), []string{"channels.email.owners", "e-mail addresses"}},
		{"contact not an address", emailGood + "contacts = [\"anna:chat\"]\n", []string{"channels.email.contacts", "e-mail address"}},
		{"bad address", strings.Replace(emailGood, `"hestia@example.org"`, `"hestia"`, 1), []string{"channels.email.address", "dedicated address"}},
		{"no proof", noProof, []string{"channels.email.authserv_id", "anyone can write From: you"}},
		{"short tag", noProof + "secret_tag = \"abc\"\n", []string{"channels.email.secret_tag", "16 to 64"}},
		{"tag with plus", noProof + "secret_tag = \"abcdefghijklmnop+\"\n", []string{"channels.email.secret_tag"}},
		{"tag in address", strings.Replace(noProof, "hestia@", "hestia+k3j4h5g6f7d8s9a0@", 1) + "secret_tag = \"k3j4h5g6f7d8s9a0\"\n", []string{"channels.email.address", "without the secret tag"}},
		{"bad authserv", strings.Replace(emailGood, "mx.example.org", "mx example; dkim=pass", 1), []string{"channels.email.authserv_id"}},
		{"bad method", emailGood + "auth_methods = [\"arc\"]\n", []string{"channels.email.auth_methods", "dkim, dmarc or spf"}},
		{"no methods", emailGood + "auth_methods = []\n", []string{"channels.email.auth_methods"}},
		{"bad verify", emailGood + "verify = \"some\"\n", []string{"channels.email.verify", "any"}},
		{"no password", strings.Replace(emailGood, `password = "hunter2"`, "", 1), []string{"channels.email.password"}},
		{"relative password file", strings.Replace(emailGood, `password = "hunter2"`, `password_file = "pw.txt"`, 1), []string{"channels.email.password_file", "absolute path"}},
		{"relative tag file", emailGood + "secret_tag_file = \"tag\"\n", []string{"channels.email.secret_tag_file", "absolute path"}},
		{"no imap host", strings.Replace(emailGood, `imap_host = "mail.example.org"`, "", 1), []string{"channels.email.imap_host"}},
		{"bad smtp port", emailGood + "smtp_port = 70000\n", []string{"channels.email.smtp_port"}},
		{"plain text remote", emailGood + "smtp_security = \"none\"\n", []string{"channels.email.smtp_security", "non-loopback"}},
		{"bad security", emailGood + "imap_security = \"ssl\"\n", []string{"channels.email.imap_security", "tls, starttls"}},
		{"fast poll", emailGood + "poll_interval = \"1s\"\n", []string{"channels.email.poll_interval"}},
		{"tiny max age", emailGood + "max_age = \"5s\"\n", []string{"channels.email.max_age"}},
		{"owner is the address", strings.Replace(emailGood, `owners = ["me@example.org"]`, `owners = ["Hestia@example.org"]`, 1), []string{"channels.email.owners", "not the dedicated address"}},
		{"owner is a tag of the address", strings.Replace(emailGood, `owners = ["me@example.org"]`, `owners = ["hestia+me@example.org"]`, 1), []string{"channels.email.owners", "not the dedicated address"}},
		{"empty mailbox", emailGood + "mailbox = \"\"\n", []string{"channels.email.mailbox"}},
		{"done is mailbox", emailGood + "done_mailbox = \"inbox\"\n", []string{"channels.email.done_mailbox"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, c.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "k3j4h5g6f7d8s9a0") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}
