package server

import (
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
	pairCodeTTL     = 5 * time.Minute
	pairMaxOutstand = 8
	// Wrong codes are counted per client (clientKey): pairMaxFailures a
	// minute locks out that client only, and its later attempts, right or
	// wrong, are not compared. When all clients together sent
	// pairGlobalFailures in the last minute (many addresses), each client's
	// allowance drops to pairFloodFailures; nobody is refused for others'
	// failures, so a phone holding a valid code pairs during any flood.
	// With 32^10 possible codes, at most pairMaxOutstand live for 5
	// minutes, guessing stays hopeless at these rates.
	pairMaxFailures    = 10
	pairGlobalFailures = 300
	pairFloodFailures  = 2
	pairMaxClients     = 4096 // failure records kept; the oldest go first
	pairCodeAlphabet   = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	pairCodeLen        = 10
)

type pairing struct {
	now func() time.Time

	mu       sync.Mutex // guards the fields below
	codes    map[string]time.Time
	failures []time.Time            // every client's wrong codes in the last minute, oldest first
	byClient map[string][]time.Time // the same, per client address
}

func newPairing(now func() time.Time) *pairing {
	return &pairing{now: now, codes: map[string]time.Time{}, byClient: map[string][]time.Time{}}
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
	code := randomCode(pairCodeLen)
	exp := now.Add(pairCodeTTL)
	p.codes[code] = exp
	return code, exp
}

// redeem consumes a code sent by client (clientKey). The second result is
// false when the client tried too many wrong codes in the last minute (a
// lower number during a flood from many clients); a client under its
// allowance is always checked, whatever others sent.
func (p *pairing) redeem(client, code string) (ok, allowed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	p.expireLocked(now)
	p.failures = recentFailures(p.failures, now)
	mine := recentFailures(p.byClient[client], now)
	if len(mine) == 0 {
		delete(p.byClient, client)
	} else {
		p.byClient[client] = mine
	}
	limit := pairMaxFailures
	if len(p.failures) >= pairGlobalFailures {
		limit = pairFloodFailures
	}
	if len(mine) >= limit {
		return false, false
	}
	code = strings.ToUpper(strings.TrimSpace(code))
	if _, found := p.codes[code]; found {
		delete(p.codes, code)
		return true, true
	}
	p.failures = append(p.failures, now)
	if len(p.byClient) >= pairMaxClients && p.byClient[client] == nil {
		p.pruneClientsLocked(now)
	}
	p.byClient[client] = append(mine, now)
	return false, true
}

func recentFailures(fs []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= time.Minute {
		i++
	}
	return fs[i:]
}

// pruneClientsLocked drops clients with no recent failures, then, if the
// table is still full, the one whose newest failure is oldest.
func (p *pairing) pruneClientsLocked(now time.Time) {
	var oldest string
	for c, fs := range p.byClient {
		fs = recentFailures(fs, now)
		if len(fs) == 0 {
			delete(p.byClient, c)
			continue
		}
		if oldest == "" || fs[len(fs)-1].Before(p.byClient[oldest][len(p.byClient[oldest])-1]) {
			oldest = c
		}
	}
	if len(p.byClient) >= pairMaxClients && oldest != "" {
		delete(p.byClient, oldest)
	}
}

// clientKey is the address a pairing attempt is counted against: the peer
// IP, folded to the block one sender can pick addresses from at will: an
// IPv6 /64 (one host usually owns one) and all of 127.0.0.0/8 (any local
// process may bind any of its 16 million addresses).
func clientKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if v4 := ip.To4(); v4 != nil && v4[0] == 127 {
		return "127.0.0.0/8"
	}
	if ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip.String()
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
	httpjson.Write(w, http.StatusOK, s.withRemoteLink(map[string]any{"code": code, "expires_at": exp.UTC()}))
}

// withRemoteLink adds, when remote access is on, the LAN address and the
// certificate fingerprint a phone needs: this page's own origin is
// loopback, which a phone cannot reach.
func (s *Server) withRemoteLink(out map[string]any) map[string]any {
	if base, fp, err := RemoteLink(s.opts.Config.Remote); err != nil {
		s.log.Warn("remotePairLink", "err", err)
	} else if base != "" {
		out["url"], out["fingerprint"] = base, fp
	}
	return out
}

func (s *Server) pairExchange(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Code string `json:"code"`
	}
	if err := httpjson.DecodeLimit(w, r, &req, 1024); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	client := clientKey(r.RemoteAddr)
	ok, allowed := s.pairing.redeem(client, req.Code)
	switch {
	case !allowed:
		s.log.Warn("pairing code refused: too many wrong codes", "client", client)
		httpjson.Error(w, http.StatusTooManyRequests, "rate_limited", "too many wrong pairing codes; wait a minute and run `hestia pair` again")
	case !ok:
		httpjson.Error(w, http.StatusUnauthorized, "invalid_code", "the pairing code is wrong, used or expired; run `hestia pair` for a new one")
	default:
		s.log.Info("browser paired with code")
		s.writePaired(w, r, strings.ToUpper(strings.TrimSpace(req.Code)))
	}
}

func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
