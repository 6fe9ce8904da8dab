package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// OAuthConfig configures the accounts Hestia reaches with OAuth 2.0
// ([[oauth.accounts]]): Gmail and Google Calendar/Contacts, Microsoft 365,
// or any provider at custom endpoints. The user brings the OAuth client id
// (docs/oauth.md); tokens are kept in DATA/oauth, never here.
type OAuthConfig struct {
	Accounts []OAuthAccount `toml:"accounts"`
}

// OAuthAccount is one named account. `hestia accounts connect NAME` signs
// in; mail, calendar and contacts settings refer to it by name.
type OAuthAccount struct {
	Name string `toml:"name"`
	// Provider is google, microsoft or custom.
	Provider string `toml:"provider"`
	// ClientID is the OAuth client (a "Desktop app" client at Google, an
	// app registration's application id at Entra ID).
	ClientID string `toml:"client_id"`
	// ClientSecretFile is an owner-only file holding the client secret,
	// for providers that want one even from installed apps (Google).
	ClientSecretFile string `toml:"client_secret_file"`
	// ClientSecret is the packaged client's secret (PackagedClient), set
	// when the account uses that client; never read from config.toml.
	ClientSecret string `toml:"-"`
	// Packaged says the client id came from PackagedClient, not from
	// config.toml.
	Packaged bool `toml:"-"`
	// Tenant is the Entra ID tenant for provider microsoft: common (the
	// default), organizations, consumers, a tenant id or domain.
	Tenant string `toml:"tenant"`
	// Scopes replace the provider's default scopes (required for custom).
	Scopes []string `toml:"scopes"`
	// Endpoints of a custom provider: auth_url and token_url are required,
	// device_url (RFC 8628) and revoke_url (RFC 7009) optional.
	AuthURL   string `toml:"auth_url"`
	TokenURL  string `toml:"token_url"`
	DeviceURL string `toml:"device_url"`
	RevokeURL string `toml:"revoke_url"`
}

var (
	oauthNameRE   = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,39}$`)
	oauthTenantRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9.-]{0,253}$`)
)

// PackagedClient is the OAuth client that this build or its environment
// carries for a preset provider: HESTIA_OAUTH_GOOGLE_CLIENT_ID (with
// HESTIA_OAUTH_GOOGLE_CLIENT_SECRET; Google's desktop clients have a
// secret that is not secret) or HESTIA_OAUTH_MICROSOFT_CLIENT_ID. Whoever
// packages Hestia sets them at build time (`make dist
// OAUTH_GOOGLE_CLIENT_ID=…`, see docs/oauth.md) or in the service's
// environment, so that the user's account needs no client_id of its own.
// An account's own client_id always wins.
func PackagedClient(env Env, provider string) (id, secret string) {
	switch provider {
	case "google", "microsoft":
		p := "HESTIA_OAUTH_" + strings.ToUpper(provider) + "_CLIENT_"
		return strings.TrimSpace(env(p + "ID")), strings.TrimSpace(env(p + "SECRET"))
	}
	return "", ""
}

// applyPackagedClients gives the accounts without a client id of their
// own the packaged client of their provider, if there is one.
func (c *OAuthConfig) applyPackagedClients(env Env) {
	for i := range c.Accounts {
		a := &c.Accounts[i]
		if a.ClientID != "" {
			continue
		}
		if id, secret := PackagedClient(env, a.Provider); id != "" {
			a.ClientID, a.Packaged = id, true
			if a.ClientSecretFile == "" {
				a.ClientSecret = secret
			}
		}
	}
}

// OAuthProviders are the provider values accepted.
var OAuthProviders = []string{"google", "microsoft", "custom"}

// Account returns the account named name.
func (c OAuthConfig) Account(name string) (OAuthAccount, bool) {
	for _, a := range c.Accounts {
		if a.Name == name {
			return a, true
		}
	}
	return OAuthAccount{}, false
}

