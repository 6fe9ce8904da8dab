package email

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/channels"
)

// msgIDPrefix starts the left-hand side of every Message-ID Send makes;
// the receiver drops mail carrying one as Hestia's own.
const msgIDPrefix = "hestia."

// MessageID is the Message-ID (with angle brackets) of the message sent
// for key: the same key always gives the same id, so a resend after a
// crash is recognisably the same message (and clients that deduplicate by
// Message-ID show it once). Keys are hashed because they may hold
// characters a Message-ID cannot.
func (a *Adapter) MessageID(key string) string {
	sum := sha256.Sum256([]byte(a.cfg.Name + "\x00" + key))
	return "<" + msgIDPrefix + hex.EncodeToString(sum[:16]) + "@" + a.cfg.MessageIDDomain + ">"
}

// Send implements channels.Platform: one text/plain message to the
// conversation's sender, in its thread.
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	peer, _, err := parseConv(conv)
	if err != nil {
		return "", channels.Permanent(err)
	}
	if strings.HasPrefix(peer, unverifiedPrefix) {
		return "", channels.Permanent(fmt.Errorf("not mailing %s: the message was not proven to come from that address", strings.TrimPrefix(peer, unverifiedPrefix)))
	}
	if _, _, ok := splitAddr(peer); !ok || strings.ContainsAny(peer, "\r\n<>,;: ") {
		return "", channels.Permanent(fmt.Errorf("email conversation peer %q is not an address", peer))
	}
	raw, id, err := a.compose(conv, peer, m)
	if err != nil {
		return "", channels.Permanent(err)
	}
	if err := a.submit(ctx, peer, raw); err != nil {
		return "", err
	}
	if a.cfg.SaveSent {
		// The message left; a missing Sent copy only weakens Find after a
		// crash, so it is logged, not retried (that would resend).
		if err := a.appendSent(ctx, raw); err != nil {
			a.log.Warn("filing a sent reply in the Sent folder", "err", err)
		}
	}
	return id, nil
}

