package config

import "strings"

// SlackChannel configures the slack channel ([channels.slack]); see
// internal/channels/slack. A Slack app needs a bot token (xoxb-…) for the
// Web API and, to receive, either Socket Mode (an app-level token xapp-…
// with connections:write; no public URL) or the Events API (the app's
// signing secret; Slack POSTs to the daemon's public routes).
type SlackChannel struct {
	// Owners are the owner's Slack user ids (U0123…): chat, approve, read.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ID" (chat and read) or
	// "ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// APIURL is the Web API root (tests point it at a fake).
	APIURL string `toml:"api_url"`
	// Token or TokenFile (owner-only) holds the bot token (xoxb-…).
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
	// Mode is how updates arrive: "socket" (Socket Mode, the default) or
	// "events" (the Events API and interactivity POSTed to
	// /channels/slack/events and /channels/slack/interactive).
	Mode string `toml:"mode"`
	// AppToken or AppTokenFile holds the app-level token (xapp-…) Socket
	// Mode connects with.
	AppToken     string `toml:"app_token" secret:"true"`
	AppTokenFile string `toml:"app_token_file"`
	// SigningSecret or SigningSecretFile holds the app's signing secret,
	// which authenticates Events API and interactivity deliveries.
	SigningSecret     string `toml:"signing_secret" secret:"true"`
	SigningSecretFile string `toml:"signing_secret_file"`
}

// Slack modes.
const (
	SlackModeSocket = "socket"
	SlackModeEvents = "events"
)

// Enabled reports whether the channel is configured.
func (c SlackChannel) Enabled() bool { return c.Token != "" || c.TokenFile != "" }

func defaultSlack() SlackChannel {
	return SlackChannel{APIURL: "https://slack.com/api", Mode: SlackModeSocket}
}

func (c SlackChannel) validate() []error {
	const k = "channels.slack"
	var errs []error
	errs = append(errs, validateIdentity(k, c.Enabled(), c.Owners, c.Contacts)...)
	errs = append(errs, validateSecretFile(k+".token_file", c.TokenFile)...)
	errs = append(errs, validateSecretFile(k+".app_token_file", c.AppTokenFile)...)
	errs = append(errs, validateSecretFile(k+".signing_secret_file", c.SigningSecretFile)...)
	errs = append(errs, validateHTTPURL(k+".api_url", c.APIURL, "https://slack.com/api")...)
	// Token shapes are checked only where written inline (a file is read
	// by the app); the value shown is the prefix alone, never the secret.
	if c.Token != "" && !strings.HasPrefix(c.Token, "xoxb-") {
		errs = append(errs, &Error{Key: k + ".token", Value: maskToken(c.Token), Allowed: "the app's Bot User OAuth Token, which starts with xoxb-"})
	}
	if c.AppToken != "" && !strings.HasPrefix(c.AppToken, "xapp-") {
		errs = append(errs, &Error{Key: k + ".app_token", Value: maskToken(c.AppToken), Allowed: "an app-level token, which starts with xapp- (Basic Information → App-Level Tokens, scope connections:write)"})
	}
	switch c.Mode {
	case SlackModeSocket:
		if c.Enabled() && c.AppToken == "" && c.AppTokenFile == "" {
			errs = append(errs, &Error{Key: k + ".app_token", Value: "", Allowed: `an app-level token (xapp-…) in app_token or app_token_file: mode = "socket" connects with it`})
		}
	case SlackModeEvents:
		if c.Enabled() && c.SigningSecret == "" && c.SigningSecretFile == "" {
			errs = append(errs, &Error{Key: k + ".signing_secret", Value: "", Allowed: `the app's signing secret in signing_secret or signing_secret_file: mode = "events" refuses deliveries it cannot authenticate`})
		}
	default:
		errs = append(errs, &Error{Key: k + ".mode", Value: c.Mode, Allowed: `"socket" (Socket Mode, no public URL) or "events" (Events API)`})
	}
	if !c.Enabled() && (c.AppToken != "" || c.AppTokenFile != "" || c.SigningSecret != "" || c.SigningSecretFile != "") {
		errs = append(errs, &Error{Key: k + ".token", Value: "", Allowed: "the bot token (xoxb-…) in token or token_file: the app token or signing secret is set, but without a bot token the channel stays off"})
	}
	return errs
}

// maskToken shows what kind of token a value is without revealing it.
func maskToken(s string) string {
	if i := strings.IndexByte(s, '-'); i > 0 && i <= 5 {
		return s[:i+1] + "…"
	}
	return "…"
}
