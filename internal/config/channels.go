package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
)

// ChannelsConfig holds the messaging channels beside Telegram
// ([channels.slack], [channels.discord], …). Each is off until its
// credentials are set; each lists the owner's identities on that platform
// and optional trusted contacts (internal/channels). The file limits are
// shared by every channel, Telegram included.
type ChannelsConfig struct {
	// MaxFileMB refuses a larger file sent on a channel; MaxMessageMB
	// bounds the files of one message together. Accepted files are saved
	// in DATA/inbox for the assistant to read.
	MaxFileMB    int `toml:"max_file_mb"`
	MaxMessageMB int `toml:"max_message_mb"`

	Slack    SlackChannel    `toml:"slack"`
	Discord  DiscordChannel  `toml:"discord"`
	WhatsApp WhatsAppChannel `toml:"whatsapp"`
	Matrix   MatrixChannel   `toml:"matrix"`
	Signal   SignalChannel   `toml:"signal"`
	Email    EmailChannel    `toml:"email"`
}

func defaultChannels() ChannelsConfig {
	return ChannelsConfig{
		MaxFileMB:    25,
		MaxMessageMB: 100,
		Slack:        defaultSlack(),
		Discord:      defaultDiscord(),
		WhatsApp:     defaultWhatsApp(),
		Matrix:       defaultMatrix(),
		Signal:       defaultSignal(),
		Email:        defaultEmail(),
	}
}

func (c ChannelsConfig) validate() []error {
	var errs []error
	if c.MaxFileMB < 1 || c.MaxFileMB > 1024 {
		errs = append(errs, &Error{Key: "channels.max_file_mb", Value: strconv.Itoa(c.MaxFileMB), Allowed: "an integer from 1 to 1024"})
	}
	if c.MaxMessageMB < c.MaxFileMB || c.MaxMessageMB > 4096 {
		errs = append(errs, &Error{Key: "channels.max_message_mb", Value: strconv.Itoa(c.MaxMessageMB), Allowed: "an integer from max_file_mb to 4096"})
	}
	errs = append(errs, c.Slack.validate()...)
	errs = append(errs, c.Discord.validate()...)
	errs = append(errs, c.WhatsApp.validate()...)
	errs = append(errs, c.Matrix.validate()...)
	errs = append(errs, c.Signal.validate()...)
	errs = append(errs, c.Email.validate()...)
	return errs
}

// ParseChannelContact splits a trusted contact "ID" or "ID:scope+scope"
// (scopes from chat, approve, read; default chat+read). Unlike Telegram's
// numeric ids, platform ids here are strings (U0123, +393471234567,
// @anna:example.org, anna@example.org); the id may not be empty.
func ParseChannelContact(s string) (string, []string, error) {
	s = strings.TrimSpace(s)
	// Matrix ids contain a colon ("@anna:example.org"): the scopes part is
	// after the last colon, and only when it names scopes.
	id, scopes := s, []string{"chat", "read"}
	if i := strings.LastIndex(s, ":"); i >= 0 {
		if sc, ok := parseScopes(s[i+1:]); ok {
			id, scopes = strings.TrimSpace(s[:i]), sc
		}
	}
	if id == "" {
		return "", nil, fmt.Errorf("%q has no platform id before the scopes", s)
	}
	return id, scopes, nil
}

func parseScopes(s string) ([]string, bool) {
	var out []string
	for _, sc := range strings.Split(s, "+") {
		switch sc = strings.TrimSpace(sc); sc {
		case "chat", "approve", "read":
			out = append(out, sc)
		default:
			return nil, false
		}
	}
	return out, len(out) > 0
}

// validateIdentity checks a channel's owners and contacts when the channel
// is enabled: it serves nobody without an owner.
func validateIdentity(key string, enabled bool, owners, contacts []string) []error {
	var errs []error
	if enabled && len(owners) == 0 {
		errs = append(errs, &Error{Key: key + ".owners", Value: "[]", Allowed: "your own id(s) on this platform (the channel serves nobody without one)"})
	}
	for _, o := range owners {
		if strings.TrimSpace(o) == "" {
			errs = append(errs, &Error{Key: key + ".owners", Value: fmt.Sprintf("%q", o), Allowed: "non-empty platform ids"})
		}
	}
	for _, c := range contacts {
		if _, _, err := ParseChannelContact(c); err != nil {
			errs = append(errs, &Error{Key: key + ".contacts", Value: c, Allowed: `"ID" or "ID:scope+scope" with scopes chat, approve, read`})
		}
	}
	return errs
}

// validateSecretFile checks a *_file key names an absolute path.
func validateSecretFile(key, path string) []error {
	if path != "" && !filepath.IsAbs(path) {
		return []error{&Error{Key: key, Value: path, Allowed: "an absolute path"}}
	}
	return nil
}

// validateHTTPURL checks an API root.
func validateHTTPURL(key, raw, example string) []error {
	if raw == "" {
		return nil
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return []error{&Error{Key: key, Value: raw, Allowed: "an http(s) URL such as " + example}}
	}
	return nil
}
