package sipcall

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Inbound calls: the owner calling Hestia. Caller ID is a claim, not a
// proof — anyone can put any number in From, and a provider's caller id
// can be spoofed too — so the number only decides whether the call is
// answered at all, and the PIN decides whether it reaches the assistant.
// The checks, in order, each before anything is answered:
//
//  1. registering: the INVITE must come from the registrar's address (a
//     stranger on the network sending to Hestia's port directly: 403);
//  2. the caller's number must be listed (603, audited);
//  3. no lock-out after failed PINs (603);
//  4. no other call in progress (486).
//
// Then the call is answered, the PIN asked for, and only once it is right
// does a chat exist and the conversation start.

// Limits of the PIN check. The lock-out counts failed calls, not wrong
// digits, so a caller who hangs up after one guess is counted too.
const (
	pinAttempts       = 3                // wrong PINs on one call before hanging up
	lockoutFailures   = 3                // failed PIN calls…
	lockoutWindow     = 10 * time.Minute // …within this long…
	lockoutFor        = 10 * time.Minute // …decline every inbound call this long,
	lockoutMax        = 24 * time.Hour   // doubled for each lock-out in a row up to this
	refusalAuditEvery = 10 * time.Minute // one audit row per refused caller (or source) this often
	maxRefusalKeys    = 256              // refused callers remembered for that; past it, a flood is only logged
	minPIN, maxPIN    = 4, 16
	maxPINKeys        = 32 // keys kept before the hash; more make a wrong PIN
	registrarAddrTTL  = time.Minute
)

// What an inbound caller hears before the PIN is right.
const (
	pinPrompt  = "Hestia. Enter your PIN, then hash."
	pinRetry   = "That PIN is wrong. Try again, then hash."
	pinGoodbye = "That PIN is wrong. Goodbye."
	pinTimeout = "No PIN was entered. Goodbye."
	pinNoKeys  = "This phone sends no keypad tones, so the PIN cannot be entered. Goodbye."
)

// inboundPolicy is who may call and the PIN they must enter; read-only
// after init.
type inboundPolicy struct {
	on      bool
	numbers map[string]bool // normalised numbers allowed to call
	listed  []string        // the same, as configured, for status
	pin     [sha256.Size]byte
}

// init reads the inbound settings of cfg; target is the number Hestia
// calls, allowed to call back when no numbers are listed.
func (p *inboundPolicy) init(cfg *Config, target sip.Uri) error {
	if !cfg.Inbound {
		return nil
	}
	pin := strings.TrimSpace(cfg.PIN)
	if len(pin) < minPIN || len(pin) > maxPIN || strings.Trim(pin, "0123456789") != "" {
		return fmt.Errorf("inbound calls need a PIN of %d to %d digits", minPIN, maxPIN)
	}
	list := cfg.InboundNumbers
	if len(list) == 0 {
		list = []string{target.User}
	}
	p.numbers = map[string]bool{}
	for _, n := range list {
		k := normNumber(n)
		if k == "" {
			return fmt.Errorf("the number allowed to call %q is not a phone number", n)
		}
		p.numbers[k] = true
		p.listed = append(p.listed, strings.TrimSpace(n))
	}
	p.pin = sha256.Sum256([]byte(pin))
	p.on = true
	return nil
}

// allows reports whether one of the caller's identities is listed.
func (p *inboundPolicy) allows(ids []string) bool {
	for _, id := range ids {
		if k := normNumber(id); k != "" && p.numbers[k] {
			return true
		}
	}
	return false
}

// pinMatches compares keys with the PIN in constant time: both are
// hashed first, so neither the length nor a prefix shows in the timing.
func (p *inboundPolicy) pinMatches(keys []byte) bool {
	got := sha256.Sum256(keys)
	return subtle.ConstantTimeCompare(got[:], p.pin[:]) == 1
}

// normNumber is the form numbers are compared in: percent-escapes
// decoded, user parameters (";phone-context=…") and the separators people
// write (spaces, dashes, dots, brackets) dropped, and a leading + or 00
// removed, so "+39 347 1234567", "0039347-1234567" and "%2B393471234567"
// are one number. A national form ("3471234567") is a different one.
func normNumber(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		s = u
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return "" // never a number (and lower-casing could grow it)
		}
	}
	s, _, _ = strings.Cut(s, ";")
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '-', '.', '(', ')', '/':
			return -1
		}
		return r
	}, strings.ToLower(strings.TrimSpace(s)))
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "00"):
		s = s[2:]
	}
	return s
}

