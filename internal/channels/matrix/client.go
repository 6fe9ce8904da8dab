package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// APIError is an error response from the homeserver (client-server API
// "Standard error response"). Its text never holds the access token.
type APIError struct {
	Op      string // what was being done ("sending a message")
	Status  int
	ErrCode string // M_FORBIDDEN, M_LIMIT_EXCEEDED, …
	Message string
}

func (e *APIError) Error() string {
	code := e.ErrCode
	if code == "" {
		code = "no errcode"
	}
	msg := ""
	if e.Message != "" {
		msg = ": " + e.Message
	}
	return fmt.Sprintf("matrix: %s: HTTP %d (%s)%s", e.Op, e.Status, code, msg)
}

// request is one call to the client-server API.
type request struct {
	op     string // for errors: "sending a message"
	method string
	path   string // escaped, from the homeserver root: "/_matrix/client/v3/…"
	query  url.Values
	body   any // JSON-encoded unless raw is set
	raw    []byte
	ctype  string // content type of raw
	// timeout bounds the call; long polls set it above their poll time.
	timeout time.Duration
	// maxBytes bounds the response body read (default 1 MiB).
	maxBytes int64
}

// call performs r and returns the response body. Errors are classified
// for the relay: rate limits become *channels.RetryAfterError; a refused
// token, a forbidden action and other requests that will never succeed
// are channels.Permanent; the rest (5xx, network) may be retried.
func (a *Adapter) call(ctx context.Context, r request) ([]byte, http.Header, error) {
	if r.timeout <= 0 {
		r.timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	u := a.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var body io.Reader
	ctype := r.ctype
	switch {
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	case r.body != nil:
		b, err := marshal(r.body)
		if err != nil {
			return nil, nil, fmt.Errorf("matrix: %s: encoding the request: %w", r.op, err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, nil, fmt.Errorf("matrix: %s: %w", r.op, err)
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.Token)
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("matrix: %s: %w", r.op, scrub(err))
	}
	defer resp.Body.Close()
	limit := r.maxBytes
	if limit <= 0 {
		limit = 1 << 20
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, nil, fmt.Errorf("matrix: %s: reading the response: %w", r.op, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if int64(len(data)) > limit {
			return nil, nil, fmt.Errorf("matrix: %s: the response is %w (over %d bytes)", r.op, channels.ErrTooLarge, limit)
		}
		return data, resp.Header, nil
	}
	return nil, nil, classify(r.op, resp, data)
}

// classify turns an error response into the error the relay acts on.
func classify(op string, resp *http.Response, data []byte) error {
	var body apiError
	_ = json.Unmarshal(data, &body) // a proxy's HTML error page has no errcode
	e := &APIError{Op: op, Status: resp.StatusCode, ErrCode: body.ErrCode, Message: truncate(strings.TrimSpace(body.Error), 200)}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || body.ErrCode == "M_LIMIT_EXCEEDED":
		return &channels.RetryAfterError{Err: e, After: retryAfter(body.RetryAfterMS, resp.Header.Get("Retry-After"))}
	case resp.StatusCode == http.StatusUnauthorized || body.ErrCode == "M_UNKNOWN_TOKEN" || body.ErrCode == "M_MISSING_TOKEN":
		return channels.Permanent(fmt.Errorf("%w; the homeserver refused the bot's access token: log the bot account in again and put the new token in channels.matrix.token", e))
	case body.ErrCode == "M_FORBIDDEN":
		return channels.Permanent(fmt.Errorf("%w; the bot may not do this (not in the room, or lacking the power level)", e))
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode >= 500:
		return e
	case resp.StatusCode >= 400:
		// Bad JSON, too large, unknown room or event, an endpoint the
		// server lacks: sending the same again fails the same way.
		return channels.Permanent(e)
	}
	return e
}

// retryAfter is the wait a rate limit asks for: retry_after_ms in the
// body, else the Retry-After header (seconds or an HTTP date), else a
// few seconds; never more than an hour, whatever the server says.
func retryAfter(ms int64, header string) time.Duration {
	d := time.Duration(0)
	switch {
	case ms > 0:
		d = time.Duration(min(ms, int64(time.Hour/time.Millisecond))) * time.Millisecond
	case header != "":
		if s, err := strconv.Atoi(strings.TrimSpace(header)); err == nil && s > 0 {
			d = time.Duration(min(s, 3600)) * time.Second
		} else if t, err := http.ParseTime(header); err == nil {
			d = time.Until(t)
		}
	}
	if d <= 0 {
		d = 5 * time.Second
	}
	return min(d, time.Hour)
}

// scrub drops the request URL from a transport error: it holds no token
// (the token goes in a header), but room ids in it need not reach logs
// twice. The underlying cause is kept.
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", strings.ToLower(ue.Op), ue.Err)
	}
	return err
}

// marshal encodes JSON without Go's HTML escaping: formatted bodies are
// full of < and >, and \u003c would triple their size against the
// homeserver's 64 KiB event limit.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// pathSeg escapes one path segment (room ids hold ! and :, event ids $).
func pathSeg(s string) string { return url.PathEscape(s) }
