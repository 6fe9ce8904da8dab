// Package smtpsend submits the send journal's messages over SMTP
// (RFC 5321) with go-smtp. It is apart from the journal so that the mail
// mirror, which records what a send is expected to produce, links no SMTP
// or TLS client: the one-shot query binary starts with every package it
// links.
package smtpsend

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/hestia-dev/hestia/internal/mail/journal"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
)

// Account is where and how one account submits mail.
type Account struct {
	Host     string
	Port     int
	Security string // tls, starttls or none
	Username string
	Password string
	// Tokens, when set, authenticates with an OAuth access token (SASL
	// OAUTHBEARER or XOAUTH2, RFC 4954 with RFC 7628) instead of Password.
	Tokens mailauth.Tokens
	// TLSConfig overrides the default (tests trust their own CA).
	TLSConfig *tls.Config
}

// Sender submits mail over SMTP (RFC 5321) with go-smtp. After
// acceptance it calls AfterSend (an IMAP APPEND to Sent, for accounts that
// want a copy filed); a failure there is logged by the caller's sender
// wrapper, never turned into a resend.
type Sender struct {
	Account   func(name string) (Account, error)
	AfterSend func(ctx context.Context, account string, raw []byte) error
	Timeout   time.Duration
}

// Send implements journal.Sender.
func (s *Sender) Send(ctx context.Context, account string, d journal.Draft, raw []byte) error {
	acct, err := s.Account(account)
	if err != nil {
		return &journal.SendError{Delivered: "no", Err: err}
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	addr := net.JoinHostPort(acct.Host, fmt.Sprint(acct.Port))
	tlsConf := acct.TLSConfig
	if tlsConf == nil {
		tlsConf = &tls.Config{ServerName: acct.Host}
	}
	dialer := &net.Dialer{Timeout: timeout}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &journal.SendError{Delivered: "no", Err: fmt.Errorf("connecting to %s: %w", addr, err)}
	}
	conn.SetDeadline(time.Now().Add(timeout))
	var c *smtp.Client
	switch acct.Security {
	case "tls":
		c = smtp.NewClient(tls.Client(conn, tlsConf))
	case "starttls":
		c, err = smtp.NewClientStartTLS(conn, tlsConf)
		if err != nil {
			conn.Close()
			return &journal.SendError{Delivered: "no", Err: fmt.Errorf("STARTTLS with %s: %w", addr, err)}
		}
	default:
		c = smtp.NewClient(conn)
	}
	defer c.Close()
	no := func(step string, err error) error {
		return &journal.SendError{Delivered: "no", Err: fmt.Errorf("SMTP %s: %w", step, err)}
	}
	if err := auth(ctx, c, acct); err != nil {
		return no("AUTH", err)
	}
	if err := c.Mail(d.From, nil); err != nil {
		return no("MAIL FROM", err)
	}
	for _, r := range append(append(append([]string(nil), d.To...), d.Cc...), d.Bcc...) {
		if err := c.Rcpt(r, nil); err != nil {
			return no("RCPT TO "+r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return no("DATA", err)
	}
	if _, err := w.Write(raw); err != nil {
		return &journal.SendError{Delivered: "maybe", Err: fmt.Errorf("SMTP writing message: %w", err)}
	}
	if err := w.Close(); err != nil {
		// A reply code means the server refused the data; anything else
		// (a timeout, a reset) leaves delivery unknown.
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return no("end of DATA", err)
		}
		return &journal.SendError{Delivered: "maybe", Err: fmt.Errorf("SMTP end of DATA: %w", err)}
	}
	c.Quit()
	if s.AfterSend != nil {
		if err := s.AfterSend(ctx, account, bytes.Clone(raw)); err != nil {
			// The message left; only the Sent copy is missing. Confirmation
			// will then time out into needs_review, which is the truth.
			return nil
		}
	}
	return nil
}

// auth authenticates with PLAIN, or with an OAuth token (refreshed and
// tried once more when the server refuses it); an account without a user
// name submits unauthenticated (a local relay).
func auth(ctx context.Context, c *smtp.Client, acct Account) error {
	if acct.Tokens == nil {
		if acct.Username == "" {
			return nil
		}
		return c.Auth(sasl.NewPlainClient("", acct.Username, acct.Password))
	}
	_, mechs := c.Extension("AUTH")
	return mailauth.Authenticate(ctx, acct.Tokens, mailauth.Login{
		User: acct.Username, Host: acct.Host, Port: acct.Port,
		Offered: strings.Fields(mechs),
		Auth:    c.Auth,
		Refused: Refused,
	})
}

// Refused reports whether err is the server refusing the credentials
// (535 5.7.8, or another 5xx answer to AUTH), not a broken connection.
func Refused(err error) bool {
	var se *smtp.SMTPError
	return errors.As(err, &se) && se.Code >= 500 && se.Code < 600
}
