package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Local pairing hands the home's token to a browser on this machine only
// after the user confirms it. Being on loopback proves nothing (another Unix
// user, a program in a sandboxed shell_exec), and browser headers can be
// forged by any program, so the page first asks for a pairing request
// (POST /api/pair/local/start); the daemon shows that request's one-time
// code only to whoever can read the home — its own terminal
// (Options.LocalPairCode) and `hestia pair --local`, which authenticates
// with the token file — and the user types it into the page
// (POST /api/pair/local with the request id and the code). The code is
// bound to its request: a caller without the request id cannot use it, so
// nobody else's wrong guesses can spend a real browser's attempts.
const (
	localCodeLen = 8 // from pairCodeAlphabet: 40 bits
	localCodeTTL = 2 * time.Minute
	// Each request allows localMaxWrong wrong codes, then is void; at most
	// localStartsPerMinute requests start a minute and localMaxPending are
	// open at once. A caller who forges browser headers thus gets at most
	// 5×3 guesses a minute at a 2^40 space, and every request it makes
	// prints a code on the user's terminal.
	localMaxWrong        = 3
	localStartsPerMinute = 5
	localMaxPending      = 8
)

// LocalPairCode is a pending local pairing request as shown to the user.
// Origin and UserAgent come from the request and are cleaned of control
// characters, but a program forging browser headers chooses them.
type LocalPairCode struct {
	Code      string    `json:"code"`
	Origin    string    `json:"origin"`
	UserAgent string    `json:"user_agent,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

type localRequest struct {
	LocalPairCode
	wrong int
}

type localPairing struct {
	now func() time.Time

	mu     sync.Mutex               // guards the fields below
	reqs   map[string]*localRequest // by request id
	starts []time.Time              // request starts in the last minute, oldest first
}

func newLocalPairing(now func() time.Time) *localPairing {
	return &localPairing{now: now, reqs: map[string]*localRequest{}}
}

// start opens a request; ok is false when too many are open or started.
func (p *localPairing) start(origin, agent string) (id string, req LocalPairCode, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.expireLocked(now)
	p.starts = recentFailures(p.starts, now)
	if len(p.reqs) >= localMaxPending || len(p.starts) >= localStartsPerMinute {
		return "", LocalPairCode{}, false
	}
	p.starts = append(p.starts, now)
	idb := make([]byte, 16)
	rand.Read(idb)
	id = hex.EncodeToString(idb)
	r := &localRequest{LocalPairCode: LocalPairCode{
		Code: randomCode(localCodeLen), Origin: printable(origin, 100), UserAgent: printable(agent, 120),
		CreatedAt: now, ExpiresAt: now.Add(localCodeTTL),
	}}
	p.reqs[id] = r
	return id, r.LocalPairCode, true
}

// Outcomes of localPairing.redeem.
const (
	localPaired = iota
	localUnknown
	localWrong
	localUsedUp
	localOtherOrigin
)

// redeem checks code against request id, sent from origin; left is the
// number of attempts the request has left after a wrong code.
func (p *localPairing) redeem(id, code, origin string) (outcome, left int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(p.now())
	r := p.reqs[id]
	if r == nil {
		return localUnknown, 0
	}
	if r.Origin != printable(origin, 100) {
		return localOtherOrigin, 0
	}
	if subtle.ConstantTimeCompare([]byte(normalizeCode(code)), []byte(r.Code)) == 1 {
		delete(p.reqs, id)
		return localPaired, 0
	}
	r.wrong++
	if r.wrong >= localMaxWrong {
		delete(p.reqs, id)
		return localUsedUp, 0
	}
	return localWrong, localMaxWrong - r.wrong
}

// pending lists the open requests, oldest first.
func (p *localPairing) pending() []LocalPairCode {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expireLocked(p.now())
	out := make([]LocalPairCode, 0, len(p.reqs))
	for _, r := range p.reqs {
		out = append(out, r.LocalPairCode)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out
}

func (p *localPairing) expireLocked(now time.Time) {
	for id, r := range p.reqs {
		if !now.Before(r.ExpiresAt) {
			delete(p.reqs, id)
		}
	}
}

// randomCode draws n characters from pairCodeAlphabet (32 characters, so a
// byte modulo its length is unbiased).
func randomCode(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = pairCodeAlphabet[int(b[i])%len(pairCodeAlphabet)]
	}
	return string(b)
}

// normalizeCode accepts what a user types: any case, with spaces or dashes.
func normalizeCode(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || unicode.IsSpace(r) {
			return -1
		}
		return unicode.ToUpper(r)
	}, s)
}

// FormatLocalCode groups a local pairing code for reading: ABCD-EFGH.
func FormatLocalCode(code string) string {
	if len(code) != localCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// printable drops control and format characters (terminal escapes) from a
// header value shown to the user, and bounds its length.
func printable(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > max {
		s = string(r[:max]) + "…"
	}
	return s
}

// localBrowser says why r is not a same-origin request from a browser on
// this machine, as an error code and message; "" when it is one. Passing
// proves nothing about the caller (any program can send these headers); it
// only keeps other sites and non-browser clients out before a code is shown.
func (s *Server) localBrowser(r *http.Request) (code, msg string) {
	switch {
	case s.opts.Config.AllowRemote:
		return "local_pairing_off", "local pairing is off while the daemon accepts remote connections; run `hestia pair` and open the link it prints"
	case viaRemote(r) || !loopbackPeer(r.RemoteAddr):
		return "not_local", "local pairing works only from a browser on the machine that runs Hestia; run `hestia pair` there and open the link it prints"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return "browser_required", "local pairing is for a browser on this daemon's own page and this request has no Origin header; a program on this machine reads the token file instead"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return "cross_origin", "local pairing accepts only the daemon's own page (Sec-Fetch-Site is " + printable(site, 40) + ", not same-origin)"
	}
	u, err := url.Parse(origin)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if err != nil || u.Scheme != scheme || !strings.EqualFold(u.Host, r.Host) || (u.Path != "" && u.Path != "/") {
		return "cross_origin", "local pairing accepts only the daemon's own page; Origin " + printable(origin, 100) + " is not " + scheme + "://" + printable(r.Host, 100)
	}
	return "", ""
}

// pairLocalStart is POST /api/pair/local/start: a browser on this machine
// asks to pair. It gets a request id, never a token; the code goes to the
// daemon's terminal and to `hestia pair --local`.
func (s *Server) pairLocalStart(w http.ResponseWriter, r *http.Request) {
	if code, msg := s.localBrowser(r); code != "" {
		httpjson.Error(w, http.StatusForbidden, code, msg)
		return
	}
	id, req, ok := s.local.start(r.Header.Get("Origin"), r.Header.Get("User-Agent"))
	if !ok {
		s.log.Warn("local pairing request refused: too many requests")
		httpjson.Error(w, http.StatusTooManyRequests, "rate_limited", "too many local pairing requests; wait a minute, or run `hestia pair` and open the link it prints")
		return
	}
	// The code is not logged: log files may be kept or shipped where the
	// terminal is not.
	s.log.Info("browser asks to pair", "origin", req.Origin, "userAgent", req.UserAgent)
	if s.opts.LocalPairCode != nil {
		s.opts.LocalPairCode(req)
	}
	httpjson.Write(w, http.StatusAccepted, map[string]any{
		"request": id, "expires_at": req.ExpiresAt.UTC(), "ttl_seconds": int(localCodeTTL / time.Second),
		"code_length": localCodeLen, "attempts": localMaxWrong,
	})
}

// pairLocal is POST /api/pair/local: the request id and the code the user
// typed buy the token. Without both it is a 403 naming what is missing.
func (s *Server) pairLocal(w http.ResponseWriter, r *http.Request) {
	if code, msg := s.localBrowser(r); code != "" {
		httpjson.Error(w, http.StatusForbidden, code, msg)
		return
	}
	var req struct {
		Request string `json:"request"`
		Code    string `json:"code"`
	}
	if r.ContentLength != 0 {
		if err := httpjson.DecodeLimit(w, r, &req, 1024); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
	}
	if req.Request == "" || req.Code == "" {
		httpjson.Error(w, http.StatusForbidden, "pairing_code_required", "local pairing needs the code the daemon prints for this browser: start with POST /api/pair/local/start, then send {\"request\", \"code\"} (the code is shown in the daemon's terminal and by `hestia pair --local`)")
		return
	}
	outcome, left := s.local.redeem(req.Request, req.Code, r.Header.Get("Origin"))
	switch outcome {
	case localPaired:
		s.log.Info("browser on this machine paired", "origin", printable(r.Header.Get("Origin"), 100))
		httpjson.Write(w, http.StatusOK, map[string]string{"token": s.opts.Token.Value()})
	case localWrong:
		word := "attempts"
		if left == 1 {
			word = "attempt"
		}
		httpjson.Error(w, http.StatusForbidden, "invalid_code", "that is not the code for this browser's request; "+strconv.Itoa(left)+" "+word+" left")
	case localUsedUp:
		s.log.Warn("local pairing request voided after wrong codes")
		httpjson.Error(w, http.StatusForbidden, "pairing_request_void", "too many wrong codes; ask for a new code")
	case localOtherOrigin:
		httpjson.Error(w, http.StatusForbidden, "cross_origin", "this pairing request was made from another origin")
	default:
		httpjson.Error(w, http.StatusForbidden, "pairing_request_unknown", "this pairing request is unknown, used or expired; ask for a new code")
	}
}

// pairLocalPending is GET /api/pair/local/pending (behind auth, admin): the
// open requests and their codes, for `hestia pair --local`.
func (s *Server) pairLocalPending(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"requests": s.local.pending()})
}
