package settings

import (
	"context"
	"net/url"
	"sort"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// The read-only sections of the Settings page: what the connectors read
// from config.toml (edited by /setup or by hand) and the mail folders the
// daemon rescans. None of these types carries a secret: a password or
// token is only reported as set, and URLs lose any user:password part.

// Folder is one vdir folder of calendars or contacts.
type Folder struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only"`
}

// DAVAccount is one CalDAV or CardDAV login.
type DAVAccount struct {
	Name     string `json:"name"`
	URL      string `json:"url"`
	Username string `json:"username,omitempty"`
	ReadOnly bool   `json:"read_only"`
	// PasswordSet: password_env or password_file names where it is.
	PasswordSet bool `json:"password_set"`
	// PasswordFileSet: the password comes from a file (owner-only).
	PasswordFileSet bool `json:"password_file_set"`
	// OAuthAccount names the [[oauth.accounts]] sign-in whose bearer
	// token the account uses (auth = "oauth2"); empty for a password.
	OAuthAccount string `json:"oauth_account,omitempty"`
}

// Telegram is the Telegram channel's setup.
type Telegram struct {
	// Enabled: a token is configured (environment, file or config).
	Enabled bool `json:"enabled"`
	// TokenFileSet: the token comes from token_file.
	TokenFileSet bool `json:"token_file_set"`
	// OwnerID is the owner's Telegram user id (0: unset).
	OwnerID int64 `json:"owner_id"`
	// Contacts are the trusted people as written ("ID" or "ID:scopes").
	Contacts []string `json:"contacts"`
}

// Channel is one messaging channel of [channels.*] (Slack, Discord, …).
type Channel struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Owners are the owner's ids on the platform; Contacts the trusted
	// people as written ("ID" or "ID:scopes").
	Owners   []string `json:"owners"`
	Contacts []string `json:"contacts"`
}

// Account is one [[oauth.accounts]] sign-in and its state (no token).
type Account struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// State is "ok", "not connected" or "reconnect needed"; Detail says why.
	State  string    `json:"state"`
	Detail string    `json:"detail,omitempty"`
	Expiry time.Time `json:"expiry,omitzero"`
	// Connect is the sign-in the web app started for the account (POST
	// /api/accounts/NAME/connect): waiting, connected or failed with why.
	Connect *oauth.Attempt `json:"connect,omitempty"`
}

// MCPServer is one configured MCP server: a stdio program or an HTTP URL.
type MCPServer struct {
	Name     string `json:"name"`
	Command  string `json:"command,omitempty"`
	URL      string `json:"url,omitempty"`
	Disabled bool   `json:"disabled"`
}

// MailSource is a folder the daemon rescans: one `hestia mail import`
// registered (removed with `hestia mail sources remove PATH`) or one
// listed in mail.sources in config.toml (FromConfig).
type MailSource struct {
	Path       string `json:"path"`
	Account    string `json:"account,omitempty"`
	FromConfig bool   `json:"from_config,omitempty"`
}

// Sources groups the read-only sections of View.
type Sources struct {
	Calendars        []Folder     `json:"calendars"`
	CalDAV           []DAVAccount `json:"caldav"`
	Contacts         []Folder     `json:"contacts"`
	CardDAV          []DAVAccount `json:"carddav"`
	Telegram         Telegram     `json:"telegram"`
	Channels         []Channel    `json:"channels"`
	Accounts         []Account    `json:"accounts"`
	AccountsError    string       `json:"accounts_error,omitempty"`
	MCP              []MCPServer  `json:"mcp_servers"`
	MailSources      []MailSource `json:"mail_sources"`
	MailSourcesError string       `json:"mail_sources_error,omitempty"`
}

func folders(srcs []config.VdirSource) []Folder {
	out := []Folder{}
	for _, s := range srcs {
		out = append(out, Folder{Name: s.Name, Path: s.Path, ReadOnly: s.ReadOnly})
	}
	return out
}

func davAccounts(accts []config.DAVAccount) []DAVAccount {
	out := []DAVAccount{}
	for _, a := range accts {
		out = append(out, DAVAccount{Name: a.Name, URL: publicURL(a.URL), Username: a.Username, ReadOnly: a.ReadOnly,
			PasswordSet: a.PasswordEnv != "" || a.PasswordFile != "", PasswordFileSet: a.PasswordFile != ""})
		if a.UsesOAuth() {
			out[len(out)-1].OAuthAccount = a.OAuthAccount
		}
	}
	return out
}

// publicURL drops a user:password part and the query (a token may sit
// there); an unparsable URL is shown as nothing rather than risk a secret.
func publicURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// sourcesView builds the read-only sections from cfg and the registered
// mail folders (listed by s.MailSources when the daemon wires it).
func (s *Service) sourcesView(ctx context.Context, cfg config.Config) Sources {
	out := Sources{Calendars: folders(cfg.Calendar.Sources), CalDAV: davAccounts(cfg.Calendar.CalDAV),
		Contacts: folders(cfg.Contacts.Sources), CardDAV: davAccounts(cfg.Contacts.CardDAV),
		MCP: []MCPServer{}, MailSources: []MailSource{}}
	t := cfg.Telegram
	out.Telegram = Telegram{Enabled: t.Enabled(), TokenFileSet: t.TokenFile != "", OwnerID: t.OwnerID, Contacts: append([]string{}, t.Contacts...)}
	out.Channels = channelsView(cfg.Channels)
	out.Accounts = []Account{}
	if s.Accounts != nil {
		accts, err := s.Accounts(ctx)
		if err != nil {
			out.AccountsError = err.Error()
		}
		out.Accounts = append(out.Accounts, accts...)
	}
	// Args are left out: a server's command line may carry a token.
	for _, name := range cfg.MCP.MCPServerNames() {
		m := cfg.MCP.Servers[name]
		out.MCP = append(out.MCP, MCPServer{Name: name, Command: m.Command, URL: publicURL(m.URL), Disabled: m.Disabled})
	}
	for _, p := range cfg.Mail.Sources {
		out.MailSources = append(out.MailSources, MailSource{Path: p, FromConfig: true})
	}
	if s.MailSources != nil {
		srcs, err := s.MailSources(ctx)
		if err != nil {
			out.MailSourcesError = err.Error()
		}
		out.MailSources = append(out.MailSources, srcs...)
	}
	sort.SliceStable(out.MailSources, func(i, j int) bool { return out.MailSources[i].Path < out.MailSources[j].Path })
	return out
}

// channelsView lists every channel, on or off, so the page can say how to
// turn one on. Only ids are shown: no credential of any channel.
func channelsView(c config.ChannelsConfig) []Channel {
	ch := func(name string, enabled bool, owners, contacts []string) Channel {
		return Channel{Name: name, Enabled: enabled, Owners: append([]string{}, owners...), Contacts: append([]string{}, contacts...)}
	}
	return []Channel{
		ch("slack", c.Slack.Enabled(), c.Slack.Owners, c.Slack.Contacts),
		ch("discord", c.Discord.Enabled(), c.Discord.Owners, c.Discord.Contacts),
		ch("whatsapp", c.WhatsApp.Enabled(), c.WhatsApp.Owners, c.WhatsApp.Contacts),
		ch("matrix", c.Matrix.Enabled(), c.Matrix.Owners, c.Matrix.Contacts),
		ch("signal", c.Signal.Enabled(), c.Signal.Owners, c.Signal.Contacts),
		ch("email", c.Email.Enabled(), c.Email.Owners, c.Email.Contacts),
	}
}
