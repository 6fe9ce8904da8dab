package oauth

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Provider is an authorization server and what Hestia asks it for.
type Provider struct {
	// Name is the preset ("google", "microsoft") or "custom".
	Name string
	// AuthURL and TokenURL are required; DeviceAuthURL (RFC 8628) and
	// RevokeURL (RFC 7009) are optional.
	AuthURL, TokenURL, DeviceAuthURL, RevokeURL string
	// Scopes are asked for at consent when the account names none.
	Scopes []string
	// Purposes lists, per purpose, scopes any one of which grants it. A
	// provider without the list lets every purpose use its one token.
	Purposes map[Purpose][]string
	// PerResource: an access token is good for one resource only
	// (Microsoft), so each resource's token is asked for separately at
	// refresh with the granted scopes of that resource.
	PerResource bool
	// AuthParams are added to the authorization URL (Google needs
	// access_type=offline to hand out a refresh token).
	AuthParams map[string]string
	// RedirectHost is the host of the loopback redirect URI: 127.0.0.1
	// (RFC 8252 §7.3), or localhost for Entra ID, whose app registrations
	// accept http://localhost with any port.
	RedirectHost string
	// SecretInHeader sends a client secret with HTTP Basic auth (RFC 6749
	// §2.3.1) instead of in the form; Google and Microsoft take the form.
	SecretInHeader bool
	// ManageURL is where the user can see and remove the app's access,
	// shown when there is no revocation endpoint.
	ManageURL string
}

// Google scopes.
const (
	GoogleMailScope     = "https://mail.google.com/"
	GoogleCalendarScope = "https://www.googleapis.com/auth/calendar"
	GoogleCardDAVScope  = "https://www.googleapis.com/auth/carddav"
)

// Google is the preset for Google accounts (Gmail over IMAP/SMTP,
// Calendar over CalDAV, Contacts over CardDAV). Google's device flow
// refuses the Gmail and Calendar scopes, so on a headless machine the
// loopback flow goes through an SSH tunnel instead (docs/oauth.md).
func Google() Provider {
	return Provider{
		Name:          "google",
		AuthURL:       "https://accounts.google.com/o/oauth2/v2/auth",
		TokenURL:      "https://oauth2.googleapis.com/token",
		DeviceAuthURL: "https://oauth2.googleapis.com/device/code",
		RevokeURL:     "https://oauth2.googleapis.com/revoke",
		Scopes:        []string{GoogleMailScope, GoogleCalendarScope, GoogleCardDAVScope},
		Purposes: map[Purpose][]string{
			Mail:     {GoogleMailScope},
			Calendar: {GoogleCalendarScope, "https://www.googleapis.com/auth/calendar.events"},
			Contacts: {GoogleCardDAVScope, "https://www.googleapis.com/auth/contacts", "https://www.googleapis.com/auth/contacts.readonly"},
		},
		// offline: hand out a refresh token; consent: hand out a new one
		// on a reconnect too (Google otherwise omits it).
		AuthParams:   map[string]string{"access_type": "offline", "prompt": "consent"},
		RedirectHost: "127.0.0.1",
		ManageURL:    "https://myaccount.google.com/permissions",
	}
}

// Microsoft scopes. Outlook's IMAP/SMTP take tokens for
// outlook.office.com; calendars, contacts and tasks are Graph's.
const (
	MicrosoftIMAPScope     = "https://outlook.office.com/IMAP.AccessAsUser.All"
	MicrosoftSMTPScope     = "https://outlook.office.com/SMTP.Send"
	MicrosoftCalendarScope = "https://graph.microsoft.com/Calendars.ReadWrite"
	MicrosoftContactsScope = "https://graph.microsoft.com/Contacts.Read"
	MicrosoftTasksScope    = "https://graph.microsoft.com/Tasks.ReadWrite"
	// OfflineAccess makes the Microsoft identity platform hand out a
	// refresh token.
	OfflineAccess = "offline_access"
)

