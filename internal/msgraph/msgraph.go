// Package msgraph is the small Microsoft Graph (v1.0) client the Microsoft
// 365 calendar and contacts mirrors share (calendar/graphcal,
// contacts/graphcards): authenticated JSON requests, collections followed
// through @odata.nextLink, delta rounds ending in an @odata.deltaLink, and
// the service's limits handled the way its documentation asks:
//
//   - 429 Too Many Requests (and 503/504 for reads) is retried after the
//     Retry-After the service gave (seconds or an HTTP date; a doubling
//     backoff without one), at most MaxRetries times, through an
//     injectable Sleep so that tests never wait;
//   - 410 Gone on a delta or skip token (syncStateNotFound, resyncRequired)
//     is ErrSyncReset: the caller starts a new round, a full resync;
//   - 412 Precondition Failed (an If-Match that no longer matches) is
//     ErrConflict, 404 ErrNotFound, 401/403 ErrRefused.
//
// Links the service hands back (nextLink, deltaLink) are followed only on
// the base URL's own scheme and host, so the bearer token never leaves for
// another server. The client authenticates with a TokenSource, or leaves
// it to the HTTP client's transport (oauth.Transport, which also refreshes
// after a 401).
//
// msgraph/graphtest is an in-process fake of the endpoints used.
package msgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultBaseURL is Graph's global v1.0 endpoint.
const DefaultBaseURL = "https://graph.microsoft.com/v1.0"

// TokenSource hands out the access token requests carry.
type TokenSource interface {
	Token(ctx context.Context) (string, error)
}

// StaticToken is a TokenSource of one fixed token (tests).
type StaticToken string

// Token implements TokenSource.
func (t StaticToken) Token(context.Context) (string, error) { return string(t), nil }

// Sentinel errors; *Error matches them with errors.Is by status.
var (
	ErrNotFound  = errors.New("not found")
	ErrConflict  = errors.New("changed since it was read (412)")
	ErrRefused   = errors.New("refused")
	ErrThrottled = errors.New("throttled")
	// ErrSyncReset: the delta or skip token expired (410 Gone); the
	// round must start over from scratch.
	ErrSyncReset = errors.New("delta token expired: a full resync is needed")
)

// Error is an unsuccessful answer: the HTTP status and Graph's error code
// and message ({"error":{"code","message"}}).
type Error struct {
	Method, Path string
	Status       int
	Code         string
	Message      string
	// RetryAfter is what a throttling answer asked to wait.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	s := fmt.Sprintf("graph %s %s: HTTP %d", e.Method, e.Path, e.Status)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// Is maps the status to the package's sentinel errors.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusPreconditionFailed
	case ErrRefused:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden ||
			(e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests && e.Status != http.StatusRequestTimeout &&
				e.Status != http.StatusNotFound && e.Status != http.StatusPreconditionFailed && e.Status != http.StatusGone)
	case ErrThrottled:
		return e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable
	case ErrSyncReset:
		return e.Status == http.StatusGone || strings.EqualFold(e.Code, "syncStateNotFound") || strings.EqualFold(e.Code, "resyncRequired")
	}
	return false
}

// Client talks to Graph. The zero value is not usable: HTTP is required.
type Client struct {
	// BaseURL is the service root (DefaultBaseURL when empty), without a
	// trailing slash; paths are appended to it.
	BaseURL string
	HTTP    *http.Client
	// Tokens authenticates requests; nil leaves it to HTTP's transport.
	Tokens TokenSource
	// Sleep waits out a throttling answer; nil sleeps on a timer. Tests
	// pass one that records the wait and returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxRetries bounds the retries of one request (default 5).
	MaxRetries int
	// MaxWait is the longest Retry-After honoured (default 2 minutes); a
	// longer one fails the request with ErrThrottled, for the next pass.
	MaxWait time.Duration
	Log     *slog.Logger
}

// maxBody bounds one answer (a page of events with their bodies).
const maxBody = 32 << 20

func (c *Client) base() string {
	if c.BaseURL == "" {
		return DefaultBaseURL
	}
	return strings.TrimSuffix(c.BaseURL, "/")
}

