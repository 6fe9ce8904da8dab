// Package oauth connects Hestia to accounts whose services take OAuth 2.0
// bearer tokens (Gmail, Google Calendar and Contacts, Microsoft 365) as an
// installed application, the way RFC 8252 describes:
//
//   - connecting: the authorization code grant with PKCE (RFC 7636, S256)
//     through a one-shot loopback redirect on 127.0.0.1 (ConnectLoopback),
//     or the device authorization grant of RFC 8628 for a machine without
//     a browser (ConnectDevice);
//   - keeping: one owner-only JSON file per account under DATA/oauth (Dir),
//     refresh token included, written atomically; its contents are never
//     logged, never put in an error and never copied by `hestia backup`
//     (which copies DATA/db only);
//   - using: Manager.Source hands out a Source per account and purpose
//     whose Token refreshes ahead of expiry, shares one refresh between
//     concurrent callers (and, through a lock file, between processes),
//     persists a rotated refresh token, and turns a dead grant
//     (invalid_grant and its kin) into a *ReconnectError, reported once
//     through Options.OnReconnect; transport failures stay retryable.
//   - Transport puts the bearer token on HTTP requests (CalDAV, Graph) and
//     retries once after a 401 whose WWW-Authenticate says invalid_token.
//
// Providers are presets (Google, Microsoft with a tenant) or Custom
// endpoints. Microsoft's access tokens are good for one resource only
// (outlook.office.com for IMAP/SMTP, graph.microsoft.com for calendars,
// contacts and tasks), so a Microsoft account keeps one grant and one
// access token per resource, each asked for at refresh with that
// resource's scopes; Google's one access token covers every scope.
//
// oauth/oauthtest is an in-process authorization server for tests.
package oauth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Purpose names what a token is for; it picks the scopes (and, for a
// per-resource provider, the access token) a Source asks for.
type Purpose string

const (
	Mail     Purpose = "mail"     // IMAP and SMTP (SASL XOAUTH2 / OAUTHBEARER)
	Calendar Purpose = "calendar" // CalDAV (Google) or Graph (Microsoft)
	Contacts Purpose = "contacts" // CardDAV (Google) or Graph (Microsoft)
	Tasks    Purpose = "tasks"    // Graph To Do (Microsoft)
	// Any asks for the account's one token (or, for a per-resource
	// provider, the first resource it was granted): what doctor checks.
	Any Purpose = ""
)

// Token is an access token. Its String, GoString and LogValue hide the
// secret, so printing or logging one by mistake shows only the expiry.
type Token struct {
	AccessToken string
	TokenType   string // "Bearer" unless the provider says otherwise
	Expiry      time.Time
}

// SetAuthHeader sets r's Authorization header to the token.
func (t Token) SetAuthHeader(r *http.Request) {
	typ := t.TokenType
	if typ == "" || strings.EqualFold(typ, "bearer") {
		typ = "Bearer"
	}
	r.Header.Set("Authorization", typ+" "+t.AccessToken)
}

func (t Token) String() string {
	if t.Expiry.IsZero() {
		return "oauth.Token{[redacted]}"
	}
	return "oauth.Token{[redacted], expires " + t.Expiry.UTC().Format(time.RFC3339) + "}"
}

// GoString keeps %#v from printing the secret.
func (t Token) GoString() string { return t.String() }

// LogValue keeps slog from printing the secret.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", "[redacted]"), slog.Time("expiry", t.Expiry))
}

// ErrNotConnected: the account has no token file (never connected, or
// disconnected). Like a dead grant, only the user can fix it.
var ErrNotConnected = errors.New("not connected")

// ErrReconnect matches every *ReconnectError (errors.Is).
var ErrReconnect = errors.New("the account must be reconnected")

// ReconnectError says the grant is dead: the provider answered a refresh
// with invalid_grant (revoked, expired, password changed) or asked for
// the user's interaction again, or the token file belongs to another
// client id. Retrying cannot help; `hestia accounts connect NAME` does.
// Its text names the account and the provider's error code, never a token.
type ReconnectError struct {
	Account string
	Code    string // the provider's error code, e.g. invalid_grant
	Detail  string // the provider's description, scrubbed of tokens
}

func (e *ReconnectError) Error() string {
	s := fmt.Sprintf("account %s must be reconnected (%s", e.Account, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s + "); run: hestia accounts connect " + e.Account
}

func (e *ReconnectError) Is(target error) bool { return target == ErrReconnect }

// ProviderError is an OAuth error response (RFC 6749 §5.2, RFC 8628 §3.5)
// other than a dead grant: invalid_client, invalid_scope, access_denied,
// expired_token, a 5xx without a body… Description is scrubbed of tokens.
type ProviderError struct {
	Status      int // HTTP status; 0 for an error the redirect carried
	Code        string
	Description string
}

func (e *ProviderError) Error() string {
	s := "the provider refused"
	if e.Code != "" {
		s += ": " + e.Code
	} else if e.Status != 0 {
		s += fmt.Sprintf(" with HTTP %d", e.Status)
	}
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	return s
}

// Retryable reports whether err may go away by itself (a transport error,
// a 5xx, a 429), as opposed to one only the user can fix (a dead grant,
// no connection, a refused client or scope).
func Retryable(err error) bool {
	if err == nil || errors.Is(err, ErrReconnect) || errors.Is(err, ErrNotConnected) {
		return false
	}
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Status >= 500 || pe.Status == http.StatusTooManyRequests || pe.Code == "temporarily_unavailable"
	}
	var ue *UnknownAccountError
	var se *ScopeError
	return !errors.As(err, &ue) && !errors.As(err, &se)
}

// UnknownAccountError: no [[oauth.accounts]] entry has this name.
type UnknownAccountError struct{ Name string }

func (e *UnknownAccountError) Error() string {
	return fmt.Sprintf("no OAuth account named %q in config.toml ([[oauth.accounts]])", e.Name)
}
