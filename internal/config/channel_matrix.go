package config

import (
	"net"
	"net/url"
	"strings"
)

// MatrixChannel configures the matrix channel ([channels.matrix]); see
// internal/channels/matrix. Hestia is a bot account on any homeserver,
// reached through the client-server API with that account's access token.
// It reads unencrypted rooms only (the package doc says why).
type MatrixChannel struct {
	// Owners are the owner's Matrix user ids (@you:example.org): chat,
	// approve, read. Their invites (and contacts') are accepted.
	Owners []string `toml:"owners"`
	// Contacts are trusted people as "ID" (chat and read) or
	// "ID:scope+scope"; their messages are untrusted content.
	Contacts []string `toml:"contacts"`
	// Homeserver is the base URL of the bot's homeserver's client API, where
	// /_matrix/client is served (https://matrix.example.org; tests point it
	// at a fake).
	Homeserver string `toml:"homeserver"`
	// Token or TokenFile (owner-only) holds the bot account's access token.
	Token     string `toml:"token" secret:"true"`
	TokenFile string `toml:"token_file"`
}

// Enabled reports whether the channel is configured.
func (c MatrixChannel) Enabled() bool { return c.Token != "" || c.TokenFile != "" }

func defaultMatrix() MatrixChannel { return MatrixChannel{} }

func (c MatrixChannel) validate() []error {
	const k = "channels.matrix"
	var errs []error
	errs = append(errs, validateIdentity(k, c.Enabled(), c.Owners, c.Contacts)...)
	for _, o := range c.Owners {
		if o = strings.TrimSpace(o); o != "" && !validMatrixUserID(o) {
			errs = append(errs, &Error{Key: k + ".owners", Value: o, Allowed: "Matrix user ids such as @you:example.org"})
		}
	}
	for _, ct := range c.Contacts {
		if id, _, err := ParseChannelContact(ct); err == nil && !validMatrixUserID(id) {
			errs = append(errs, &Error{Key: k + ".contacts", Value: ct, Allowed: `Matrix user ids such as "@anna:example.org" or "@anna:example.org:chat+approve"`})
		}
	}
	errs = append(errs, validateSecretFile(k+".token_file", c.TokenFile)...)
	switch {
	case c.Enabled() && c.Homeserver == "":
		errs = append(errs, &Error{Key: k + ".homeserver", Value: "", Allowed: "the bot's homeserver, the base URL of its client API such as https://matrix.example.org"})
	case c.Homeserver != "":
		if msg := checkHomeserver(c.Homeserver); msg != "" {
			errs = append(errs, &Error{Key: k + ".homeserver", Value: c.Homeserver, Allowed: msg})
		}
		if !c.Enabled() {
			errs = append(errs, &Error{Key: k + ".token", Value: "", Allowed: "the bot account's access token in token or token_file: the homeserver is set, but without a token the channel stays off"})
		}
	}
	if c.Token != "" && strings.ContainsAny(c.Token, " \t\r\n") {
		errs = append(errs, &Error{Key: k + ".token", Value: "…", Allowed: "an access token without spaces (the bot account's token, as its login returned it)"})
	}
	return errs
}

// checkHomeserver returns what is wrong with a homeserver URL, or "". The
// access token travels in every request, so plain http is refused except
// to this machine (a homeserver or proxy on loopback).
func checkHomeserver(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "an https URL such as https://matrix.example.org"
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "https (plain http would send the access token in the clear; it is allowed only to localhost)"
		}
	}
	if strings.Contains(u.Path, "/_matrix") {
		return "the base URL without /_matrix/… (https://matrix.example.org, not https://matrix.example.org/_matrix/client)"
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "a plain base URL such as https://matrix.example.org (no query, fragment or user)"
	}
	return ""
}

// validMatrixUserID reports whether s looks like a Matrix user id,
// "@localpart:server.name" (the server part may carry a port).
func validMatrixUserID(s string) bool {
	if len(s) < 4 || len(s) > 255 || s[0] != '@' {
		return false
	}
	local, server, ok := strings.Cut(s[1:], ":")
	if !ok || local == "" || server == "" {
		return false
	}
	return !strings.ContainsAny(s, " \t\r\n/")
}
