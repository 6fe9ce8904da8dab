package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// MaxErrorBody bounds the provider error text kept in Error.Body (after
// redaction), so a provider that answers an error with a megabyte of HTML
// cannot flood logs.
const MaxErrorBody = 512

// readErrorBodyLimit bounds how much of an error body is read at all.
const readErrorBodyLimit = 16 << 10

var (
	// Secrets a provider might echo back: API keys, bearer tokens,
	// key=value credentials, and long opaque tokens.
	redactKeyed  = lazyre.New(`(?i)("?(?:api[_-]?key|access[_-]?token|token|secret|password|authorization)"?\s*[:=]\s*"?)([^\s",}]+)`)
	redactBearer = lazyre.New(`(?i)(bearer\s+)\S+`)
	redactSK     = lazyre.New(`\b(sk|pk|rk|key)-[A-Za-z0-9_\-]{6,}`)
	redactLong   = lazyre.New(`[A-Za-z0-9_\-+/]{40,}={0,2}`)
	spaces       = lazyre.New(`\s+`)
)

// Redact removes credentials from provider text and bounds it to
// MaxErrorBody bytes. secrets are literal values (the target's API key)
// removed wherever they appear.
func Redact(body string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			body = strings.ReplaceAll(body, s, "[redacted]")
		}
	}
	body = redactBearer.ReplaceAllString(body, "${1}[redacted]")
	body = redactKeyed.ReplaceAllString(body, "${1}[redacted]")
	body = redactSK.ReplaceAllString(body, "[redacted]")
	body = redactLong.ReplaceAllString(body, "[redacted]")
	body = strings.TrimSpace(spaces.ReplaceAllString(body, " "))
	if len(body) > MaxErrorBody {
		cut := MaxErrorBody
		for cut > 0 && !utf8.RuneStart(body[cut]) {
			cut--
		}
		body = body[:cut] + "…"
	}
	return strings.ToValidUTF8(body, "?")
}

var (
	reContext = lazyre.New(`(?i)context[_ ]length|context window|maximum context|prompt is too long|too many tokens|reduce the length|input is too long|exceeds the (?:model'?s? )?(?:context|maximum)|exceeds the available context|exceed_context_size|max_tokens.*exceed|n_ctx`)
	reModel   = lazyre.New(`(?i)model[^.]{0,80}(?:not found|does not exist|not available|unknown|not loaded|no such)|no (?:such|endpoints? found for) model|unknown model|model_not_found`)
	reBilling = lazyre.New(`(?i)insufficient[_ ]quota|insufficient (?:balance|credit|funds)|billing|credit balance|payment required|exceeded your current quota|out of credits`)
)

// classifyHTTP turns a non-2xx provider answer into an *Error.
func classifyHTTP(status int, header http.Header, body string) *Error {
	e := &Error{Status: status, Body: body}
	if header != nil {
		e.RetryAfter = parseRetryAfter(header.Get("Retry-After"))
	}
	switch {
	case reBilling.MatchString(body) || status == http.StatusPaymentRequired:
		e.Code, e.Message = CodeBilling, "The model provider refused the request for billing or quota reasons."
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code, e.Message = CodeAuth, "The model provider rejected the API key."
	case status == http.StatusTooManyRequests || status == 529:
		e.Code, e.Message = CodeRateLimited, "The model provider is rate limiting or overloaded."
	case status == http.StatusRequestEntityTooLarge || reContext.MatchString(body):
		e.Code, e.Message = CodeContextTooLarge, "The conversation is too long for the model's context window."
	case status == http.StatusNotFound || reModel.MatchString(body):
		e.Code, e.Message = CodeModelUnavailable, "The configured model is not available at the provider."
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		e.Code, e.Message = CodeTimeout, "The model provider timed out."
	case status == http.StatusBadRequest || status == http.StatusUnprocessableEntity:
		e.Code, e.Message = CodeBadRequest, "The model provider rejected the request as invalid."
	case status >= 500:
		e.Code, e.Message = CodeModelUnavailable, "The model provider failed to answer."
	default:
		e.Code, e.Message = CodeUnknown, "The model provider answered with an unexpected status."
	}
	return e
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// classifyTransport turns a failure to talk to the provider (no HTTP
// status, or the body broke off) into an *Error. ctx is the request's
// context, to tell our deadline from a network failure.
func classifyTransport(ctx context.Context, err error) *Error {
	e := &Error{Err: err}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded)):
		e.Code, e.Message = CodeTimeout, "The model did not answer before the request deadline ("+keyTurn+")."
	case errors.As(err, &ne) && ne.Timeout():
		e.Code, e.Message = CodeTimeout, "The connection to the model provider timed out ("+keyConnect+")."
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) || errors.As(err, new(*net.OpError)) ||
		errors.As(err, new(*net.DNSError)):
		e.Code, e.Message = CodeNetwork, "The connection to the model provider failed."
	default:
		e.Code, e.Message = CodeNetwork, "The connection to the model provider failed."
	}
	return e
}

// malformed is the error for a reply that is not the expected JSON.
func malformed(err error) *Error {
	return &Error{Code: CodeUnknown, Message: "The model provider sent a malformed reply.", Err: err}
}

func readBoundedBody(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, readErrorBodyLimit))
	return string(b)
}

// MaxReplyBytes bounds the body of one chat reply as received, streamed or
// not. Real replies are far smaller (a long answer is tens of KiB); the cap
// only stops a broken or hostile server from filling memory until the
// request deadline.
const MaxReplyBytes = 16 << 20

// capReader fails with a malformed-reply *Error once more than left bytes
// were asked for, so decoders and the SSE reader stop on it.
type capReader struct {
	r    io.Reader
	left int64
}

// capReply bounds a reply body to MaxReplyBytes.
func capReply(r io.Reader) io.Reader { return &capReader{r: r, left: MaxReplyBytes} }

func (c *capReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// A new *Error each time: callers stamp the target onto it.
		return 0, malformed(fmt.Errorf("the reply is larger than %d bytes", MaxReplyBytes))
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
