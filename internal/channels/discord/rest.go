package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// userAgent is the form Discord requires of bots ("DiscordBot ($url,
// $version)"); requests without it may be refused at the edge.
const userAgent = "DiscordBot (https://github.com/hestia-dev/hestia, 1)"

// maxAnswer bounds a REST answer: the largest we read is a message object.
const maxAnswer = 4 << 20

// maxBucketWait is the longest a request waits for a rate-limit bucket
// that the last answer said was empty; a longer wait is handed to the
// relay as a RetryAfterError instead of stalling the caller.
const maxBucketWait = 5 * time.Second

// APIError is an error answer of the REST API: the HTTP status and
// Discord's JSON error code and message (https://discord.com/developers/docs/topics/opcodes-and-status-codes#json).
type APIError struct {
	Op      string // what failed, e.g. "send message to channel 123"
	Status  int
	Code    int
	Message string
	// Details are the form errors Discord names ("content: Must be 2000
	// or fewer in length."), flattened and sorted.
	Details []string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "discord %s: HTTP %d", e.Op, e.Status)
	if e.Code != 0 {
		fmt.Fprintf(&b, ", code %d", e.Code)
	}
	if e.Message != "" {
		b.WriteString(" " + e.Message)
	}
	if len(e.Details) > 0 {
		b.WriteString(" (" + strings.Join(e.Details, "; ") + ")")
	}
	if e.Status == http.StatusUnauthorized {
		b.WriteString(": the bot token was refused; check channels.discord.token")
	}
	return b.String()
}

// parseAPIError reads an error body. Bodies that are not Discord's JSON
// (an HTML page from a proxy) keep the status alone.
func parseAPIError(op string, status int, body []byte) *APIError {
	e := &APIError{Op: op, Status: status}
	var env struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Errors  json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &env) != nil {
		return e
	}
	e.Code, e.Message = env.Code, clip(env.Message, 200)
	if len(env.Errors) > 0 {
		var tree any
		if json.Unmarshal(env.Errors, &tree) == nil {
			flattenErrors("", tree, &e.Details, 0)
			sort.Strings(e.Details)
			if len(e.Details) > 5 {
				e.Details = append(e.Details[:5], "…")
			}
		}
	}
	return e
}

// flattenErrors walks Discord's nested form errors: objects keyed by field
// name or array index, with "_errors" lists of {code, message} at leaves.
func flattenErrors(path string, v any, out *[]string, depth int) {
	if depth > 8 || len(*out) > 20 {
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k, sub := range obj {
		if k == "_errors" {
			list, _ := sub.([]any)
			for _, item := range list {
				m, _ := item.(map[string]any)
				msg, _ := m["message"].(string)
				if msg == "" {
					msg, _ = m["code"].(string)
				}
				where := path
				if where == "" {
					where = "body"
				}
				*out = append(*out, clip(where, 80)+": "+clip(msg, 120))
			}
			continue
		}
		p := k
		if path != "" {
			p = path + "." + k
		}
		flattenErrors(p, sub, out, depth+1)
	}
}

// classify turns an error answer into what the relay acts on: 429 waits,
// 4xx that cannot succeed by retrying are permanent, the rest (5xx,
// 408) are retried.
func classify(e *APIError, retryAfter time.Duration) error {
	switch {
	case e.Status == http.StatusTooManyRequests:
		return &channels.RetryAfterError{Err: e, After: retryAfter}
	case e.Status == http.StatusRequestTimeout:
		return e
	case e.Status >= 400 && e.Status < 500:
		return channels.Permanent(e)
	}
	return e
}

// rateLimits remembers, per route, buckets the last answer said were
// empty (X-RateLimit-Remaining: 0) and a global stop after a global 429,
// so the next request waits instead of collecting a 429 (Discord bans
// clients that collect too many: https://discord.com/developers/docs/topics/rate-limits).
type rateLimits struct {
	mu     sync.Mutex // guards the fields below
	empty  map[string]time.Time
	global time.Time
}

// until is when route may be called again (zero when now).
func (r *rateLimits) until(route string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.empty[route]
	if r.global.After(t) {
		t = r.global
	}
	return t
}

// record reads the rate-limit headers of an answer.
func (r *rateLimits) record(route string, h http.Header, now time.Time, global bool, retryAfter time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if global {
		r.global = now.Add(retryAfter)
		return
	}
	if retryAfter > 0 {
		r.empty[route] = now.Add(retryAfter)
		return
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if after, err := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64); err == nil && after > 0 && after < 3600 {
			r.empty[route] = now.Add(time.Duration(after * float64(time.Second)))
			return
		}
	}
	delete(r.empty, route)
	if len(r.empty) > 1000 {
		for k, t := range r.empty {
			if t.Before(now) {
				delete(r.empty, k)
			}
		}
	}
}

