package llm

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code is the stable classification of a model call failure. Callers switch
// on it (e.g. the agent compacts context on CodeContextTooLarge); the set
// only grows.
type Code string

// Error codes.
const (
	CodeNetwork          Code = "network"           // connection refused/reset, DNS, dropped stream
	CodeRateLimited      Code = "rate_limited"      // 429 or provider overload
	CodeAuth             Code = "auth"              // 401/403, bad or missing key
	CodeBilling          Code = "billing"           // 402, quota or credit exhausted
	CodeContextTooLarge  Code = "context_too_large" // prompt exceeds the model's window
	CodeModelUnavailable Code = "model_unavailable" // unknown model, 404, 503, not loaded
	CodeBadRequest       Code = "bad_request"       // 400/422 the provider rejected
	CodeTimeout          Code = "timeout"           // the shared deadline passed
	CodeUnknown          Code = "unknown"           // anything else, incl. malformed replies
)

// Error is a classified model call failure. Message is one plain sentence
// safe to show a user; Body is the provider's error body, redacted and
// bounded, for logs only.
type Error struct {
	Code     Code
	Message  string
	Provider string // target name, e.g. "openrouter"
	Model    string
	Status   int    // HTTP status, 0 when none was received
	Body     string // redacted, at most MaxErrorBody bytes
	// RetryAfter is the provider's requested wait, 0 when absent.
	RetryAfter time.Duration
	// Partial is true when part of a streamed reply had already reached
	// the caller before the failure.
	Partial bool
	Err     error // underlying cause, may be nil
}

func (e *Error) Error() string {
	s := string(e.Code) + ": " + e.Message
	if e.Provider != "" {
		s += " (" + e.Provider
		if e.Model != "" {
			s += " " + e.Model
		}
		if e.Status != 0 {
			s += fmt.Sprintf(", HTTP %d", e.Status)
		}
		s += ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the classification of err: the Code of a wrapped *Error,
// CodeTimeout for deadline errors, "" for nil and context cancellation
// (the caller stopped; nothing failed), CodeUnknown otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var le *Error
	if errors.As(err, &le) {
		return le.Code
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return CodeTimeout
	}
	if errors.Is(err, context.Canceled) {
		return ""
	}
	return CodeUnknown
}

// retryable reports whether another target may succeed where this one
// failed. A bad request is the caller's fault and fails the same way
// everywhere. An oversized prompt does fall through, because the next target
// may have a larger window. Whether time is left is the router's question.
func (c Code) retryable() bool {
	switch c {
	case CodeBadRequest, "":
		return false
	}
	return true
}
