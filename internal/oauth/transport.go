package oauth

import (
	"io"
	"net/http"
	"strings"
)

// Transport is an http.RoundTripper that sends each request with the
// Source's bearer token (RFC 6750 §2.1). When the server answers 401 with
// a Bearer challenge saying invalid_token (or no error at all: the token
// expired or was revoked early), it invalidates the token and retries the
// request once with a fresh one, if the request body can be replayed.
type Transport struct {
	Source *Source
	Base   http.RoundTripper // nil: http.DefaultTransport
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tok, err := t.Source.Token(ctx)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	r := req.Clone(ctx)
	tok.SetAuthHeader(r)
	resp, err := t.base().RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !staleTokenChallenge(resp.Header) {
		return resp, err
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return resp, nil // cannot send the body again
	}
	t.Source.Invalidate(tok)
	fresh, err := t.Source.Token(ctx)
	if err != nil || fresh.AccessToken == tok.AccessToken {
		// No better token: the first answer is the truth.
		return resp, nil
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	r2 := req.Clone(ctx)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r2.Body = body
	}
	fresh.SetAuthHeader(r2)
	return t.base().RoundTrip(r2)
}

func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// staleTokenChallenge reports whether a 401's WWW-Authenticate is a Bearer
// challenge that a new token may satisfy: error="invalid_token", or no
// error code (RFC 6750 §3.1), but not insufficient_scope or
// invalid_request, which a refresh does not change.
func staleTokenChallenge(h http.Header) bool {
	for _, v := range h.Values("WWW-Authenticate") {
		scheme, params, _ := strings.Cut(strings.TrimSpace(v), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			continue
		}
		code := ""
		for _, p := range splitParams(params) {
			k, val, ok := strings.Cut(p, "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "error") {
				code = strings.Trim(strings.TrimSpace(val), `"`)
			}
		}
		return code == "" || code == "invalid_token"
	}
	return false
}

// splitParams splits auth-params at commas outside quoted strings.
func splitParams(s string) []string {
	var out []string
	inQuote, esc, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case esc:
			esc = false
		case c == '\\' && inQuote:
			esc = true
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
