package email

import (
	"context"
	"fmt"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"

	"github.com/hestia-dev/hestia/internal/channels"
)

var _ channels.Checker = (*Adapter)(nil)

// hinted is an error that says which settings to look at: connecting and
// logging in fail for reasons the user fixes in config.toml. Its text
// never holds the password (servers do not echo it, and it is not added).
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() + "; check " + h.hint }
func (h *hinted) Unwrap() error { return h.err }

// Check is the connection test: an IMAP login and a read-only SELECT
// (EXAMINE, which changes no flag) of the watched mailbox, then an SMTP
// connection and login, ended with QUIT before any MAIL command, so
// nothing is sent and nothing in the mailbox changes. It returns the
// address and what it found.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	var messages uint32
	err := a.session(ctx, a.cfg.Timeout, func(c *imapclient.Client) error {
		sel, err := c.Select(a.cfg.Mailbox, &imap.SelectOptions{ReadOnly: true}).Wait()
		if err != nil {
			return &hinted{fmt.Errorf("selecting %s: %w", a.cfg.Mailbox, err), "channels.email.mailbox"}
		}
		messages = sel.NumMessages
		return nil
	})
	if err != nil {
		return "", err
	}
	login, err := a.checkSMTP(ctx)
	if err != nil {
		return "", err
	}
	count := fmt.Sprintf("%d messages", messages)
	if messages == 1 {
		count = "1 message"
	}
	return fmt.Sprintf("%s (IMAP: %s in %s; SMTP: %s)", a.cfg.Address, count, a.cfg.Mailbox, login), nil
}

// checkSMTP connects and logs in as submit does, then quits.
func (a *Adapter) checkSMTP(ctx context.Context) (string, error) {
	c, stop, err := a.dialSMTP(ctx)
	if err != nil {
		return "", err
	}
	defer stop()
	defer c.Close()
	// NOOP makes the client greet (and, with tls, shake hands) first.
	if err := c.Noop(); err != nil {
		return "", &hinted{fmt.Errorf("SMTP greeting from %s: %w", a.cfg.SMTP.addr(), err), "channels.email.smtp_host, smtp_port and smtp_security"}
	}
	login := "login accepted"
	if ok, _ := c.Extension("AUTH"); !ok || a.cfg.Password == "" {
		// submit sends without a login then; a server that wants one
		// refuses MAIL, which only a real message would show.
		login = "the server offers no login; mail goes out without one"
	} else if err := c.Auth(sasl.NewPlainClient("", a.cfg.Username, a.cfg.Password)); err != nil {
		return "", &hinted{fmt.Errorf("SMTP login as %s: %w", a.cfg.Username, err), "channels.email.username and password"}
	}
	if err := c.Quit(); err != nil {
		a.log.Debug("SMTP QUIT after the connection test", "err", err)
	}
	return login, nil
}
