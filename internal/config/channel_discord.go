package config

import (
	"net/url"
	"strings"
)

// DiscordChannel configures the discord channel ([channels.discord]); see
// internal/channels/discord. The owner talks to the bot in a direct
// message; the bot needs no privileged intent and no public URL.
type DiscordChannel struct {
	// Owners are the owner's Discord user ids (snowflakes such as
	// "80351110224678912": Settings → Advanced → Developer Mode, then
	// right-click your name → Copy User ID): chat, approve, read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ID" (chat and read) or
	// "ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// APIURL is Discord's REST root with the API version; tests point it
	// at a fake. The bot token is sent there, so it must be https unless
	// it is on this machine.
	APIURL string `toml:"api_url"`
	// Token or TokenFile (owner-only) holds the bot token (Developer
	// Portal → your application → Bot → Reset Token), without "Bot ".
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
}

// DefaultDiscordAPIURL is Discord's REST root, API version 10.
const DefaultDiscordAPIURL = "https://discord.com/api/v10"

// Enabled reports whether the channel is configured.
func (c DiscordChannel) Enabled() bool { return c.Token != "" || c.TokenFile != "" }

func defaultDiscord() DiscordChannel { return DiscordChannel{APIURL: DefaultDiscordAPIURL} }

func (c DiscordChannel) validate() []error {
	var errs []error
	errs = append(errs, validateIdentity("channels.discord", c.Enabled(), c.Owners, c.Contacts)...)
	for _, o := range c.Owners {
		if o = strings.TrimSpace(o); o != "" && !discordID(o) {
			errs = append(errs, &Error{Key: "channels.discord.owners", Value: o, Allowed: "Discord user ids: 17 to 20 digits (Developer Mode → right-click your name → Copy User ID), not a user name"})
		}
	}
	for _, ct := range c.Contacts {
		if id, _, err := ParseChannelContact(ct); err == nil && !discordID(id) {
			errs = append(errs, &Error{Key: "channels.discord.contacts", Value: ct, Allowed: `Discord user ids (17 to 20 digits) as "ID" or "ID:scope+scope"`})
		}
	}
	if t := c.Token; t != "" && (strings.HasPrefix(strings.ToLower(t), "bot ") || strings.ContainsAny(t, " \t\r\n")) {
		errs = append(errs, &Error{Key: "channels.discord.token", Value: "(hidden)", Allowed: `the bot token alone, without "Bot " or spaces`})
	}
	errs = append(errs, validateSecretFile("channels.discord.token_file", c.TokenFile)...)
	if c.APIURL != "" {
		u, err := url.Parse(c.APIURL)
		if err != nil || u.Host == "" || u.User != nil || !(u.Scheme == "https" || u.Scheme == "http" && IsLoopbackHost(u.Hostname())) {
			errs = append(errs, &Error{Key: "channels.discord.api_url", Value: c.APIURL, Allowed: "an https URL such as " + DefaultDiscordAPIURL + " (plain http only on this machine)"})
		}
	}
	return errs
}

// discordID reports whether s looks like a Discord user id (a snowflake;
// accounts since 2015 have 17 to 20 digits).
func discordID(s string) bool {
	if len(s) < 17 || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
