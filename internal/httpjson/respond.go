package httpjson

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"

	"github.com/hestia-dev/hestia/internal/store"
)

// Coded is implemented by errors that know how a client should see them:
// the HTTP status and the error code of the body. Their text must be safe
// to show (it names what is wrong with the request, never internals).
type Coded interface {
	error
	HTTPStatus() int
	HTTPCode() string
}

// The codes every handler uses for the same conditions.
const (
	CodeBadRequest = "bad_request"
	CodeNotFound   = "not_found"
	CodeConflict   = "conflict"
	CodeInternal   = "internal"
)

type codedErr struct {
	status int
	code   string
	err    error
}

func (e *codedErr) Error() string    { return e.err.Error() }
func (e *codedErr) Unwrap() error    { return e.err }
func (e *codedErr) HTTPStatus() int  { return e.status }
func (e *codedErr) HTTPCode() string { return e.code }

// Invalid marks err as a bad request (400 bad_request); its text is shown.
func Invalid(err error) error { return &codedErr{http.StatusBadRequest, CodeBadRequest, err} }

// Conflict marks err as a conflict with the resource's state (409) under
// code (a state the client can act on: "executing", "bad_state").
func Conflict(code string, err error) error {
	if code == "" {
		code = CodeConflict
	}
	return &codedErr{http.StatusConflict, code, err}
}

type internalErr struct {
	what string
	err  error
}

func (e *internalErr) Error() string { return e.what + ": " + e.err.Error() }
func (e *internalErr) Unwrap() error { return e.err }

// Internal names what failed for a server error: the client sees what
// ("listing chats failed") and an error id, the log sees err.
func Internal(what string, err error) error { return &internalErr{what, err} }

type loggerKey struct{}

// WithLogger puts the logger server errors are written to in ctx (the
// server's middleware does it for every request).
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.Default()
}

// Respond is the one way a handler answers: v with status when err is nil;
// otherwise the error as its kind says — a Coded error with its status and
// code, store.ErrNotFound as 404 not_found, and anything else as a 500
// whose details go to the log (with an id the client is shown), never to
// the client.
func Respond(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	if err == nil {
		Write(w, status, v)
		return
	}
	var c Coded
	switch {
	case errors.As(err, &c):
		Error(w, c.HTTPStatus(), c.HTTPCode(), err.Error())
	case errors.Is(err, store.ErrNotFound):
		Error(w, http.StatusNotFound, CodeNotFound, err.Error())
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this answer.
		Error(w, 499, "cancelled", "the request was cancelled")
	default:
		var b [4]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		loggerFrom(r.Context()).Error("httpRequestFailed", "method", r.Method, "path", r.URL.Path, "errorId", id, "err", err)
		what := "the server failed to answer this request"
		var ie *internalErr
		if errors.As(err, &ie) {
			what = ie.what
		}
		Error(w, http.StatusInternalServerError, CodeInternal, what+" (error "+id+" in the daemon's log)")
	}
}
