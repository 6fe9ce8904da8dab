package app

import (
	"context"
	"strings"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/email"
	"github.com/hestia-dev/hestia/internal/config"
)

// emailChannel builds [channels.email]: an IMAP/SMTP account whose
// dedicated address the owner writes to. Addresses are matched lower-case
// (the adapter reports senders so), whatever case config.toml uses.
func (a *App) emailChannel() channelBuilder {
	c := a.Config.Channels.Email
	return channelBuilder{
		key: "channels.email", label: "E-mail", enabled: c.Enabled(), owners: lowerAll(c.Owners), contacts: lowerAll(c.Contacts),
		build: func(ctx context.Context) (channels.Platform, error) {
			return a.buildEmail(c)
		},
	}
}

func (a *App) buildEmail(c config.EmailChannel) (*email.Adapter, error) {
	pw, err := readSecret("channels.email.password", c.Password, c.PasswordFile)
	if err != nil {
		return nil, err
	}
	var tag string
	if c.SecretTag != "" || c.SecretTagFile != "" {
		if tag, err = readSecret("channels.email.secret_tag", c.SecretTag, c.SecretTagFile); err != nil {
			return nil, err
		}
	}
	return email.New(email.Config{
		Name: "email", Address: c.Address, FromName: c.FromName, Username: c.Username, Password: pw,
		IMAP:    email.Server{Host: c.IMAPHost, Port: c.IMAPPort, Security: c.IMAPSecurity},
		SMTP:    email.Server{Host: c.SMTPHost, Port: c.SMTPPort, Security: c.SMTPSecurity},
		Mailbox: c.Mailbox, DoneMailbox: c.DoneMailbox, SaveSent: c.SaveSent, SentMailbox: c.SentMailbox,
		PollInterval: c.PollInterval.D(), MaxAge: c.MaxAge.D(),
		AuthservID: c.AuthservID, AuthMethods: c.AuthMethods, SecretTag: tag, RequireAll: c.Verify == "all",
		Clock: a.Now,
	}, a.Log.With("component", "email"))
}

// lowerAll lower-cases e-mail ids (and a contact's scopes, already lower).
func lowerAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strings.ToLower(strings.TrimSpace(id))
	}
	return out
}
