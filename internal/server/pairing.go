package server

import (
	"crypto/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Pairing codes let a browser on another device obtain the token without the
// user typing 64 hex characters: `hestia pair` asks the daemon for a code,
// shows a link, and the browser exchanges the code once.
const (
	pairCodeTTL      = 5 * time.Minute
	pairMaxOutstand  = 8
	pairMaxFailures  = 10 // per minute, across all clients, then exchange pauses
	pairCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	pairCodeLen      = 10
)

type pairing struct {
	now func() time.Time

	mu       sync.Mutex // guards the fields below
	codes    map[string]time.Time
	failures []time.Time
}

func newPairing(now func() time.Time) *pairing {
	return &pairing{now: now, codes: map[string]time.Time{}}
}

func (p *pairing) create() (string, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.expireLocked(now)
	if len(p.codes) >= pairMaxOutstand {
		// Drop the oldest so a user retrying `hestia pair` always gets a code.
		var oldest string
		for c, exp := range p.codes {
			if oldest == "" || exp.Before(p.codes[oldest]) {
				oldest = c
			}
		}
		delete(p.codes, oldest)
	}
	b := make([]byte, pairCodeLen)
	rand.Read(b)
	for i := range b {
		b[i] = pairCodeAlphabet[int(b[i])%len(pairCodeAlphabet)]
	}
	code := string(b)
	exp := now.Add(pairCodeTTL)
	p.codes[code] = exp
	return code, exp
}

// redeem consumes a code. The second result is false when too many wrong
// codes were tried recently.
func (p *pairing) redeem(code string) (ok, allowed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.expireLocked(now)
	recent := p.failures[:0]
	for _, f := range p.failures {
		if now.Sub(f) < time.Minute {
			recent = append(recent, f)
		}
	}
	p.failures = recent
	if len(p.failures) >= pairMaxFailures {
		return false, false
	}
	code = strings.ToUpper(strings.TrimSpace(code))
	if _, found := p.codes[code]; found {
		delete(p.codes, code)
		return true, true
	}
	p.failures = append(p.failures, now)
	return false, true
}

func (p *pairing) expireLocked(now time.Time) {
	for c, exp := range p.codes {
		if !now.Before(exp) {
			delete(p.codes, c)
		}
	}
}

func (s *Server) pairCreate(w http.ResponseWriter, r *http.Request) {
	code, exp := s.pairing.create()
	httpjson.Write(w, http.StatusOK, map[string]any{"code": code, "expires_at": exp.UTC()})
}

func (s *Server) pairExchange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code string `json:"code"`
	}
	if err := httpjson.DecodeLimit(w, r, &req, 1024); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	ok, allowed := s.pairing.redeem(req.Code)
	switch {
	case !allowed:
		httpjson.Error(w, http.StatusTooManyRequests, "rate_limited", "too many wrong pairing codes; wait a minute and run `hestia pair` again")
	case !ok:
		httpjson.Error(w, http.StatusUnauthorized, "invalid_code", "the pairing code is wrong, used or expired; run `hestia pair` for a new one")
	default:
		s.log.Info("browser paired with code")
		httpjson.Write(w, http.StatusOK, map[string]string{"token": s.opts.Token.Value()})
	}
}

// pairLocal hands the token to a browser on this machine. The peer must be
// loopback, the Host loopback (guardHost) and the request same-origin per
// Fetch Metadata or Origin, so a web page elsewhere cannot read it even via
// DNS rebinding. Any local process could read the token file anyway.
func (s *Server) pairLocal(w http.ResponseWriter, r *http.Request) {
	if s.opts.Config.AllowRemote || !loopbackPeer(r.RemoteAddr) || !sameOrigin(r) {
		httpjson.Error(w, http.StatusForbidden, "pairing_required", "automatic pairing works only from a browser on this machine; paste the token or run `hestia pair`")
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]string{"token": s.opts.Token.Value()})
}

func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		// Browsers always send Origin on POST fetches; its absence means a
		// non-browser client, which can read the token file directly.
		return r.Header.Get("Sec-Fetch-Site") == ""
	}
	o := strings.TrimPrefix(strings.TrimPrefix(origin, "http://"), "https://")
	return o == r.Host
}