// compose builds the message: From the dedicated address (Reply-To the
// secret-tagged one when set), To the peer, threaded under ReplyTo's
// message (else the conversation's root).
func (a *Adapter) compose(conv, peer string, m channels.Outgoing) (raw []byte, id string, err error) {
	_, root, err := parseConv(conv)
	if err != nil {
		return nil, "", err
	}
	var rd replyData
	if m.ReplyTo != "" {
		// Opaque to the relay and written by us; a damaged value only costs
		// the threading detail, never the reply.
		if err := json.Unmarshal([]byte(m.ReplyTo), &rd); err != nil {
			a.log.Warn("email reply data unreadable; replying to the thread root", "err", err)
			rd = replyData{}
		}
	}
	parent := rd.MessageID
	refs := rd.References
	if parent == "" {
		parent = strings.Trim(root, "<>")
		refs = []string{parent}
	}
	refs = trimRefs(cleanIDs(refs))

	var h mail.Header
	h.SetDate(a.cfg.Clock())
	h.SetAddressList("From", []*mail.Address{{Name: a.cfg.FromName, Address: a.cfg.Address}})
	if ra := a.replyAddress(); ra != a.cfg.Address {
		h.SetAddressList("Reply-To", []*mail.Address{{Name: a.cfg.FromName, Address: ra}})
	}
	h.SetAddressList("To", []*mail.Address{{Address: peer}})
	h.SetSubject(replySubject(rd.Subject))
	id = a.MessageID(m.Key)
	h.SetMessageID(strings.Trim(id, "<>"))
	if p := cleanIDs([]string{parent}); len(p) == 1 {
		h.SetMsgIDList("In-Reply-To", p)
	}
	if len(refs) > 0 {
		h.SetMsgIDList("References", refs)
	}
	// RFC 3834: a vacation responder must not answer this, and Exchange's
	// equivalent header says the same to Outlook.
	h.Set("Auto-Submitted", "auto-replied")
	h.Set("X-Auto-Response-Suppress", "All")
	h.Set("MIME-Version", "1.0")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Transfer-Encoding", "quoted-printable")

	var buf bytes.Buffer
	w, err := mail.CreateSingleInlineWriter(&buf, h)
	if err != nil {
		return nil, "", fmt.Errorf("writing the mail header: %w", err)
	}
	text := truncateRunes(m.Text, MaxText)
	if _, err := w.Write([]byte(strings.ReplaceAll(text, "\n", "\r\n"))); err != nil {
		return nil, "", fmt.Errorf("writing the mail body: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("writing the mail body: %w", err)
	}
	return buf.Bytes(), id, nil
}

// cleanIDs drops ids a header could not carry (outside mail wrote them).
func cleanIDs(ids []string) []string {
	var out []string
	for _, id := range ids {
		id = strings.Trim(strings.TrimSpace(id), "<>")
		if id == "" || len(id) > 250 || strings.ContainsAny(id, " \t\r\n<>\"()") || !strings.Contains(id, "@") {
			continue
		}
		out = append(out, id)
	}
	return out
}

// replySubject is "Re: " and the subject, not stacking prefixes.
func replySubject(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "Re: Hestia"
	}
	if len(s) >= 3 && strings.EqualFold(s[:3], "re:") {
		return "Re:" + s[3:]
	}
	return "Re: " + truncateRunes(s, 200)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// submit hands raw to the SMTP server for peer. Errors say which step
// failed; 5xx replies to the envelope or the data are permanent.
func (a *Adapter) submit(ctx context.Context, peer string, raw []byte) error {
	c, stop, err := a.dialSMTP(ctx)
	if err != nil {
		return err
	}
	defer stop()
	defer c.Close()
	step := func(name string, err error) error {
		return smtpError("SMTP "+name, err)
	}
	// A server that offers no AUTH (a local MTA accepting from loopback)
	// is used without; over TLS the offer cannot be stripped in transit,
	// and a server that wants a login refuses MAIL or RCPT instead.
	if ok, _ := c.Extension("AUTH"); ok && a.cfg.Password != "" {
		if err := c.Auth(sasl.NewPlainClient("", a.cfg.Username, a.cfg.Password)); err != nil {
			// A refused login is a configuration problem, not this
			// message's: retried (the log and doctor say why) rather than
			// failing every reply for good.
			return &hinted{fmt.Errorf("SMTP login as %s: %w", a.cfg.Username, err), "channels.email.username and password"}
		}
	}
	if err := c.Mail(a.cfg.Address, nil); err != nil {
		return step("MAIL FROM", err)
	}
	if err := c.Rcpt(peer, nil); err != nil {
		return step("RCPT TO "+peer, err)
	}
	w, err := c.Data()
	if err != nil {
		return step("DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		return fmt.Errorf("SMTP writing the message: %w", err)
	}
	if err := w.Close(); err != nil {
		return step("end of DATA", err)
	}
	if err := c.Quit(); err != nil {
		a.log.Debug("SMTP QUIT after an accepted message", "err", err)
	}
	return nil
}

// smtpError classifies a failed SMTP step: 5xx never succeeds on a retry
// (channels.Permanent), a rate limit or a busy server waits a minute
// (RetryAfterError), anything else (a cut connection) is retried after the
// relay's backoff.
func smtpError(step string, err error) error {
	err = fmt.Errorf("%s: %w", step, err)
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		return err
	}
	switch {
	case se.Code >= 500 && se.Code < 600:
		return channels.Permanent(err)
	case se.EnhancedCode[0] == 4 && se.EnhancedCode[1] == 7, se.Code == 421, se.Code == 450, se.Code == 451, se.Code == 452:
		return &channels.RetryAfterError{Err: err, After: time.Minute}
	}
	return err
}

// dialSMTP connects and greets; stop releases the ctx watch and must be
// called when the exchange ends.
func (a *Adapter) dialSMTP(ctx context.Context) (c *smtp.Client, stop func() bool, err error) {
	s := a.cfg.SMTP
	d := &net.Dialer{Timeout: a.cfg.Timeout}
	conn, err := d.DialContext(ctx, "tcp", s.addr())
	if err != nil {
		return nil, nil, &hinted{fmt.Errorf("connecting to SMTP %s: %w", s.addr(), err), "channels.email.smtp_host, smtp_port and smtp_security"}
	}
	// A cancelled ctx ends the exchange at once; each command has its own
	// timeout below, so a stuck server cannot hold the outbox.
	stop = context.AfterFunc(ctx, func() { conn.Close() })
	switch s.Security {
	case "tls":
		c = smtp.NewClient(tls.Client(conn, s.tlsConfig()))
	case "starttls":
		c, err = smtp.NewClientStartTLS(conn, s.tlsConfig())
		if err != nil {
			stop()
			conn.Close()
			return nil, nil, &hinted{fmt.Errorf("STARTTLS with SMTP %s: %w", s.addr(), err), "channels.email.smtp_security (tls for port 465, starttls for 587)"}
		}
	default:
		c = smtp.NewClient(conn)
	}
	c.CommandTimeout = a.cfg.Timeout
	c.SubmissionTimeout = a.cfg.Timeout
	return c, stop, nil
}

// appendSent files a copy of a sent reply in the Sent folder, seen.
func (a *Adapter) appendSent(ctx context.Context, raw []byte) error {
	return a.session(ctx, a.cfg.Timeout, func(c *imapclient.Client) error {
		box, err := a.sentMailbox(c)
		if err != nil {
			return err
		}
		cmd := c.Append(box, int64(len(raw)), &imap.AppendOptions{Flags: []imap.Flag{imap.FlagSeen}, Time: a.cfg.Clock()})
		if _, err := cmd.Write(raw); err != nil {
			cmd.Close()
			return fmt.Errorf("appending to %s: %w", box, err)
		}
		if err := cmd.Close(); err != nil {
			return fmt.Errorf("appending to %s: %w", box, err)
		}
		if _, err := cmd.Wait(); err != nil {
			return fmt.Errorf("appending to %s: %w", box, err)
		}
		return nil
	})
}

// Find implements channels.Finder: after a crash between sending and
// recording, it looks for the reply's Message-ID in the Sent folder
// (filed by save_sent or by the provider itself). Not found there means
// "send again": a duplicate is preferred to a lost reply.
func (a *Adapter) Find(ctx context.Context, conv, key string) (string, bool, error) {
	id := a.MessageID(key)
	found := false
	err := a.session(ctx, a.cfg.Timeout, func(c *imapclient.Client) error {
		box, err := a.sentMailbox(c)
		if errors.Is(err, errNoSent) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := c.Select(box, &imap.SelectOptions{ReadOnly: true}).Wait(); err != nil {
			return fmt.Errorf("selecting %s: %w", box, err)
		}
		res, err := c.UIDSearch(&imap.SearchCriteria{Header: []imap.SearchCriteriaHeaderField{{Key: "Message-ID", Value: id}}}, nil).Wait()
		if err != nil {
			return fmt.Errorf("searching %s for %s: %w", box, id, err)
		}
		found = len(uidsOf(res)) > 0
		return nil
	})
	if err != nil || !found {
		return "", false, err
	}
	return id, true, nil
}

var errNoSent = errors.New("the account has no Sent folder")

// sentMailbox is sent_mailbox, else the folder marked \Sent (RFC 6154).
func (a *Adapter) sentMailbox(c *imapclient.Client) (string, error) {
	if a.cfg.SentMailbox != "" {
		return a.cfg.SentMailbox, nil
	}
	boxes, err := c.List("", "*", &imap.ListOptions{ReturnSpecialUse: true}).Collect()
	if err != nil {
		return "", fmt.Errorf("listing folders: %w", err)
	}
	for _, b := range boxes {
		for _, at := range b.Attrs {
			if at == imap.MailboxAttrSent {
				return b.Mailbox, nil
			}
		}
	}
	return "", errNoSent
}
