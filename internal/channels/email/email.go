// Package email is the e-mail channel: mail from the owner to a dedicated
// address (hestia@example.org, or a tag of the owner's own address such as
// you+hestia@example.org) is a chat turn, and Hestia answers in the same
// thread. It adapts one IMAP/SMTP account to channels.Platform; the relay
// owns identity, deduplication, the outbox and approvals.
//
// Receiving (receive.go): one IMAP connection (RFC 9051/3501, go-imap v2)
// on the configured mailbox, IDLE when the server offers it (RFC 2177)
// with a periodic search as the safety net, polling otherwise; every IMAP
// exchange has a deadline, so a silent server ends Receive (the relay
// reconnects) instead of hanging it. A message whose fetching ends the
// session (a server that cannot read it) is retried alone and, after
// three such failures, skipped with a warning and left unseen, so it
// does not stop the channel (receive.go, unreadable). Of the unseen messages, the
// recipient headers are read first; those addressed (To, Cc,
// Delivered-To, X-Original-To) to the dedicated address or a plus-tag of
// it are read whole, everything else in the mailbox is left untouched.
// Each becomes an Update: ID the Message-ID, Conv the sender and the
// thread's root Message-ID (first of References, else In-Reply-To, else
// its own; the sender is part of it so a reply needs no other state and
// nobody joins another person's thread by citing its root), Sender the
// From address lower-cased, Text
// the new text of the message (text/plain, else text from the HTML part;
// in replies the quoted history, attribution lines and signature are
// removed, see quote.go), ReplyTo what a reply needs (Message-ID,
// References, Subject). A handled message is marked \Seen (and moved to
// done_mailbox when set), so a restart does not rely on the relay's
// deduplication alone. Hestia's own messages, automatic mail (RFC 3834
// Auto-Submitted, bounces, mailing lists) and messages older than max_age
// are marked handled without reaching the relay. An audio attachment on
// a message without text is offered as a voice note, fetched (on a
// connection of its own) only if the relay wants it, while the handler
// runs: after it, the message may have moved to done_mailbox. Every other
// attachment (attach.go: the parts of its BODYSTRUCTURE that are not its
// text, an image its HTML embeds or a signature) is offered as a file,
// each part fetched and decoded the same way within the relay's limit. A
// new message with an empty body is read by its subject.
//
// Sending (send.go): SMTP submission (RFC 6409) of a text/plain message
// (Markdown is readable as it is) with a Message-ID derived from
// Outgoing.Key, so a resend is recognisably the same message and clients
// that deduplicate by Message-ID show it once; In-Reply-To, References and
// a "Re:" subject keep it in the thread; Auto-Submitted: auto-replied
// keeps vacation responders from answering it. With save_sent the reply
// is also appended to the Sent folder, which Find searches after a crash
// between sending and recording. Edit is unsupported (mail cannot be
// changed once sent), there are no buttons or reactions: approvals are
// answered by replying "CODE approve" / "CODE deny", which the relay
// parses in the new text. Replies go only to the sender, never to others
// on the thread. SMTP 5xx replies to MAIL, RCPT or DATA are permanent;
// 4xx ones are retried (rate limits, 4.7.x or 421/450/451/452, after a
// minute).
//
// Security: the From header is trivially forged. A message counts as
// from its From address only with a proof, and at least one is required:
//
//   - authserv_id: the receiving server's own Authentication-Results
//     header (RFC 8601) shows DKIM (or DMARC, or SPF if enabled) passing
//     for the From domain, and no result of the same server contradicts
//     it (authres.go). Headers with other authserv-ids are the sender's
//     claims and ignored. DKIM proves the domain, not the person: on a
//     domain shared with others, the server must also stop its users from
//     sending as each other.
//   - secret_tag: the message was addressed to local+SECRET@domain, which
//     only the owner knows (Hestia's replies carry it in Reply-To, so
//     answering keeps it); compared in constant time.
//
// verify = "all" requires every configured proof. A message without its
// proof is handed on with Sender "unverified:ADDRESS", which matches no
// owner or contact: the relay refuses and audits it. Send never mails an
// unverified sender (the refusal would be backscatter to whoever was
// impersonated, and a way to make Hestia mail strangers): such a send
// fails as permanent. A replayed message (a copy of a genuine one) has the
// genuine Message-ID and is dropped by the relay's deduplication.
//
// emailtest starts the real Dovecot and OpenSMTPD the tests run against.
package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Server is how to reach an IMAP or SMTP server.
type Server struct {
	Host     string
	Port     int
	Security string // tls, starttls, or none (loopback only)
	// TLSConfig overrides the default (tests trust their own CA).
	TLSConfig *tls.Config
}

func (s Server) addr() string { return net.JoinHostPort(s.Host, fmt.Sprint(s.Port)) }

func (s Server) tlsConfig() *tls.Config {
	if s.TLSConfig != nil {
		return s.TLSConfig
	}
	return &tls.Config{ServerName: s.Host, MinVersion: tls.VersionTLS12}
}

