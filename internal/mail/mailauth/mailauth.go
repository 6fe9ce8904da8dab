// Package mailauth logs mail clients in with an OAuth 2.0 access token
// over SASL: OAUTHBEARER (RFC 7628) where the server offers it, else
// Google's and Microsoft's XOAUTH2. IMAP (imapsync), SMTP (smtpsend) and
// the setup's connection test share it.
//
// The rule every caller gets from Authenticate: take a token from the
// account's Tokens (refreshed ahead of expiry by package oauth); when the
// server refuses it, tell Tokens it was refused and try once more with a
// fresh one on the same connection (RFC 3501 §6.2.2 and RFC 4954 §4 leave
// the client unauthenticated after a failed exchange, free to try
// again). A dead grant comes back as oauth's *ReconnectError, so sync
// status and doctor name the command that fixes it.
//
// The clients are written here rather than taken from go-sasl: its
// OAUTHBEARER client answers the server's error challenge with a Go error,
// which leaves go-imap's AUTHENTICATE command waiting for a response that
// never comes. RFC 7628 §3.2.3 wants a "%x01" response instead, after
// which the server ends the exchange with a tagged NO.
package mailauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/emersion/go-sasl"

	"github.com/hestia-dev/hestia/internal/oauth"
)

// Mechanism names (RFC 7628 §3; Google's and Microsoft's XOAUTH2).
const (
	OAuthBearer = "OAUTHBEARER"
	XOAuth2     = "XOAUTH2"
)

// Tokens is where an OAuth login gets its access tokens: an
// *oauth.Source for the account's mail purpose.
type Tokens interface {
	Token(ctx context.Context) (oauth.Token, error)
	// Invalidate says a server refused t, so the next Token refreshes.
	Invalidate(t oauth.Token)
}

// Pick chooses the mechanism among those a server offers (case does not
// matter): OAUTHBEARER, the standard, else XOAUTH2.
func Pick(offered []string) (string, error) {
	var has [2]bool
	for _, m := range offered {
		switch strings.ToUpper(strings.TrimSpace(m)) {
		case OAuthBearer:
			has[0] = true
		case XOAuth2:
			has[1] = true
		}
	}
	switch {
	case has[0]:
		return OAuthBearer, nil
	case has[1]:
		return XOAuth2, nil
	}
	list := strings.Join(offered, " ")
	if list == "" {
		list = "none"
	}
	return "", fmt.Errorf("the server offers neither OAUTHBEARER nor XOAUTH2 (it offers: %s); is this the provider's OAuth-enabled host and port?", list)
}

// Client is a SASL client for one OAuth mechanism. After a failed
// exchange, Refusal holds what the server said in its error challenge.
type Client struct {
	mech     string
	user     string
	token    string
	host     string
	port     int
	answered bool
	// xoauth2Answer is XOAUTH2's dummy response (see NewClient).
	xoauth2Answer []byte
	// Refusal is the server's error challenge (RFC 7628 §3.2.2; XOAUTH2
	// sends the same JSON), zero when none came.
	Refusal Refusal
}

// Refusal is the JSON a server sends when it refuses a token.
type Refusal struct {
	Status  string `json:"status"` // invalid_token, or an HTTP-like code ("400", "401")
	Schemes string `json:"schemes"`
	Scope   string `json:"scope"`
}

func (r Refusal) String() string {
	if r.Status == "" {
		return ""
	}
	s := "status " + r.Status
	if r.Scope != "" {
		s += ", scope " + r.Scope
	}
	return s
}

// NewClient returns a client for mech (OAuthBearer or XOAuth2) logging in
// as user with the access token. host and port go into OAUTHBEARER's
// initial response (RFC 7628 §3.1); port 0 leaves it out.
func NewClient(mech, user, token, host string, port int) *Client {
	return &Client{mech: mech, user: user, token: token, host: host, port: port, xoauth2Answer: []byte{}}
}

// ForIMAP makes XOAUTH2 answer an error challenge with %x01 instead of
// an empty response. XOAUTH2 wants an empty line, but go-imap encodes an
// empty continuation as "=", which RFC 3501 §6.2.2 calls invalid base64
// and Dovecot drops the connection for; the content of this dummy
// response is ignored, as the exchange has already failed.
func (c *Client) ForIMAP() *Client {
	c.xoauth2Answer = []byte{0x01}
	return c
}

var _ sasl.Client = (*Client)(nil)