func (c OAuthConfig) validate() []error {
	var errs []error
	seen := map[string]bool{}
	for i, a := range c.Accounts {
		key := fmt.Sprintf("oauth.accounts[%d]", i)
		switch {
		case !oauthNameRE.MatchString(a.Name):
			errs = append(errs, &Error{Key: key + ".name", Value: a.Name, Allowed: "a name of lower-case letters, digits, - and _, at most 40 characters (it names the token file)"})
		case seen[a.Name]:
			errs = append(errs, &Error{Key: key + ".name", Value: a.Name, Allowed: "a name no other OAuth account has"})
		}
		seen[a.Name] = true
		custom := a.Provider == "custom"
		switch a.Provider {
		case "google", "microsoft", "custom":
		default:
			errs = append(errs, &Error{Key: key + ".provider", Value: a.Provider, Allowed: strings.Join(OAuthProviders, ", ")})
		}
		if a.ClientID == "" || strings.ContainsAny(a.ClientID, " \t\r\n") {
			allowed := "the OAuth client id you registered at the provider (see docs/oauth.md)"
			if a.Provider == "google" || a.Provider == "microsoft" {
				allowed += "; this build carries no client for " + a.Provider + " (HESTIA_OAUTH_" + strings.ToUpper(a.Provider) + "_CLIENT_ID)"
			}
			errs = append(errs, &Error{Key: key + ".client_id", Value: a.ClientID, Allowed: allowed})
		}
		if a.ClientSecretFile != "" && !filepath.IsAbs(a.ClientSecretFile) {
			errs = append(errs, &Error{Key: key + ".client_secret_file", Value: a.ClientSecretFile, Allowed: "an absolute path of an owner-only file holding the client secret"})
		}
		if a.Tenant != "" {
			if a.Provider != "microsoft" {
				errs = append(errs, &Error{Key: key + ".tenant", Value: a.Tenant, Allowed: "empty: tenant only applies to provider = \"microsoft\""})
			} else if !oauthTenantRE.MatchString(a.Tenant) {
				errs = append(errs, &Error{Key: key + ".tenant", Value: a.Tenant, Allowed: "common, organizations, consumers, a tenant id or a tenant's domain name"})
			}
		}
		for j, s := range a.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n\"") {
				errs = append(errs, &Error{Key: fmt.Sprintf("%s.scopes[%d]", key, j), Value: s, Allowed: "one scope per entry, without spaces"})
			}
		}
		if custom && len(a.Scopes) == 0 {
			errs = append(errs, &Error{Key: key + ".scopes", Value: "", Allowed: "the scopes to ask for (a custom provider has no defaults)"})
		}
		for _, u := range []struct {
			name, value string
			required    bool
		}{{"auth_url", a.AuthURL, true}, {"token_url", a.TokenURL, true}, {"device_url", a.DeviceURL, false}, {"revoke_url", a.RevokeURL, false}} {
			switch {
			case !custom && u.value != "":
				errs = append(errs, &Error{Key: key + "." + u.name, Value: u.value, Allowed: "empty: endpoints are set only for provider = \"custom\" (the presets know theirs)"})
			case custom && u.value == "" && u.required:
				errs = append(errs, &Error{Key: key + "." + u.name, Value: "", Allowed: "the provider's endpoint URL (https)"})
			case custom && u.value != "":
				if msg := endpointProblem(u.value); msg != "" {
					errs = append(errs, &Error{Key: key + "." + u.name, Value: u.value, Allowed: msg})
				}
			}
		}
	}
	return errs
}

// endpointProblem says what is wrong with an OAuth endpoint URL, or "".
// Tokens and codes travel to it, so only https will do, except on this
// machine.
func endpointProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "an https:// URL"
	case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
		return "https:// for a provider that is not on this machine"
	case u.User != nil || u.Fragment != "":
		return "a URL without credentials or a #fragment"
	}
	return ""
}