// callerIDs are the identities an INVITE claims: those of its
// P-Asserted-Identity (RFC 3325 §9.1), which a provider sets to the
// caller it knows, when it has one, else the user part of From. Neither
// is a proof.
func callerIDs(req *sip.Request) []string {
	var ids []string
	for _, h := range req.GetHeaders("P-Asserted-Identity") {
		for _, v := range strings.Split(h.Value(), ",") {
			if u := uriUser(v); u != "" {
				ids = append(ids, u)
			}
		}
	}
	if len(ids) > 0 {
		return ids
	}
	if f := req.From(); f != nil {
		u := f.Address.User
		if u == "" && strings.EqualFold(f.Address.Scheme, "tel") {
			u = f.Address.Host
		}
		if u != "" {
			ids = append(ids, u)
		}
	}
	return ids
}

// uriUser is the user part of a name-addr or addr-spec ("Alice"
// <sip:+39…@host;user=phone>, <tel:+39…>): a sip or sips URI's user, a tel
// URI's number.
func uriUser(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		v = v[i+1:]
		if j := strings.IndexByte(v, '>'); j >= 0 {
			v = v[:j]
		}
	}
	scheme, rest, ok := strings.Cut(v, ":")
	if !ok {
		return ""
	}
	switch strings.ToLower(scheme) {
	case "tel":
		n, _, _ := strings.Cut(rest, ";")
		return n
	case "sip", "sips":
		user, _, found := strings.Cut(rest, "@")
		if !found {
			return ""
		}
		user, _, _ = strings.Cut(user, ";")
		user, _, _ = strings.Cut(user, ":") // a password, never sent in practice
		return user
	}
	return ""
}

// inboundGuard is the lock-out after failed PIN calls and the throttle on
// audited refusals; guarded by Manager.mu.
type inboundGuard struct {
	fails       []time.Time // failed PIN calls within lockoutWindow
	lockedUntil time.Time
	// lockouts counts lock-outs since the last call with the right PIN:
	// each lasts twice the one before (up to lockoutMax), so guessing a
	// 6-digit PIN under a forged caller id takes years, not weeks.
	lockouts int
	audited  map[string]time.Time // refusal key → when last audited
}

// InboundState is whether Hestia answers calls, from which numbers, and
// until when it declines them after failed PINs.
type InboundState struct {
	Enabled     bool      `json:"enabled"`
	Numbers     []string  `json:"numbers,omitempty"`
	LockedUntil time.Time `json:"locked_until,omitzero"`
}

// Inbound reports the inbound calls' state.
func (m *Manager) Inbound() InboundState {
	if !m.inbound.on {
		return InboundState{}
	}
	st := InboundState{Enabled: true, Numbers: append([]string(nil), m.inbound.listed...)}
	st.LockedUntil = m.lockedUntil()
	return st
}

// lockedUntil is when the lock-out ends; zero when there is none.
func (m *Manager) lockedUntil() time.Time {
	now := m.d.Clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Before(m.guard.lockedUntil) {
		return m.guard.lockedUntil
	}
	return time.Time{}
}

// lockoutLength is how long the n-th lock-out in a row (from 0) lasts.
func lockoutLength(n int) time.Duration {
	d := lockoutFor
	for range n {
		if d *= 2; d >= lockoutMax {
			return lockoutMax
		}
	}
	return d
}

// pinAccepted ends the lock-outs' escalation: the owner got in.
func (m *Manager) pinAccepted() {
	m.mu.Lock()
	m.guard.lockouts, m.guard.fails = 0, nil
	m.mu.Unlock()
}