// Config is the channel's configuration, secrets already read.
type Config struct {
	// Name is the channel's configured name ("email").
	Name string
	// Address is the dedicated address; FromName the display name of
	// replies.
	Address  string
	FromName string
	// Username (default Address) and Password log in to IMAP and SMTP.
	Username string
	Password string
	IMAP     Server
	SMTP     Server
	// Mailbox is watched (default INBOX); DoneMailbox, when set, receives
	// handled messages.
	Mailbox     string
	DoneMailbox string
	// SaveSent appends replies to SentMailbox ("" finds the \Sent folder),
	// which Find searches.
	SaveSent    bool
	SentMailbox string
	// PollInterval spaces mailbox checks (default 1m; with IDLE only the
	// safety net). MaxAge drops older messages (0: none).
	PollInterval time.Duration
	MaxAge       time.Duration
	// NoIdle polls even when the server offers IDLE (for servers whose
	// IDLE misbehaves).
	NoIdle bool
	// AuthservID trusts that server's Authentication-Results for the
	// methods in AuthMethods (default dkim, dmarc).
	AuthservID  string
	AuthMethods []string
	// SecretTag accepts mail to local+SecretTag@domain as proven.
	SecretTag string
	// RequireAll requires every configured proof instead of one.
	RequireAll bool
	// MessageIDDomain is the right-hand side of Hestia's Message-IDs
	// (default: Address's domain).
	MessageIDDomain string
	// Timeout bounds connecting and each SMTP exchange (default 1m).
	Timeout time.Duration
	// Clock is time.Now unless a test sets it.
	Clock func() time.Time
}

// MaxText is the longest reply, in runes, one message carries; the relay
// splits longer ones.
const MaxText = 100_000

// Adapter is the e-mail channel. It holds no Hestia state.
type Adapter struct {
	cfg Config
	log *slog.Logger
	// local and domain split the dedicated address (lower case).
	local, domain string
	// unreadable remembers the messages whose fetching ended the session,
	// across the relay's restarts of Receive (receive.go).
	unreadable unreadable
}

var _ channels.Platform = (*Adapter)(nil)
var _ channels.Finder = (*Adapter)(nil)

// New checks cfg and returns the adapter.
func New(cfg Config, log *slog.Logger) (*Adapter, error) {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Name == "" {
		cfg.Name = "email"
	}
	a, err := mail.ParseAddress(cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("email channel address %q: %w", cfg.Address, err)
	}
	local, domain, ok := splitAddr(a.Address)
	if !ok {
		return nil, fmt.Errorf("email channel address %q has no local part or domain", cfg.Address)
	}
	cfg.Address = local + "@" + domain
	if cfg.AuthservID == "" && cfg.SecretTag == "" {
		return nil, errors.New("email channel: neither authserv_id nor secret_tag is set, so nothing proves who sent a message")
	}
	if cfg.SecretTag != "" && (len(cfg.SecretTag) < 16 || strings.ContainsAny(cfg.SecretTag, "+@ \t")) {
		return nil, errors.New("email channel: the secret tag must be 16 or more letters and digits")
	}
	if cfg.AuthservID != "" && len(cfg.AuthMethods) == 0 {
		cfg.AuthMethods = []string{"dkim", "dmarc"}
	}
	for _, s := range []struct {
		name string
		srv  Server
	}{{"IMAP", cfg.IMAP}, {"SMTP", cfg.SMTP}} {
		if s.srv.Host == "" || s.srv.Port <= 0 {
			return nil, fmt.Errorf("email channel: no %s host and port", s.name)
		}
		switch s.srv.Security {
		case "tls", "starttls":
		case "none":
			if !isLoopback(s.srv.Host) {
				return nil, fmt.Errorf("email channel: %s without TLS is allowed on loopback only, not %s", s.name, s.srv.Host)
			}
		default:
			return nil, fmt.Errorf("email channel: %s security %q is not tls, starttls or none", s.name, s.srv.Security)
		}
	}
	if cfg.Username == "" {
		cfg.Username = cfg.Address
	}
	if cfg.Mailbox == "" {
		cfg.Mailbox = "INBOX"
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Minute
	}
	if cfg.MessageIDDomain == "" {
		cfg.MessageIDDomain = domain
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Minute
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Adapter{cfg: cfg, log: log.With("channel", cfg.Name), local: local, domain: domain}, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Name implements channels.Platform.
func (a *Adapter) Name() string { return a.cfg.Name }

// Kind implements channels.Platform.
func (a *Adapter) Kind() string { return "email" }

// Limits implements channels.Platform: long messages, no edits, no
// buttons or reactions (approvals by code reply), no idempotent sends
// (Find covers crash recovery where replies are filed in Sent).
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: MaxText}
}

// Edit implements channels.Platform: sent mail cannot be changed.
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	return channels.ErrUnsupported
}

// replyAddress is where the owner's replies should go: the secret-tagged
// address when there is one (it is the proof), else the dedicated one.
func (a *Adapter) replyAddress() string {
	if a.cfg.SecretTag != "" {
		return a.local + "+" + a.cfg.SecretTag + "@" + a.domain
	}
	return a.cfg.Address
}

// ours reports whether addr is the dedicated address or a plus-tag of it.
func (a *Adapter) ours(addr string) bool {
	l, d, ok := splitAddr(addr)
	return ok && d == a.domain && (l == a.local || strings.HasPrefix(l, a.local+"+"))
}

// addrLike finds address-shaped words in a header value, for a lenient
// first look at recipients (display names and groups need no parsing).
var addrLike = lazyre.New(`[^\s<>,;:"()]+@[^\s<>,;:"()]+`)

// anyOurs reports whether any address in the header values is ours.
func (a *Adapter) anyOurs(vals []string) bool {
	for _, v := range vals {
		for _, addr := range addrLike.FindAllString(v, 50) {
			if a.ours(addr) {
				return true
			}
		}
	}
	return false
}