// resolve turns a path ("/me/calendars") or a link the service returned
// into a URL, refusing links to another scheme or host.
func (c *Client) resolve(ref string) (string, error) {
	base, err := url.Parse(c.base())
	if err != nil {
		return "", fmt.Errorf("graph base URL %q: %w", c.base(), err)
	}
	if strings.HasPrefix(ref, "/") {
		return c.base() + ref, nil
	}
	u, err := url.Parse(ref)
	if err != nil || !u.IsAbs() {
		return "", fmt.Errorf("graph link %q is neither a path nor an absolute URL", ref)
	}
	if !strings.EqualFold(u.Scheme, base.Scheme) || !strings.EqualFold(u.Host, base.Host) {
		// A link elsewhere would carry the token there.
		return "", fmt.Errorf("graph link to %s://%s refused: not the service at %s", u.Scheme, u.Host, base.Host)
	}
	return u.String(), nil
}

// Response is a successful answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// ETag is the answer's ETag header, or the body's @odata.etag.
func (r *Response) ETag() string {
	if e := r.Header.Get("ETag"); e != "" {
		return e
	}
	var v struct {
		ETag string `json:"@odata.etag"`
	}
	if json.Unmarshal(r.Body, &v) == nil {
		return v.ETag
	}
	return ""
}

// Do sends one request and returns a 2xx answer, retrying throttled ones.
// ref is a path below BaseURL or a link the service returned; body, when
// not nil, is sent as JSON.
func (c *Client) Do(ctx context.Context, method, ref string, body []byte, hdr http.Header) (*Response, error) {
	u, err := c.resolve(ref)
	if err != nil {
		return nil, err
	}
	retries := c.MaxRetries
	if retries <= 0 {
		retries = 5
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, method, u, body, hdr)
		if err != nil {
			return nil, err
		}
		if resp.Status < 300 {
			return resp, nil
		}
		gerr := apiError(method, ref, resp)
		if !c.retryable(method, resp.Status) || attempt >= retries {
			return nil, gerr
		}
		wait := gerr.RetryAfter
		if wait <= 0 {
			wait = time.Second << attempt
		}
		if wait > c.maxWait() {
			return nil, gerr
		}
		c.log().Info("graphThrottled", "method", method, "status", resp.Status, "wait", wait, "attempt", attempt+1)
		if err := c.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// retryable: a 429 was not processed, whatever the method; a 503/504 is
// retried for reads only, since a write may have happened.
func (c *Client) retryable(method string, status int) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return method == http.MethodGet
	}
	return false
}

func (c *Client) maxWait() time.Duration {
	if c.MaxWait > 0 {
		return c.MaxWait
	}
	return 2 * time.Minute
}