// pinFailed counts a failed PIN call; the third within lockoutWindow
// locks inbound calls out, for lockoutFor and twice as long each time
// after (lockoutLength), and tells the owner.
func (m *Manager) pinFailed(ctx context.Context) {
	now := m.d.Clock()
	m.mu.Lock()
	g := &m.guard
	kept := g.fails[:0]
	for _, t := range g.fails {
		if now.Sub(t) < lockoutWindow {
			kept = append(kept, t)
		}
	}
	g.fails = append(kept, now)
	locked := len(g.fails) >= lockoutFailures
	var length time.Duration
	if locked {
		length = lockoutLength(g.lockouts)
		g.lockedUntil, g.fails = now.Add(length), nil
		g.lockouts++
	}
	m.mu.Unlock()
	if locked {
		msg := fmt.Sprintf("Inbound SIP calls are declined for %s after %d calls without the right PIN within %s.", length, lockoutFailures, lockoutWindow)
		m.log.Warn("inbound SIP calls locked out after failed PINs", "until", now.Add(length))
		m.d.Audit(ctx, "voice.sip.inbound_locked", "", msg, map[string]any{"until": now.Add(length), "failed_calls": lockoutFailures})
		if m.d.Alert != nil {
			// Someone who is not the owner may be calling with the
			// owner's number: the owner should know, not only the audit.
			m.d.Alert(ctx, "Calls to Hestia locked out", msg+" Someone may be calling with your number and guessing the PIN.")
		}
	}
}

// refuse declines a new call before answering it and audits it, at most
// once per key (the caller's number, or the stranger's address) every
// refusalAuditEvery, so a scanner knocking on the port cannot flood the
// audit trail.
func (m *Manager) refuse(req *sip.Request, tx sip.ServerTransaction, res Result, key, source string) {
	_ = tx.Respond(sip.NewResponseFromRequest(req, res.Status, statusText(res.Status), nil))
	m.log.Info("declined an inbound SIP call", "from", res.From, "source", source, "status", res.Status, "reason", res.Reason)
	now := m.d.Clock()
	m.mu.Lock()
	g := &m.guard
	if g.audited == nil {
		g.audited = map[string]time.Time{}
	}
	last, seen := g.audited[key]
	skip := seen && now.Sub(last) < refusalAuditEvery
	if !skip && !seen && len(g.audited) >= maxRefusalKeys {
		for k, t := range g.audited {
			if now.Sub(t) >= refusalAuditEvery {
				delete(g.audited, k)
			}
		}
		skip = len(g.audited) >= maxRefusalKeys
	}
	if !skip {
		g.audited[key] = now
	}
	m.mu.Unlock()
	if skip {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.d.Audit(ctx, "voice.call", "", res.Summary(), map[string]any{"direction": Inbound, "from": res.From, "to": res.To,
		"source": source, "outcome": res.Outcome, "status": res.Status, "reason": res.Reason})
}

// clip shortens s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func statusText(code int) string {
	switch code {
	case sip.StatusForbidden:
		return "Forbidden"
	case sip.StatusBusyHere:
		return "Busy Here"
	case sip.StatusTemporarilyUnavailable:
		return "Temporarily Unavailable"
	case sip.StatusServiceUnavailable:
		return "Service Unavailable"
	case 488:
		return "Not Acceptable Here"
	case sip.StatusInternalServerError:
		return "Server Internal Error"
	}
	return "Decline"
}

// fromRegistrar reports whether source (the address the INVITE arrived
// from, as the transport saw it — never Via, which the sender writes) is
// one of the registrar's addresses.
func (m *Manager) fromRegistrar(ctx context.Context, source string) (bool, error) {
	ap, err := netip.ParseAddrPort(source)
	if err != nil {
		return false, fmt.Errorf("the request's source %q is not an address", source)
	}
	addrs, err := m.registrarAddrs(ctx)
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if a == ap.Addr().Unmap() {
			return true, nil
		}
	}
	return false, nil
}

