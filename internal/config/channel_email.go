package config

import (
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// EmailChannel configures the e-mail channel ([channels.email]); see
// internal/channels/email. Mail from the owner's addresses to a dedicated
// address (hestia@example.org, or a tag of the owner's own address such as
// you+hestia@example.org) is a chat turn; Hestia reads it over IMAP and
// answers in the same thread over SMTP.
//
// The From header proves nothing (anyone can write From: you), so a
// message counts as the owner's only with a proof, and at least one proof
// must be configured: AuthservID (the receiving mail server's DKIM/DMARC
// verdict in its Authentication-Results header) and/or SecretTag (a secret
// plus-tag in the address the owner writes to). Messages without the
// proof are handed on as from "unverified:ADDRESS", which no owner or
// contact matches: refused and audited.
type EmailChannel struct {
	// Owners are the owner's e-mail addresses: chat, approve, read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ADDRESS" (chat and read) or
	// "ADDRESS:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// Address is the dedicated address the owner writes to and Hestia
	// answers from. Setting it enables the channel.
	Address string `toml:"address"`
	// FromName is the display name on Hestia's replies.
	FromName string `toml:"from_name"`
	// Username logs in to IMAP and SMTP (default: Address); Password or
	// PasswordFile (owner-only) holds its password.
	Username     string `toml:"username"`
	Password     string `toml:"password" secret:"true"`
	PasswordFile string `toml:"password_file"`
	// IMAPHost/Port/Security is where mail is read (security tls,
	// starttls, or none on loopback only).
	IMAPHost     string `toml:"imap_host"`
	IMAPPort     int    `toml:"imap_port"`
	IMAPSecurity string `toml:"imap_security"`
	// SMTPHost/Port/Security is where replies are submitted.
	SMTPHost     string `toml:"smtp_host"`
	SMTPPort     int    `toml:"smtp_port"`
	SMTPSecurity string `toml:"smtp_security"`
	// Mailbox is the folder watched for messages to Address (a Sieve rule
	// can file them into their own folder when Address shares the owner's
	// INBOX).
	Mailbox string `toml:"mailbox"`
	// DoneMailbox, when set, receives each handled message; otherwise it
	// stays in Mailbox, marked \Seen.
	DoneMailbox string `toml:"done_mailbox"`
	// SaveSent appends each reply to SentMailbox over IMAP (off for
	// providers such as Gmail that file submitted mail themselves).
	// SentMailbox defaults to the account's \Sent special-use folder; it
	// is also searched after a crash so a reply already sent is not sent
	// again.
	SaveSent    bool   `toml:"save_sent"`
	SentMailbox string `toml:"sent_mailbox"`
	// PollInterval is how often the mailbox is checked; with IMAP IDLE,
	// new mail is read at once and this is only the safety net.
	PollInterval Duration `toml:"poll_interval"`
	// MaxAge skips (and marks \Seen) messages that arrived longer ago,
	// so a backlog found at start is not executed as fresh requests; 0
	// handles messages of any age.
	MaxAge Duration `toml:"max_age"`
	// AuthservID is the authserv-id the receiving mail server writes at
	// the start of its Authentication-Results headers (RFC 8601), e.g.
	// "mx.example.org"; only those headers are believed. The server must
	// remove such headers arriving from outside (RFC 8601 §5; rspamd,
	// OpenDMARC and the big providers do).
	AuthservID string `toml:"authserv_id"`
	// AuthMethods are the results that prove the From domain: dkim (a
	// passing signature of the From domain), dmarc (a DMARC pass) and spf
	// (an SPF pass for the From domain: weaker, a shared provider's
	// servers pass for every customer's domain).
	AuthMethods []string `toml:"auth_methods"`
	// SecretTag or SecretTagFile is a secret plus-tag: the owner writes to
	// local+SECRET@domain (Hestia's replies carry it in Reply-To).
	SecretTag     string `toml:"secret_tag" secret:"true"`
	SecretTagFile string `toml:"secret_tag_file"`
	// Verify says which configured proofs a message needs: any (one of
	// them) or all.
	Verify string `toml:"verify"`
}

// Enabled reports whether the channel is configured.
func (c EmailChannel) Enabled() bool { return strings.TrimSpace(c.Address) != "" }

func defaultEmail() EmailChannel {
	return EmailChannel{
		FromName:     "Hestia",
		IMAPPort:     993,
		IMAPSecurity: "tls",
		SMTPPort:     587,
		SMTPSecurity: "starttls",
		Mailbox:      "INBOX",
		PollInterval: Duration(time.Minute),
		MaxAge:       Duration(24 * time.Hour),
		AuthMethods:  []string{"dkim", "dmarc"},
		Verify:       "any",
	}
}

var (
	// emailTagRe: letters and digits only, so the tag survives every MTA's
	// address handling; 16+ characters give it enough entropy to guess.
	emailTagRe = lazyre.New(`^[A-Za-z0-9]{16,64}$`)
	// authservRe is RFC 8601's authserv-id as a value token (no spaces,
	// no ";" or quotes).
	authservRe = lazyre.New(`^[A-Za-z0-9._\-]{1,253}$`)
)

// isBareAddress reports whether s is one addr-spec (no display name).
func isBareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s && strings.Count(s, "@") == 1
}

