package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// endpointClient speaks to a provider's token and revocation endpoints
// (RFC 6749 §4.1.3, §6; RFC 8628 §3.4; RFC 7009) as one client.
type endpointClient struct {
	p        Provider
	clientID string
	secret   string
	http     *http.Client
	now      func() time.Time
}

// tokenResult is a successful token response (RFC 6749 §5.1).
type tokenResult struct {
	Access  Token
	Refresh string   // empty: the provider kept the old one
	Scopes  []string // nil: the response did not say
}

// maxEndpointBody bounds what is read from a token endpoint.
const maxEndpointBody = 1 << 20

// token posts form to the token endpoint. secrets are scrubbed from any
// provider text that ends up in the error.
func (c *endpointClient) token(ctx context.Context, form url.Values, secrets ...string) (tokenResult, error) {
	body, status, ctype, err := c.post(ctx, c.p.TokenURL, form)
	if err != nil {
		return tokenResult{}, err
	}
	return parseTokenResponse(status, ctype, body, c.now(), append(secrets, c.secret)...)
}

// revoke asks the provider to revoke token (RFC 7009 §2.1). A token the
// server does not know is answered with 200 too.
func (c *endpointClient) revoke(ctx context.Context, token, hint string) error {
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	body, status, ctype, err := c.post(ctx, c.p.RevokeURL, form)
	if err != nil {
		return err
	}
	if status/100 == 2 {
		return nil
	}
	return errorResponse(status, ctype, body, token, c.secret)
}

func (c *endpointClient) post(ctx context.Context, endpoint string, form url.Values) ([]byte, int, string, error) {
	basic := c.secret != "" && c.p.SecretInHeader
	if !basic {
		form.Set("client_id", c.clientID)
		if c.secret != "" {
			form.Set("client_secret", c.secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, 0, "", fmt.Errorf("bad endpoint %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 §2.3.1: both halves form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(c.clientID), url.QueryEscape(c.secret))
	}
	hc := c.http
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// url.Error names the endpoint, never the form: safe to show.
		return nil, 0, "", fmt.Errorf("reaching %s: %w", hostOf(endpoint), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxEndpointBody))
	if err != nil {
		return nil, 0, "", fmt.Errorf("reading the answer of %s: %w", hostOf(endpoint), err)
	}
	return body, resp.StatusCode, resp.Header.Get("Content-Type"), nil
}

func hostOf(endpoint string) string {
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		return u.Host
	}
	return "the provider"
}

// rawTokenResponse is RFC 6749 §5.1 and §5.2 in one; expires_in is a
// number, but some servers send it as a string.
type rawTokenResponse struct {
	AccessToken      string          `json:"access_token"`
	TokenType        string          `json:"token_type"`
	RefreshToken     string          `json:"refresh_token"`
	ExpiresIn        json.RawMessage `json:"expires_in"`
	Scope            string          `json:"scope"`
	Error            string          `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// parseTokenResponse turns a token endpoint's answer into a result or an
// error whose text holds none of the secrets (nor any token in body).
func parseTokenResponse(status int, contentType string, body []byte, now time.Time, secrets ...string) (tokenResult, error) {
	var raw rawTokenResponse
	media, _, _ := mime.ParseMediaType(contentType)
	decoded := false
	switch media {
	case "application/x-www-form-urlencoded", "text/plain":
		// GitHub-style servers answer with a form.
		if v, err := url.ParseQuery(string(body)); err == nil {
			raw = rawTokenResponse{AccessToken: v.Get("access_token"), TokenType: v.Get("token_type"),
				RefreshToken: v.Get("refresh_token"), Scope: v.Get("scope"), Error: v.Get("error"),
				ErrorDescription: v.Get("error_description")}
			if e := v.Get("expires_in"); e != "" {
				raw.ExpiresIn = json.RawMessage(strconv.Quote(e))
			}
			decoded = true
		}
	default:
		decoded = json.Unmarshal(body, &raw) == nil
	}
	// Whatever came back, these are secrets too.
	secrets = append(secrets, raw.AccessToken, raw.RefreshToken)
	if status/100 != 2 || raw.Error != "" {
		if !decoded || raw.Error == "" {
			return tokenResult{}, &ProviderError{Status: status, Description: scrub(statusText(status, body), secrets)}
		}
		return tokenResult{}, &ProviderError{Status: status, Code: scrub(raw.Error, secrets), Description: scrub(raw.ErrorDescription, secrets)}
	}
	if !decoded {
		return tokenResult{}, fmt.Errorf("the token endpoint answered HTTP %d with a body that is not a token response (%s)", status, media)
	}
	if raw.AccessToken == "" {
		return tokenResult{}, errors.New("the token endpoint answered without an access_token")
	}
	if raw.TokenType != "" && !strings.EqualFold(raw.TokenType, "bearer") {
		return tokenResult{}, fmt.Errorf("the token endpoint handed out a %q token; only Bearer tokens are supported", scrub(raw.TokenType, secrets))
	}
	r := tokenResult{Access: Token{AccessToken: raw.AccessToken, TokenType: "Bearer"}, Refresh: raw.RefreshToken}
	if len(raw.ExpiresIn) > 0 && string(raw.ExpiresIn) != "null" {
		s := strings.Trim(string(raw.ExpiresIn), `"`)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return tokenResult{}, fmt.Errorf("the token endpoint answered an expires_in that is not a number of seconds")
		}
		// A lifetime past ten years is nonsense; cap it rather than overflow.
		n = min(n, 10*365*24*3600)
		r.Access.Expiry = now.Add(time.Duration(n) * time.Second)
	}
	if raw.Scope != "" {
		r.Scopes = strings.Fields(raw.Scope)
	}
	return r, nil
}

// errorResponse reads an error out of a non-token endpoint's answer
// (revocation, device authorization).
func errorResponse(status int, contentType string, body []byte, secrets ...string) error {
	_, err := parseTokenResponse(status, contentType, body, time.Time{}, secrets...)
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	return &ProviderError{Status: status, Description: scrub(statusText(status, body), secrets)}
}

func statusText(status int, body []byte) string {
	s := http.StatusText(status)
	if t := strings.TrimSpace(string(body)); t != "" && len(t) < 200 && !strings.ContainsAny(t, "<{") {
		s += ": " + t
	}
	return s
}

// scrub makes provider text safe to show: every secret replaced, control
// characters dropped, at most 300 bytes.
func scrub(s string, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		cut := 300
		for cut > 0 && (s[cut]&0xC0) == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// reconnectCodes are the refresh errors after which only the user can
// help: the grant is revoked, expired or needs their consent again.
var reconnectCodes = []string{"invalid_grant", "interaction_required", "consent_required", "login_required"}

// classifyRefresh turns a refresh failure into a *ReconnectError where
// the grant is dead; anything else is returned as it is.
func classifyRefresh(account string, err error) error {
	var pe *ProviderError
	if errors.As(err, &pe) && slices.Contains(reconnectCodes, pe.Code) {
		return &ReconnectError{Account: account, Code: pe.Code, Detail: pe.Description}
	}
	return err
}