// registrarAddrs resolves the registrar's host (its A/AAAA records and
// the targets of its SIP SRV records, RFC 3263), cached for a minute.
func (m *Manager) registrarAddrs(ctx context.Context) ([]netip.Addr, error) {
	now := time.Now()
	m.mu.Lock()
	if len(m.regAddrs) > 0 && now.Sub(m.regAddrAt) < registrarAddrTTL {
		a := m.regAddrs
		m.mu.Unlock()
		return a, nil
	}
	m.mu.Unlock()
	host := strings.Trim(m.reg.Host, "[]")
	var out []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		out = append(out, ip.Unmap())
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err == nil {
			out = append(out, ips...)
		}
		proto := "udp"
		if m.cfg.Transport != "udp" {
			proto = m.cfg.Transport
		}
		if _, srvs, serr := net.DefaultResolver.LookupSRV(ctx, "sip", proto, host); serr == nil {
			for _, s := range srvs {
				if ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", strings.TrimSuffix(s.Target, ".")); err == nil {
					out = append(out, ips...)
				}
			}
		}
		if len(out) == 0 {
			if err == nil {
				err = errors.New("no address")
			}
			return nil, fmt.Errorf("resolving the registrar %s: %w", host, err)
		}
		for i := range out {
			out[i] = out[i].Unmap()
		}
	}
	m.mu.Lock()
	m.regAddrs, m.regAddrAt = out, now
	m.mu.Unlock()
	return out, nil
}

// answerInbound handles a new INVITE while inbound calls are on; it runs
// in the request's goroutine for the whole call, as sipgo keeps the INVITE
// transaction until its handler returns.
func (m *Manager) answerInbound(req *sip.Request, tx sip.ServerTransaction) {
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusTrying, "Trying", nil))
	source := req.MessageData.Source()
	ids := callerIDs(req)
	// What the caller wrote is shown and audited clipped: a header may
	// be kilobytes long.
	from := "an unknown number"
	if len(ids) > 0 {
		from = clip(ids[0], 40)
	}
	to := clip(req.Recipient.User, 40)
	if to == "" {
		to = m.from.User
	}
	res := Result{Direction: Inbound, From: from, To: to, Started: m.d.Clock(), Outcome: Rejected}
	decline := func(o Outcome, status int, reason, key string) {
		res.Outcome, res.Status, res.Reason = o, status, reason
		m.refuse(req, tx, res, key, source)
	}
	if m.reg.Host != "" {
		ctx, cancel := context.WithTimeout(m.ctx, m.cfg.ResponseTimeout)
		ok, err := m.fromRegistrar(ctx, source)
		cancel()
		if !ok {
			why := fmt.Sprintf("sent from %s, not from the registrar %s", source, m.reg.Host)
			if err != nil {
				why += " (" + err.Error() + ")"
			}
			host, _, _ := net.SplitHostPort(source)
			decline(Rejected, sip.StatusForbidden, why, "source|"+host)
			return
		}
	}
	if !m.inbound.allows(ids) {
		decline(Rejected, sip.StatusGlobalDecline, "not one of the numbers allowed to call", "number|"+from)
		return
	}
	if until := m.lockedUntil(); !until.IsZero() {
		decline(Rejected, sip.StatusGlobalDecline, fmt.Sprintf("inbound calls are declined until %s after failed PINs", until.Format("15:04:05")), "locked")
		return
	}
	if m.d.TTS == nil {
		decline(Rejected, sip.StatusTemporarilyUnavailable, "calls need the tts tier to speak", "tts")
		return
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusServiceUnavailable, "Service Unavailable", nil))
		return
	case m.current != nil:
		m.mu.Unlock()
		decline(Busy, sip.StatusBusyHere, "another call is in progress", "busy|"+from)
		return
	}
	c := &Call{ID: newCallID(), To: to, From: from, Origin: "inbound", Direction: Inbound, done: make(chan struct{}), state: StateRinging}
	m.current = c
	m.wg.Add(1) // under mu: Close waits for this call once it set closed
	m.mu.Unlock()
	defer m.wg.Done()
	var callCtx context.Context
	callCtx, c.hangup = context.WithCancelCause(m.ctx)
	defer c.hangup(nil)
	m.remember(c)
	res.CallID = c.ID
	res = m.takeInbound(callCtx, c, req, tx, source, res)
	if res.Outcome == PINFailed && callCtx.Err() == nil {
		// A call ended by the daemon stopping, or hung up from the
		// app, proves nothing about the caller.
		m.pinFailed(callCtx)
	}
	m.finish(c, res)
	m.mu.Lock()
	m.current = nil
	m.mu.Unlock()
	close(c.done)
}

