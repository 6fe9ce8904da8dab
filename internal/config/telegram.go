package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TelegramConfig configures the Telegram channel. The bot token comes from
// the environment (HESTIA_TELEGRAM_TOKEN) or a file readable only by the
// owner (token_file); it is never written into config.toml by Hestia.
type TelegramConfig struct {
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
	// OwnerID is the owner's numeric Telegram user id: chat, approve, read.
	OwnerID int64 `toml:"owner_id"`
	// Contacts are trusted people as "USER_ID" (chat and read) or
	// "USER_ID:scope+scope" with scopes from chat, approve, read.
	Contacts []string `toml:"contacts"`
	// APIURL is the Bot API root (tests point it at a fake server).
	APIURL       string   `toml:"api_url"`
	PollTimeout  Duration `toml:"poll_timeout"`
	EditInterval Duration `toml:"edit_interval"`
	// PublicURL is where the web app is reachable from the phone, for the
	// "Edit in Hestia" button; empty leaves the button out.
	PublicURL string `toml:"public_url"`
	// MaxVoiceMB refuses larger voice notes.
	MaxVoiceMB int `toml:"max_voice_mb"`
	// WebhookURL, when set, receives updates by webhook instead of long
	// polling: the public https address that reaches the daemon's
	// /telegram/webhook route. Empty polls (and deletes a webhook set
	// before).
	WebhookURL string `toml:"webhook_url"`
	// VoiceReplies: "voice" speaks the reply to a voice note (through the
	// tts tier, when mapped), "always" speaks every reply, "off" never.
	VoiceReplies string `toml:"voice_replies"`
}

// Enabled reports whether a bot token is configured.
func (t TelegramConfig) Enabled() bool { return t.Token != "" || t.TokenFile != "" }

func defaultTelegram() TelegramConfig {
	return TelegramConfig{
		APIURL:       "https://api.telegram.org",
		PollTimeout:  Duration(25 * time.Second),
		EditInterval: Duration(1500 * time.Millisecond),
		MaxVoiceMB:   20,
		VoiceReplies: "voice",
	}
}

// ParseTelegramContact splits "ID" or "ID:scope+scope"; scopes are
// returned as written (the devices package validates their names).
func ParseTelegramContact(s string) (int64, []string, error) {
	idPart, scopePart, hasScopes := strings.Cut(strings.TrimSpace(s), ":")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if err != nil || id <= 0 {
		return 0, nil, fmt.Errorf("%q does not start with a numeric Telegram user id", s)
	}
	if !hasScopes {
		return id, []string{"chat", "read"}, nil
	}
	var scopes []string
	for _, sc := range strings.Split(scopePart, "+") {
		sc = strings.TrimSpace(sc)
		switch sc {
		case "chat", "approve", "read":
			scopes = append(scopes, sc)
		default:
			return 0, nil, fmt.Errorf("scope %q in %q is not chat, approve or read", sc, s)
		}
	}
	return id, scopes, nil
}

func (t TelegramConfig) validate() []error {
	var errs []error
	if t.TokenFile != "" && !filepath.IsAbs(t.TokenFile) {
		errs = append(errs, &Error{Key: "telegram.token_file", Value: t.TokenFile, Allowed: "an absolute path"})
	}
	if t.Enabled() && t.OwnerID <= 0 {
		errs = append(errs, &Error{Key: "telegram.owner_id", Value: strconv.FormatInt(t.OwnerID, 10), Allowed: "your numeric Telegram user id (the bot serves nobody without it)"})
	}
	if u, err := url.Parse(t.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, &Error{Key: "telegram.api_url", Value: t.APIURL, Allowed: "an http(s) URL such as https://api.telegram.org"})
	}
	if t.PublicURL != "" {
		if u, err := url.Parse(t.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, &Error{Key: "telegram.public_url", Value: t.PublicURL, Allowed: "an http(s) URL where the web app is reachable"})
		}
	}
	if t.WebhookURL != "" {
		if u, err := url.Parse(t.WebhookURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, &Error{Key: "telegram.webhook_url", Value: t.WebhookURL, Allowed: "an https URL reaching the daemon's /telegram/webhook route (Telegram delivers webhooks over https only)"})
		}
	}
	switch t.VoiceReplies {
	case "", "voice", "always", "off":
	default:
		errs = append(errs, &Error{Key: "telegram.voice_replies", Value: t.VoiceReplies, Allowed: "voice, always or off"})
	}
	if d := t.PollTimeout.D(); d < time.Second || d > 50*time.Second {
		errs = append(errs, &Error{Key: "telegram.poll_timeout", Value: d.String(), Allowed: "a duration between 1s and 50s"})
	}
	if d := t.EditInterval.D(); d < 50*time.Millisecond || d > time.Minute {
		errs = append(errs, &Error{Key: "telegram.edit_interval", Value: d.String(), Allowed: "a duration between 50ms and 1m"})
	}
	if t.MaxVoiceMB < 1 || t.MaxVoiceMB > 20 {
		errs = append(errs, &Error{Key: "telegram.max_voice_mb", Value: strconv.Itoa(t.MaxVoiceMB), Allowed: "an integer from 1 to 20 (the Bot API serves files up to 20 MB)"})
	}
	for i, c := range t.Contacts {
		if _, _, err := ParseTelegramContact(c); err != nil {
			errs = append(errs, &Error{Key: fmt.Sprintf("telegram.contacts[%d]", i), Value: c, Allowed: "USER_ID or USER_ID:scope+scope with scopes chat, approve, read (" + err.Error() + ")"})
		}
	}
	return errs
}