func (c *Client) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if c.Sleep != nil {
		return c.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) once(ctx context.Context, method, u string, body []byte, hdr http.Header) (*Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("graph %s: %w", method, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Tokens != nil {
		tok, err := c.Tokens.Token(ctx)
		if err != nil {
			return nil, fmt.Errorf("graph: getting an access token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("graph %s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("graph %s %s: reading the answer: %w", method, req.URL.Path, err)
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("graph %s %s: answer larger than %d bytes", method, req.URL.Path, maxBody)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}, nil
}

func apiError(method, ref string, r *Response) *Error {
	p := ref
	if u, err := url.Parse(ref); err == nil {
		p = u.Path // query strings carry tokens; keep them out of errors
	}
	e := &Error{Method: method, Path: p, Status: r.Status, RetryAfter: RetryAfter(r.Header.Get("Retry-After"), time.Now())}
	var v struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(r.Body, &v) == nil {
		e.Code, e.Message = v.Error.Code, truncate(v.Error.Message, 300)
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// RetryAfter parses a Retry-After header (RFC 9110 §10.2.3): delay
// seconds or an HTTP date; 0 when absent or unreadable.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// GetJSON fetches ref and decodes the answer into out.
func (c *Client) GetJSON(ctx context.Context, ref string, hdr http.Header, out any) (*Response, error) {
	resp, err := c.Do(ctx, http.MethodGet, ref, nil, hdr)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(resp.Body, out); err != nil {
		return resp, fmt.Errorf("graph GET %s: reading the answer: %w", pathOf(ref), err)
	}
	return resp, nil
}

func pathOf(ref string) string {
	if u, err := url.Parse(ref); err == nil {
		return u.Path
	}
	return ref
}

// page is one page of a collection or a delta round.
type page struct {
	Value     []json.RawMessage `json:"value"`
	NextLink  string            `json:"@odata.nextLink"`
	DeltaLink string            `json:"@odata.deltaLink"`
}

// maxPages bounds one listing or round (a service that links pages in a
// circle must not keep a pass going forever).
const maxPages = 10000

// List fetches every page of the collection at ref, calling fn with each
// page's items.
func (c *Client) List(ctx context.Context, ref string, hdr http.Header, fn func(items []json.RawMessage) error) error {
	for n := 0; ref != ""; n++ {
		if n >= maxPages {
			return fmt.Errorf("graph GET %s: more than %d pages", pathOf(ref), maxPages)
		}
		var p page
		if _, err := c.GetJSON(ctx, ref, hdr, &p); err != nil {
			return err
		}
		if err := fn(p.Value); err != nil {
			return err
		}
		ref = p.NextLink
	}
	return nil
}

// Item is one entry of a delta page: a changed resource, or a removal
// (@removed) of which only the id is known.
type Item struct {
	ID      string
	Removed bool
	// Reason is @removed's reason: "deleted" (gone for good) or
	// "changed" (moved out of the collection or the window).
	Reason string
	Raw    json.RawMessage
}

// Delta runs one delta round: from start (the first request of a full
// round, or the delta link the previous round ended with) through every
// @odata.nextLink, calling fn with each page's items; it returns the
// @odata.deltaLink that starts the next round. An expired token is
// ErrSyncReset. Entries that are not objects with an id are passed with
// an empty ID, for the caller to report and skip.
func (c *Client) Delta(ctx context.Context, start string, hdr http.Header, fn func(items []Item) error) (string, error) {
	ref := start
	for n := 0; ; n++ {
		if n >= maxPages {
			return "", fmt.Errorf("graph delta %s: more than %d pages", pathOf(start), maxPages)
		}
		var p page
		if _, err := c.GetJSON(ctx, ref, hdr, &p); err != nil {
			if errors.Is(err, ErrSyncReset) {
				return "", fmt.Errorf("%w (%v)", ErrSyncReset, err)
			}
			return "", err
		}
		items := make([]Item, 0, len(p.Value))
		for _, raw := range p.Value {
			var head struct {
				ID      string `json:"id"`
				Removed *struct {
					Reason string `json:"reason"`
				} `json:"@removed"`
			}
			it := Item{Raw: raw}
			if json.Unmarshal(raw, &head) == nil {
				it.ID = head.ID
				if head.Removed != nil {
					it.Removed, it.Reason = true, head.Removed.Reason
				}
			}
			items = append(items, it)
		}
		if err := fn(items); err != nil {
			return "", err
		}
		switch {
		case p.NextLink != "":
			ref = p.NextLink
		case p.DeltaLink != "":
			return p.DeltaLink, nil
		default:
			return "", fmt.Errorf("graph delta %s: a page with neither a next nor a delta link", pathOf(ref))
		}
	}
}

// Prefer builds the Prefer header the mirrors send: times in UTC (the
// event keeps its own zone in originalStartTimeZone), immutable ids (an
// event keeps its id when moved between folders) and, when pageSize > 0,
// the page size asked for.
func Prefer(pageSize int) http.Header {
	vals := []string{`outlook.timezone="UTC"`, `IdType="ImmutableId"`}
	if pageSize > 0 {
		vals = append(vals, "odata.maxpagesize="+strconv.Itoa(pageSize))
	}
	return http.Header{"Prefer": {strings.Join(vals, ", ")}}
}

// Quote quotes a value for a path segment.
func Quote(id string) string { return url.PathEscape(id) }