// Microsoft is the preset for the Microsoft identity platform (Microsoft
// 365 and Outlook.com). tenant is "common" (work, school and personal
// accounts; the default), "organizations", "consumers", a tenant id or a
// tenant's domain name. Entra ID has no RFC 7009 revocation endpoint.
func Microsoft(tenant string) Provider {
	if tenant == "" {
		tenant = "common"
	}
	base := "https://login.microsoftonline.com/" + url.PathEscape(tenant) + "/oauth2/v2.0/"
	return Provider{
		Name:          "microsoft",
		AuthURL:       base + "authorize",
		TokenURL:      base + "token",
		DeviceAuthURL: base + "devicecode",
		Scopes: []string{OfflineAccess, MicrosoftIMAPScope, MicrosoftSMTPScope,
			MicrosoftCalendarScope, MicrosoftContactsScope, MicrosoftTasksScope},
		Purposes: map[Purpose][]string{
			Mail:     {MicrosoftIMAPScope, MicrosoftSMTPScope},
			Calendar: {MicrosoftCalendarScope, "https://graph.microsoft.com/Calendars.Read"},
			Contacts: {MicrosoftContactsScope, "https://graph.microsoft.com/Contacts.ReadWrite"},
			Tasks:    {MicrosoftTasksScope, "https://graph.microsoft.com/Tasks.Read"},
		},
		PerResource:  true,
		RedirectHost: "localhost",
		ManageURL:    "https://myaccount.microsoft.com (work or school) or https://account.live.com/consent/Manage (personal)",
	}
}

// Custom is a provider at any endpoints; every purpose uses its one token.
func Custom(authURL, tokenURL, deviceAuthURL, revokeURL string, scopes []string) Provider {
	return Provider{
		Name: "custom", AuthURL: authURL, TokenURL: tokenURL, DeviceAuthURL: deviceAuthURL, RevokeURL: revokeURL,
		Scopes: scopes, RedirectHost: "127.0.0.1", SecretInHeader: true,
	}
}

// oidcScopes are granted by the identity platform itself, not by a
// resource.
var oidcScopes = []string{OfflineAccess, "openid", "profile", "email"}

// ScopeError: the account's grant covers no scope of the purpose asked
// for (or its provider has none). Only a configuration change and a
// reconnect help.
type ScopeError struct {
	Provider string
	Purpose  Purpose
	Wanted   []string // any one of them would do; empty: the provider has none
}

func (e *ScopeError) Error() string {
	if len(e.Wanted) == 0 {
		return fmt.Sprintf("provider %s offers no %s scopes", e.Provider, e.Purpose)
	}
	return fmt.Sprintf("the account was not granted a %s scope (one of %s): add it to scopes and reconnect", e.Purpose, strings.Join(e.Wanted, ", "))
}

// resourceOf is the resource a Microsoft-style scope belongs to: the
// scheme and host of a URL scope, Graph for a short one ("Mail.Read"),
// "" for an OpenID Connect scope.
func resourceOf(scope string) string {
	if slices.Contains(oidcScopes, scope) {
		return ""
	}
	if i := strings.Index(scope, "://"); i > 0 {
		if j := strings.IndexByte(scope[i+3:], '/'); j >= 0 {
			return scope[:i+3+j]
		}
		return scope
	}
	return "https://graph.microsoft.com"
}

// audience picks, for purpose p and the granted scopes, the key of the
// access token to use ("" for a provider with one token) and the scopes
// to ask a refresh for (nil: none, the whole grant).
func (p Provider) audience(purpose Purpose, granted []string) (key string, scopes []string, err error) {
	if purpose != Any && p.Purposes != nil {
		wanted := p.Purposes[purpose]
		i := slices.IndexFunc(granted, func(s string) bool { return slices.Contains(wanted, s) })
		if i < 0 {
			return "", nil, &ScopeError{Provider: p.Name, Purpose: purpose, Wanted: wanted}
		}
		if p.PerResource {
			key = resourceOf(granted[i])
		}
	} else if p.PerResource {
		for _, s := range granted {
			if key = resourceOf(s); key != "" {
				break
			}
		}
	}
	if !p.PerResource || key == "" {
		return "", nil, nil
	}
	for _, s := range granted {
		if r := resourceOf(s); r == key || s == OfflineAccess {
			scopes = append(scopes, s)
		}
	}
	return key, scopes, nil
}
