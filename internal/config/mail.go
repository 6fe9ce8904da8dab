package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// MailConfig configures the mail connector: local sources kept mirrored,
// IMAP/SMTP accounts, embedding of messages and send confirmation.
type MailConfig struct {
	// Sources are Maildir folders, mbox files or Apple Mail trees that are
	// reconciled periodically (and watched when Watch is set).
	Sources           []string `toml:"sources"`
	Watch             bool     `toml:"watch"`
	ReconcileInterval Duration `toml:"reconcile_interval"`
	EmbedMaxChars     int      `toml:"embed_max_chars"`
	EmbedBatch        int      `toml:"embed_batch"`
	// ConfirmChecks is how many confirmation passes a sent message gets
	// before it becomes needs_review; ConfirmInterval spaces them.
	ConfirmChecks   int           `toml:"confirm_checks"`
	ConfirmInterval Duration      `toml:"confirm_interval"`
	Accounts        []MailAccount `toml:"accounts"`
}

// MailAccount is one IMAP/SMTP account. The password is never written
// here: PasswordEnv names an environment variable, or PasswordFile a file
// readable only by the owner.
type MailAccount struct {
	Name         string   `toml:"name"`
	Address      string   `toml:"address"` // the From address for sends
	Username     string   `toml:"username"`
	PasswordEnv  string   `toml:"password_env"`
	PasswordFile string   `toml:"password_file"`
	IMAPHost     string   `toml:"imap_host"`
	IMAPPort     int      `toml:"imap_port"`
	IMAPSecurity string   `toml:"imap_security"` // tls, starttls or none (loopback only)
	SMTPHost     string   `toml:"smtp_host"`
	SMTPPort     int      `toml:"smtp_port"`
	SMTPSecurity string   `toml:"smtp_security"`
	SyncInterval Duration `toml:"sync_interval"`
	// SaveSent appends a copy of each sent message to the Sent mailbox
	// over IMAP (off for providers such as Gmail that file it themselves).
	SaveSent bool `toml:"save_sent"`
	// Auth is password (the default) or oauth2, with OAuthAccount naming
	// the [[oauth.accounts]] entry whose token logs in (accountauth.go).
	Auth         string `toml:"auth"`
	OAuthAccount string `toml:"oauth_account"`
}

func defaultMail() MailConfig {
	return MailConfig{
		ReconcileInterval: Duration(15 * time.Minute),
		EmbedMaxChars:     2000,
		EmbedBatch:        32,
		ConfirmChecks:     12,
		ConfirmInterval:   Duration(2 * time.Minute),
	}
}

func (m MailConfig) validate() []error {
	var errs []error
	for i, s := range m.Sources {
		if !filepath.IsAbs(s) {
			errs = append(errs, &Error{Key: fmt.Sprintf("mail.sources[%d]", i), Value: s, Allowed: "an absolute path"})
		}
	}
	if m.ReconcileInterval.D() < time.Minute || m.ReconcileInterval.D() > 24*time.Hour {
		errs = append(errs, &Error{Key: "mail.reconcile_interval", Value: m.ReconcileInterval.D().String(), Allowed: "a duration between 1m and 24h"})
	}
	if m.EmbedMaxChars < 100 || m.EmbedMaxChars > 20000 {
		errs = append(errs, &Error{Key: "mail.embed_max_chars", Value: strconv.Itoa(m.EmbedMaxChars), Allowed: "an integer from 100 to 20000"})
	}
	if m.EmbedBatch < 1 || m.EmbedBatch > 256 {
		errs = append(errs, &Error{Key: "mail.embed_batch", Value: strconv.Itoa(m.EmbedBatch), Allowed: "an integer from 1 to 256"})
	}
	if m.ConfirmChecks < 1 || m.ConfirmChecks > 100 {
		errs = append(errs, &Error{Key: "mail.confirm_checks", Value: strconv.Itoa(m.ConfirmChecks), Allowed: "an integer from 1 to 100"})
	}
	if m.ConfirmInterval.D() < time.Second || m.ConfirmInterval.D() > 24*time.Hour {
		errs = append(errs, &Error{Key: "mail.confirm_interval", Value: m.ConfirmInterval.D().String(), Allowed: "a duration between 1s and 24h"})
	}
	names := map[string]bool{}
	for i, a := range m.Accounts {
		key := fmt.Sprintf("mail.accounts[%d]", i)
		if a.Name == "" || names[a.Name] {
			errs = append(errs, &Error{Key: key + ".name", Value: a.Name, Allowed: "a unique, non-empty account name"})
		}
		names[a.Name] = true
		for _, hp := range []struct {
			proto, host, sec string
			port             int
		}{{"imap", a.IMAPHost, a.IMAPSecurity, a.IMAPPort}, {"smtp", a.SMTPHost, a.SMTPSecurity, a.SMTPPort}} {
			if hp.host == "" {
				continue
			}
			if hp.port < 1 || hp.port > 65535 {
				errs = append(errs, &Error{Key: key + "." + hp.proto + "_port", Value: strconv.Itoa(hp.port), Allowed: "a port between 1 and 65535"})
			}
			switch hp.sec {
			case "tls", "starttls":
			case "none":
				// Plain text credentials may only travel over loopback.
				if !IsLoopbackHost(hp.host) {
					errs = append(errs, &Error{Key: key + "." + hp.proto + "_security", Value: hp.sec, Allowed: "tls or starttls for a non-loopback host"})
				}
			default:
				errs = append(errs, &Error{Key: key + "." + hp.proto + "_security", Value: hp.sec, Allowed: "tls, starttls or none"})
			}
		}
		if (a.IMAPHost != "" || a.SMTPHost != "") && !a.UsesOAuth() && a.PasswordEnv == "" && a.PasswordFile == "" {
			errs = append(errs, &Error{Key: key + ".password_env", Value: "", Allowed: "the name of an environment variable holding the password (or set password_file)"})
		}
		if a.SyncInterval != 0 && (a.SyncInterval.D() < 30*time.Second || a.SyncInterval.D() > 24*time.Hour) {
			errs = append(errs, &Error{Key: key + ".sync_interval", Value: a.SyncInterval.D().String(), Allowed: "a duration between 30s and 24h"})
		}
	}
	return errs
}