// takeInbound answers the call, asks for the PIN and, once it is right,
// holds the conversation in a fresh chat.
func (m *Manager) takeInbound(ctx context.Context, c *Call, req *sip.Request, tx sip.ServerTransaction, source string, res Result) Result {
	fail := func(o Outcome, status int, reason string) Result {
		res.Outcome, res.Status, res.Reason = o, status, reason
		return res
	}
	offer, err := parseAnswer(req.Body())
	if err != nil {
		// Same formats as outbound: PCMU or PCMA over RTP/AVP. An INVITE
		// without an offer (the offer in the 200, RFC 3261 §13.2.1) is
		// refused too.
		_ = tx.Respond(sip.NewResponseFromRequest(req, 488, "Not Acceptable Here", nil))
		return fail(MediaError, 488, "the caller's audio offer: "+err.Error())
	}
	dest := offer.Addr.Addr()
	if ap, err := netip.ParseAddrPort(source); err == nil {
		dest = ap.Addr()
	}
	lctx, cancel := context.WithTimeout(ctx, m.cfg.ResponseTimeout)
	ip, err := m.localIP(lctx, sip.Uri{Host: dest.Unmap().String()})
	cancel()
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, "Server Internal Error", nil))
		return fail(NetworkError, sip.StatusInternalServerError, err.Error())
	}
	bindIP := ip
	if !m.cfg.LocalIP.IsValid() {
		bindIP = unspecified(ip)
	}
	med, err := openMedia(bindIP, m.cfg.RTPPortMin, m.cfg.RTPPortMax, m.log)
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, "Server Internal Error", nil))
		return fail(MediaError, sip.StatusInternalServerError, err.Error())
	}
	defer med.close()
	cl, err := m.client(ip)
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, "Server Internal Error", nil))
		return fail(NetworkError, sip.StatusInternalServerError, err.Error())
	}
	contact := m.contact(ip)
	// In-dialog requests (the BYE) go where the INVITE came from, as RTP
	// answers where audio comes from: a phone behind NAT names a Contact
	// nobody can reach.
	ua := &sipgo.DialogUA{Client: cl, ContactHDR: contact, RewriteContact: true}
	sess, err := ua.ReadInvite(req, tx)
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, "Bad Request", nil))
		return fail(Rejected, sip.StatusBadRequest, "unusable INVITE: "+err.Error())
	}
	defer sess.Close()
	var sid [8]byte
	_, _ = rand.Read(sid[:])
	sessID := binary.BigEndian.Uint64(sid[:]) >> 2
	dlg := &inboundDialog{sess: sess}
	m.mu.Lock()
	m.inDialog = dlg
	m.active = &activeMedia{med: med, ans: offer, ip: ip, contact: contact, id: sessID, version: sessID}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inDialog, m.active = nil, nil
		m.mu.Unlock()
	}()
	// RespondSDP returns once the ACK is in (RFC 3261 §13.3.1.4), or
	// with an error when the dialog ended first: cancelled before the
	// 200 went out, or — the call answered all the same, and one without
	// the PIN — a caller who hung up at once, its BYE handled before its
	// ACK.
	if err := sess.RespondSDP(buildAnswer(ip, med.port(), sessID, sessID, offer)); err != nil && !dlg.bye.Load() {
		return fail(NetworkError, 0, "answering: "+err.Error())
	}
	answered := m.d.Clock()
	res.Answered = answered
	res.Ringing = answered.Sub(res.Started)
	c.setState(StateAnswered)
	bye := func() {
		bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := sess.Bye(bctx); err != nil {
			m.log.Info("the BYE was not confirmed", "call", c.ID, "err", err)
		}
	}
	convCtx, cancelConv := context.WithTimeoutCause(ctx, m.cfg.MaxDuration, m.maxDurationErr())
	defer cancelConv()
	hungUp := sess.Context()

	pe := m.askPIN(convCtx, hungUp, c, med, offer)
	if !pe.ok {
		res.Duration = m.d.Clock().Sub(answered)
		res.PacketsIn, res.PacketsOut = med.recvd.Load(), med.sent.Load()
		res.Outcome, res.Reason, res.HungUpBy = PINFailed, pe.reason, pe.by
		if pe.by != "phone" {
			bye()
		}
		return res
	}
	m.pinAccepted()
	chatID, err := m.d.Chats.Create(convCtx, "Call from "+c.From+" "+m.d.Clock().Format("2 Jan 15:04"))
	if err != nil {
		m.log.Warn("creating the inbound call's chat", "call", c.ID, "err", err)
		res.Duration = m.d.Clock().Sub(answered)
		res.Outcome, res.Reason, res.HungUpBy = MediaError, "creating the call's chat: "+err.Error(), "hestia"
		bye()
		return res
	}
	c.mu.Lock()
	c.ChatID = chatID
	c.mu.Unlock()
	res.ChatID = chatID
	m.publish(c)
	cv := newConversation(m, c, med, m.cfg.Greeting)
	m.converse(convCtx, cv, hungUp, offer, &res)
	if res.HungUpBy != "phone" {
		bye()
	}
	return res
}

