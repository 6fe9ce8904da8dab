package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Authenticator decides who a request to /api or /v1 is, beyond the local
// token. internal/devices implements it with per-device scoped tokens; the
// server only knows this seam, so the credential model can change without
// touching the listener, the host guard or pairing's rate limits.
type Authenticator interface {
	// Authenticate checks credential (the bearer value) for r. On success
	// it returns the context the request runs with (carrying the caller's
	// identity; cancelling it ends the request, which is how a revoked
	// device's open streams close) and a release func called when the
	// request ends. An error wrapping ErrForbidden is a known caller
	// lacking the scope (403 with the error's text); any other error is
	// the uniform 401.
	Authenticate(r *http.Request, credential string) (ctx context.Context, release func(), err error)
	// PairCreated is told of a fresh pairing code and what the device it
	// pairs will be; an error wrapping ErrInvalidPairing is a 400.
	PairCreated(ctx context.Context, code string, req PairRequest) error
	// Paired returns the credential handed to the client that redeemed
	// code (a new device token).
	Paired(ctx context.Context, code string) (string, error)
}

// PairRequest is the optional body of POST /api/pair/codes.
type PairRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
}

// Errors an Authenticator returns.
var (
	ErrForbidden      = errors.New("forbidden")
	ErrInvalidPairing = errors.New("invalid pairing request")
)

// SetAuthenticator installs a; call it before Serve.
func (s *Server) SetAuthenticator(a Authenticator) { s.opts.Auth = a }

// authenticate is requireToken unless an Authenticator is configured.
// The choice is made per request because the Authenticator is installed
// after New (its store opens with the other components).
func (s *Server) authenticate(next http.Handler) http.Handler {
	tokenOnly := s.requireToken(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Auth == nil {
			tokenOnly.ServeHTTP(w, r)
			return
		}
		h := r.Header.Get("Authorization")
		const prefix = "Bearer "
		cred := ""
		if len(h) > len(prefix) && strings.EqualFold(h[:len(prefix)], prefix) {
			cred = h[len(prefix):]
		}
		var (
			ctx     context.Context
			release func()
			err     error
		)
		if cred == "" {
			err = errors.New("no credential")
		} else {
			ctx, release, err = s.opts.Auth.Authenticate(r, cred)
		}
		switch {
		case errors.Is(err, ErrForbidden):
			httpjson.Error(w, http.StatusForbidden, "forbidden", strings.TrimPrefix(err.Error(), ErrForbidden.Error()+": "))
			return
		case err != nil:
			w.Header().Set("WWW-Authenticate", `Bearer realm="hestia"`)
			httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "a valid bearer token is required")
			return
		}
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// pairCreateCode is POST /api/pair/codes: a code plus, with an
// Authenticator, the name and scopes of the device it will pair. The body
// is optional (older clients send none).
func (s *Server) pairCreateCode(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == nil {
		s.pairCreate(w, r)
		return
	}
	var req PairRequest
	if r.ContentLength != 0 {
		if err := httpjson.DecodeLimit(w, r, &req, 4096); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
	}
	code, exp := s.pairing.create()
	if err := s.opts.Auth.PairCreated(r.Context(), code, req); err != nil {
		s.pairing.withdraw(code) // nobody was shown the code
		if errors.Is(err, ErrInvalidPairing) {
			httpjson.BadRequest(w, err)
			return
		}
		httpjson.Error(w, http.StatusInternalServerError, "internal", "creating the pairing code failed")
		return
	}
	httpjson.Write(w, http.StatusOK, s.withRemoteLink(map[string]any{"code": code, "expires_at": exp.UTC(), "ttl_seconds": int(pairCodeTTL / time.Second)}))
}

// writePaired answers a redeemed pairing code with the credential for the
// new client: a fresh device token with an Authenticator, else the token.
func (s *Server) writePaired(w http.ResponseWriter, r *http.Request, code string) {
	tok := s.opts.Token.Value()
	if s.opts.Auth != nil {
		var err error
		tok, err = s.opts.Auth.Paired(r.Context(), code)
		if err != nil {
			s.log.Error("creating paired device", "err", err)
			httpjson.Error(w, http.StatusInternalServerError, "internal", "pairing failed; run `hestia pair` again")
			return
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]string{"token": tok})
}

// withdraw drops a code that was never shown to anyone.
func (p *pairing) withdraw(code string) {
	p.mu.Lock()
	delete(p.codes, code)
	p.mu.Unlock()
}