func (c EmailChannel) validate() []error {
	const key = "channels.email"
	var errs []error
	errs = append(errs, validateIdentity(key, c.Enabled(), c.Owners, c.Contacts)...)
	// Senders are matched by their address; a value that is no address
	// would never match, silently.
	for _, o := range c.Owners {
		if o = strings.TrimSpace(o); o != "" && !isBareAddress(o) {
			errs = append(errs, &Error{Key: key + ".owners", Value: o, Allowed: "e-mail addresses such as you@example.org"})
		}
	}
	for _, ct := range c.Contacts {
		if id, _, err := ParseChannelContact(ct); err == nil && !isBareAddress(id) {
			errs = append(errs, &Error{Key: key + ".contacts", Value: ct, Allowed: "an e-mail address, optionally followed by :scope+scope"})
		}
	}
	errs = append(errs, validateSecretFile(key+".password_file", c.PasswordFile)...)
	errs = append(errs, validateSecretFile(key+".secret_tag_file", c.SecretTagFile)...)
	if c.SecretTag != "" && !emailTagRe.MatchString(c.SecretTag) {
		errs = append(errs, &Error{Key: key + ".secret_tag", Value: "(hidden)", Allowed: "16 to 64 letters and digits (e.g. from `openssl rand -hex 12`)"})
	}
	if c.AuthservID != "" && !authservRe.MatchString(c.AuthservID) {
		errs = append(errs, &Error{Key: key + ".authserv_id", Value: c.AuthservID, Allowed: "the host-like name your mail server writes first in its Authentication-Results headers, e.g. mx.example.org"})
	}
	for _, m := range c.AuthMethods {
		if m != "dkim" && m != "dmarc" && m != "spf" {
			errs = append(errs, &Error{Key: key + ".auth_methods", Value: m, Allowed: "dkim, dmarc or spf"})
		}
	}
	if c.Verify != "any" && c.Verify != "all" {
		errs = append(errs, &Error{Key: key + ".verify", Value: c.Verify, Allowed: "any (one configured proof suffices) or all"})
	}
	if d := c.PollInterval.D(); d < 10*time.Second || d > time.Hour {
		errs = append(errs, &Error{Key: key + ".poll_interval", Value: d.String(), Allowed: "a duration between 10s and 1h"})
	}
	if d := c.MaxAge.D(); d != 0 && (d < time.Minute || d > 30*24*time.Hour) {
		errs = append(errs, &Error{Key: key + ".max_age", Value: d.String(), Allowed: "0 (no limit) or a duration between 1m and 720h"})
	}
	if strings.TrimSpace(c.Mailbox) == "" {
		errs = append(errs, &Error{Key: key + ".mailbox", Value: c.Mailbox, Allowed: "the IMAP folder to watch, e.g. INBOX"})
	}
	if c.DoneMailbox != "" && strings.EqualFold(c.DoneMailbox, c.Mailbox) {
		errs = append(errs, &Error{Key: key + ".done_mailbox", Value: c.DoneMailbox, Allowed: "a folder other than mailbox, or empty to leave handled mail in place"})
	}
	if !c.Enabled() {
		return errs
	}
	if !isBareAddress(c.Address) {
		errs = append(errs, &Error{Key: key + ".address", Value: c.Address, Allowed: "the dedicated address Hestia reads and answers from, such as hestia@example.org or you+hestia@example.org"})
	}
	// Mail from the dedicated address (or a tag of it) is Hestia's own and
	// never a turn: an owner writing from it would never be heard.
	base := strings.ToLower(localPart(c.Address))
	domain := strings.ToLower(c.Address[len(localPart(c.Address)):])
	for _, o := range c.Owners {
		l := strings.ToLower(localPart(strings.TrimSpace(o)))
		if strings.HasSuffix(strings.ToLower(strings.TrimSpace(o)), domain) && (l == base || strings.HasPrefix(l, base+"+")) {
			errs = append(errs, &Error{Key: key + ".owners", Value: o, Allowed: "your own address, not the dedicated address (or a tag of it): use e.g. you+hestia@… as address and you@… as owner"})
		}
	}
	for _, s := range []struct {
		proto, host, sec string
		port             int
	}{{"imap", c.IMAPHost, c.IMAPSecurity, c.IMAPPort}, {"smtp", c.SMTPHost, c.SMTPSecurity, c.SMTPPort}} {
		if strings.TrimSpace(s.host) == "" {
			errs = append(errs, &Error{Key: key + "." + s.proto + "_host", Value: s.host, Allowed: "the " + strings.ToUpper(s.proto) + " server's host name"})
		}
		if s.port < 1 || s.port > 65535 {
			errs = append(errs, &Error{Key: key + "." + s.proto + "_port", Value: strconv.Itoa(s.port), Allowed: "a port between 1 and 65535"})
		}
		switch s.sec {
		case "tls", "starttls":
		case "none":
			// The password would travel in clear text.
			if !IsLoopbackHost(s.host) {
				errs = append(errs, &Error{Key: key + "." + s.proto + "_security", Value: s.sec, Allowed: "tls or starttls for a non-loopback host"})
			}
		default:
			errs = append(errs, &Error{Key: key + "." + s.proto + "_security", Value: s.sec, Allowed: "tls, starttls or none (loopback only)"})
		}
	}
	if c.Password == "" && c.PasswordFile == "" {
		errs = append(errs, &Error{Key: key + ".password", Value: "", Allowed: "the mailbox password (or password_file, a file only you can read)"})
	}
	hasTag := c.SecretTag != "" || c.SecretTagFile != ""
	if c.AuthservID == "" && !hasTag {
		errs = append(errs, &Error{Key: key + ".authserv_id", Value: "", Allowed: "your mail server's authserv-id (to trust its DKIM/DMARC verdict), or set secret_tag / secret_tag_file: without a proof anyone can write From: you"})
	}
	if c.AuthservID != "" && len(c.AuthMethods) == 0 {
		errs = append(errs, &Error{Key: key + ".auth_methods", Value: "[]", Allowed: "one or more of dkim, dmarc, spf (which results prove the sender's domain)"})
	}
	// The tag is added to Address by Hestia; written into Address it would
	// go out in the From header of every reply.
	if c.SecretTag != "" && strings.Contains(strings.ToLower(c.Address), strings.ToLower(c.SecretTag)) {
		errs = append(errs, &Error{Key: key + ".address", Value: "(hidden: it holds the secret tag)", Allowed: "the address without the secret tag: Hestia accepts local+TAG@domain itself"})
	}
	return errs
}

func localPart(addr string) string {
	if i := strings.LastIndex(addr, "@"); i >= 0 {
		return addr[:i]
	}
	return addr
}