// pinEnd is how the PIN check ended.
type pinEnd struct {
	ok     bool
	by     string // who hung up when not ok: "phone" or "hestia"
	reason string
}

// askPIN says the prompt and reads keys until the PIN is right, three
// wrong ones were entered, or PINTimeout passed after the prompt. The
// caller's audio is ignored throughout; the keys go nowhere else.
func (m *Manager) askPIN(ctx, hungUp context.Context, c *Call, med *media, a answer) pinEnd {
	log := m.log.With("call", c.ID)
	keys := make(chan rune, 64)
	med.startMedia(a, nil, func(d rune) {
		select {
		case keys <- d:
		default: // a caller holding a key down gains nothing by it
		}
	})
	say := func(text string) <-chan struct{} {
		sctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		pcm, err := m.synth(sctx, text)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("speaking on the call failed", "err", err)
			}
			done := make(chan struct{})
			close(done)
			return done
		}
		return med.play(pcm)
	}
	sayLast := func(text string) {
		t := time.NewTimer(15 * time.Second)
		defer t.Stop()
		select {
		case <-say(text):
		case <-hungUp.Done():
		case <-ctx.Done():
		case <-t.C:
		}
	}
	if a.DTMF < 0 {
		sayLast(pinNoKeys)
		return pinEnd{by: "hestia", reason: "the phone offered no telephone-events to enter the PIN with"}
	}
	prompted := say(pinPrompt)
	var (
		deadline <-chan time.Time
		timer    *time.Timer
		entered  = make([]byte, 0, maxPINKeys)
		overflow bool
		wrong    int
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		clear(entered[:cap(entered)])
	}()
	for {
		select {
		case <-ctx.Done():
			return pinEnd{by: "hestia", reason: causeText(ctx)}
		case <-hungUp.Done():
			return pinEnd{by: "phone", reason: fmt.Sprintf("the phone hung up before the PIN was right (%d wrong)", wrong)}
		case <-prompted:
			prompted = nil
			timer = time.NewTimer(m.cfg.PINTimeout)
			deadline = timer.C
		case <-deadline:
			sayLast(pinTimeout)
			return pinEnd{by: "hestia", reason: fmt.Sprintf("no right PIN within %s of the prompt (%d wrong)", m.cfg.PINTimeout, wrong)}
		case d := <-keys:
			switch {
			case d >= '0' && d <= '9':
				if len(entered) < maxPINKeys {
					entered = append(entered, byte(d))
				} else {
					overflow = true
				}
			case d == '*': // start over
				clear(entered)
				entered, overflow = entered[:0], false
			case d == '#' && len(entered) > 0:
				ok := m.inbound.pinMatches(entered) && !overflow
				clear(entered)
				entered, overflow = entered[:0], false
				med.flush()
				if ok {
					log.Info("inbound call: the PIN is right")
					return pinEnd{ok: true}
				}
				wrong++
				if wrong >= pinAttempts {
					sayLast(pinGoodbye)
					return pinEnd{by: "hestia", reason: fmt.Sprintf("%d wrong PINs", wrong)}
				}
				say(pinRetry)
			}
		}
	}
}

// synth turns text into 8 kHz samples through the tts tier.
func (m *Manager) synth(ctx context.Context, text string) ([]int16, error) {
	audio, ct, err := m.d.TTS.Speak(ctx, text, m.cfg.Voice, "wav")
	if err != nil {
		return nil, err
	}
	return lineAudio(audio, ct)
}
