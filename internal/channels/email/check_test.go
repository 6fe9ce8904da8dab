package email

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/email/emailtest"
)

// The connection test logs in to the real Dovecot and examines the
// mailbox (an unseen message stays unseen), then logs in to SMTP and
// quits before sending; each failure names the settings to fix and never
// the password.
func TestCheck(t *testing.T) {
	t.Parallel()
	d := emailtest.StartDovecot(t)
	d.Deliver(t, "", "From: owner@example.org\nTo: hestia@example.org\nSubject: hi\nMessage-ID: <c1@example.org>\n\nunread\n")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	adapter := func(t *testing.T, smtpPort int, mod func(*Config)) *Adapter {
		t.Helper()
		cfg := Config{Address: hestiaAddr, Username: d.User, Password: d.Password, SecretTag: testTag,
			IMAP: Server{Host: "127.0.0.1", Port: d.Port, Security: "none"}, SMTP: Server{Host: "127.0.0.1", Port: smtpPort, Security: "none"},
			Timeout: 5 * time.Second}
		if mod != nil {
			mod(&cfg)
		}
		a, err := New(cfg, log)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	smtpOK := emailtest.StartSMTP(t, emailtest.SMTPOptions{Username: d.User, Password: d.Password})
	who, err := adapter(t, smtpOK.Port, nil).Check(context.Background())
	if err != nil || who != hestiaAddr+" (IMAP: 1 message in INBOX; SMTP: login accepted)" {
		t.Fatalf("Check = %q, %v", who, err)
	}
	if smtpOK.Logins() != 1 || len(smtpOK.Received()) != 0 {
		t.Errorf("SMTP logins %d, messages %d", smtpOK.Logins(), len(smtpOK.Received()))
	}
	if m := d.Messages(t, ""); len(m) != 1 || strings.Contains(m[0].Flags, "S") {
		t.Errorf("the check changed the mailbox: %+v", m)
	}

	open := emailtest.StartSMTP(t, emailtest.SMTPOptions{})
	if who, err := adapter(t, open.Port, nil).Check(context.Background()); err != nil || !strings.Contains(who, "offers no login") {
		t.Errorf("SMTP without AUTH: %q, %v", who, err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	const secret = "not-the-password-SECRET"
	refusing := emailtest.StartSMTP(t, emailtest.SMTPOptions{Username: d.User, Password: d.Password})
	refusing.FailNext("AUTH", 535, [3]int{5, 7, 8}, "Authentication credentials invalid")
	for _, c := range []struct {
		name string
		port int
		mod  func(*Config)
		want []string
	}{
		{"IMAP password", smtpOK.Port, func(c *Config) { c.Password = secret }, []string{"IMAP login as alice", "channels.email.username and password"}},
		{"mailbox", smtpOK.Port, func(c *Config) { c.Mailbox = "Nope" }, []string{"selecting Nope", "channels.email.mailbox"}},
		{"IMAP port", smtpOK.Port, func(c *Config) { c.IMAP.Port = closed }, []string{"connecting to IMAP", "channels.email.imap_host"}},
		{"SMTP port", closed, nil, []string{"connecting to SMTP", "channels.email.smtp_host"}},
		{"SMTP password", refusing.Port, nil, []string{"SMTP login as alice", "535", "channels.email.username and password"}},
		{"SMTP speaks TLS", smtpOK.Port, func(c *Config) { c.SMTP.Security = "tls" }, []string{"SMTP greeting", "smtp_security"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := adapter(t, c.port, c.mod).Check(context.Background())
			if err == nil {
				t.Fatal("Check passed")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q in it", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), d.Password) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