// Start returns the initial response.
func (c *Client) Start() (string, []byte, error) {
	switch c.mech {
	case OAuthBearer:
		// gs2-header "n,a=USER," then kvpairs separated by %x01 (RFC 7628
		// §3.1). A comma or '=' in the authzid is escaped (RFC 5801 §4).
		var b strings.Builder
		b.WriteString("n,")
		if c.user != "" {
			b.WriteString("a=" + strings.NewReplacer("=", "=3D", ",", "=2C").Replace(c.user))
		}
		b.WriteString(",\x01")
		if c.host != "" {
			b.WriteString("host=" + c.host + "\x01")
		}
		if c.port != 0 {
			b.WriteString("port=" + strconv.Itoa(c.port) + "\x01")
		}
		b.WriteString("auth=Bearer " + c.token + "\x01\x01")
		return OAuthBearer, []byte(b.String()), nil
	case XOAuth2:
		return XOAuth2, []byte("user=" + c.user + "\x01auth=Bearer " + c.token + "\x01\x01"), nil
	}
	return "", nil, fmt.Errorf("unknown OAuth SASL mechanism %q", c.mech)
}

// Next answers a challenge. The only challenge either mechanism has is the
// server's error report, answered with the dummy response that lets the
// server end the exchange: %x01 for OAUTHBEARER (RFC 7628 §3.2.3), an
// empty one for XOAUTH2.
func (c *Client) Next(challenge []byte) ([]byte, error) {
	if c.answered {
		return nil, errors.New("the server sent a second challenge after refusing the token")
	}
	c.answered = true
	var r Refusal
	if err := json.Unmarshal(challenge, &r); err == nil {
		c.Refusal = r
	} else {
		c.Refusal = Refusal{Status: "unreadable error challenge"}
	}
	if c.mech == OAuthBearer {
		return []byte{0x01}, nil
	}
	return c.xoauth2Answer, nil
}

// RefusedError: the server refused the access token even after a fresh
// one was fetched. A dead grant is not this (that is *oauth.ReconnectError);
// this is a token the provider still hands out but the mail server will
// not take: IMAP or SMTP AUTH turned off for the mailbox, a grant without
// the mail scope, the wrong user name.
type RefusedError struct {
	Mechanism string
	User      string
	Refusal   Refusal
	Err       error // the server's final answer
}

func (e *RefusedError) Error() string {
	s := fmt.Sprintf("%s login as %s refused even with a freshly refreshed token", e.Mechanism, e.User)
	if r := e.Refusal.String(); r != "" {
		s += " (" + r + ")"
	}
	s += ": " + e.Err.Error() + "; check that the user name is the account's address, that IMAP/SMTP access is enabled for the mailbox, and that the OAuth grant includes the mail scope"
	return s
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Login is one OAuth login attempt's parameters.
type Login struct {
	User    string
	Host    string
	Port    int
	Offered []string // the mechanisms the server advertises
	// Auth runs the SASL exchange on the connection (imapclient's
	// Authenticate, smtp.Client's Auth).
	Auth func(sasl.Client) error
	// Refused reports whether an error from Auth is the server refusing
	// the credentials (an IMAP NO, an SMTP 535), as opposed to a broken
	// connection, which a second token would not mend.
	Refused func(error) bool
	// IMAP: the exchange runs over go-imap (see Client.ForIMAP).
	IMAP bool
}

func (l Login) client(mech, token string) *Client {
	c := NewClient(mech, l.User, token, l.Host, l.Port)
	if l.IMAP {
		c.ForIMAP()
	}
	return c
}

// Authenticate logs in with a token from tokens, and when the server
// refuses it, invalidates it and tries once more with a fresh one. Errors:
// the token source's (oauth.ErrNotConnected, *oauth.ReconnectError, a
// retryable refresh failure), *RefusedError, or the connection's.
func Authenticate(ctx context.Context, tokens Tokens, l Login) error {
	mech, err := Pick(l.Offered)
	if err != nil {
		return err
	}
	tok, err := tokens.Token(ctx)
	if err != nil {
		return fmt.Errorf("getting an OAuth token: %w", err)
	}
	c := l.client(mech, tok.AccessToken)
	err = l.Auth(c)
	if err == nil || !l.Refused(err) {
		return err
	}
	// Refused: the token may have been revoked or expired early. One
	// refresh decides; a dead grant surfaces here as a ReconnectError.
	tokens.Invalidate(tok)
	fresh, terr := tokens.Token(ctx)
	if terr != nil {
		return fmt.Errorf("%s login as %s refused (%w), and getting a fresh token failed: %w", mech, l.User, err, terr)
	}
	if fresh.AccessToken == tok.AccessToken {
		return &RefusedError{Mechanism: mech, User: l.User, Refusal: c.Refusal, Err: err}
	}
	c = l.client(mech, fresh.AccessToken)
	err = l.Auth(c)
	if err != nil && l.Refused(err) {
		return &RefusedError{Mechanism: mech, User: l.User, Refusal: c.Refusal, Err: err}
	}
	return err
}