// request is one REST call.
type request struct {
	method string
	path   string // below the API root, ids already validated
	route  string // rate-limit key: method and path with its major id
	op     string // what it does, for errors
	body   any    // JSON body, or nil
	// raw, when set, is sent as is with contentType (multipart uploads).
	raw         []byte
	contentType string
	// noAuth leaves the bot token off: interaction callbacks and
	// follow-ups are authenticated by the interaction token in the path.
	noAuth bool
}

// do sends a request and decodes a 2xx answer into out (when not nil).
func (a *Adapter) do(ctx context.Context, r request, out any) error {
	if t := a.limits.until(r.route); !t.IsZero() {
		wait := time.Until(t)
		if wait > maxBucketWait {
			return &channels.RetryAfterError{Err: fmt.Errorf("discord %s: rate limited for %s", r.op, wait.Round(time.Millisecond)), After: wait}
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return fmt.Errorf("discord %s: %w", r.op, ctx.Err())
			case <-timer.C:
			}
		}
	}
	var body io.Reader
	contentType := r.contentType
	switch {
	case r.raw != nil:
		body = bytes.NewReader(r.raw)
	case r.body != nil:
		data, err := json.Marshal(r.body)
		if err != nil {
			return fmt.Errorf("discord %s: encoding: %w", r.op, err)
		}
		body, contentType = bytes.NewReader(data), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, r.method, a.api+r.path, body)
	if err != nil {
		return fmt.Errorf("discord %s: building request: %w", r.op, redact(err))
	}
	if !r.noAuth {
		req.Header.Set("Authorization", "Bot "+a.token)
	}
	req.Header.Set("User-Agent", userAgent)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("discord %s: %w", r.op, redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("discord %s: reading answer: %w", r.op, redact(err))
	}
	now := time.Now()
	if resp.StatusCode == http.StatusTooManyRequests {
		after, global := retryAfter(resp.Header, data)
		a.limits.record(r.route, resp.Header, now, global, after)
		e := parseAPIError(r.op, resp.StatusCode, data)
		if e.Message == "" {
			e.Message = "rate limited"
		}
		return classify(e, after)
	}
	a.limits.record(r.route, resp.Header, now, false, 0)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return classify(parseAPIError(r.op, resp.StatusCode, data), 0)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("discord %s: answer is not the expected JSON: %w", r.op, err)
		}
	}
	return nil
}

// retryAfter reads how long a 429 asks to wait: the JSON retry_after
// (seconds, fractional) where present, else the Retry-After header;
// never less than 100 ms nor more than a day.
func retryAfter(h http.Header, body []byte) (time.Duration, bool) {
	var env struct {
		RetryAfter float64 `json:"retry_after"`
		Global     bool    `json:"global"`
	}
	_ = json.Unmarshal(body, &env)
	secs := env.RetryAfter
	if secs <= 0 || math.IsNaN(secs) {
		secs, _ = strconv.ParseFloat(h.Get("Retry-After"), 64)
	}
	if secs <= 0 || math.IsNaN(secs) {
		secs, _ = strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64)
	}
	secs = min(max(secs, 0.1), 86400)
	global := env.Global || strings.EqualFold(h.Get("X-RateLimit-Global"), "true")
	return time.Duration(secs * float64(time.Second)), global
}

// redact drops the request URL from transport errors: interaction
// callbacks carry the interaction's token in their path.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
