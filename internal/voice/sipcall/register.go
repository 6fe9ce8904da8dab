package sipcall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/google/uuid"
)

// registrar keeps one registration binding (RFC 3261 §10): the same
// Call-ID across refreshes with increasing CSeq (§10.2.4), refreshed
// before the expiry the registrar granted.
type registrar struct {
	mu     sync.Mutex // serialises REGISTER transactions (the loop and a call's check)
	callID string
	cseq   uint32
}

// regError is a failed registration.
type regError struct {
	Outcome Outcome
	Status  int
	Reason  string
}

func (e *regError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("registration refused: %d %s", e.Status, e.Reason)
	}
	return "registration failed: " + e.Reason
}

// register sends one REGISTER asking for expiry (0 removes the binding)
// and returns the lifetime granted.
func (m *Manager) register(ctx context.Context, expiry time.Duration) (time.Duration, error) {
	r := &m.registrar
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ResponseTimeout)
	defer cancel()
	ip, err := m.localIP(ctx, m.reg)
	if err != nil {
		return 0, &regError{Outcome: NetworkError, Reason: err.Error()}
	}
	cl, err := m.client(ip)
	if err != nil {
		return 0, &regError{Outcome: NetworkError, Reason: err.Error()}
	}
	if r.callID == "" {
		r.callID = uuid.NewString()
		r.cseq = 1
	}
	r.cseq++
	aor := sip.Uri{Scheme: m.from.Scheme, User: m.from.User, Host: m.from.Host, Port: m.from.Port}
	req := sip.NewRequest(sip.REGISTER, m.reg)
	req.SetTransport(m.transport())
	from := &sip.FromHeader{Address: aor, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	contact := m.contact(ip)
	callID := sip.CallIDHeader(r.callID)
	for _, h := range []sip.Header{from, &sip.ToHeader{Address: aor}, &callID, &sip.CSeqHeader{SeqNo: r.cseq, MethodName: sip.REGISTER},
		&contact, sip.NewHeader("Expires", strconv.Itoa(int(expiry/time.Second)))} {
		req.AppendHeader(h)
	}
	res, err := cl.Do(ctx, req)
	challenged := false
	if err == nil && (res.StatusCode == sip.StatusUnauthorized || res.StatusCode == sip.StatusProxyAuthRequired) {
		challenged = true
		if m.cfg.Password == "" {
			return 0, &regError{Outcome: AuthFailed, Status: res.StatusCode, Reason: res.Reason + " (no password is configured)"}
		}
		res, err = cl.DoDigestAuth(ctx, req, res, sipgo.DigestAuth{Username: m.cfg.AuthUsername, Password: m.cfg.Password})
		r.cseq = req.CSeq().SeqNo
	}
	if err != nil {
		return 0, &regError{Outcome: NetworkError, Reason: noResponse(m.reg, err)}
	}
	if !res.IsSuccess() {
		return 0, &regError{Outcome: classifyStatus(res.StatusCode, challenged), Status: res.StatusCode, Reason: res.Reason}
	}
	granted := expiry
	if h := res.GetHeader("Expires"); h != nil {
		if n, err := strconv.Atoi(h.Value()); err == nil && n > 0 {
			granted = time.Duration(n) * time.Second
		}
	}
	for _, h := range res.GetHeaders("Contact") {
		// A registrar may grant each binding its own lifetime (§10.3 step 8).
		if c, ok := h.(*sip.ContactHeader); ok && c.Address.Host == contact.Address.Host && c.Address.Port == contact.Address.Port {
			if v, ok := c.Params.Get("expires"); ok {
				if n, err := strconv.Atoi(v); err == nil && n > 0 {
					granted = time.Duration(n) * time.Second
				}
			}
		}
	}
	return granted, nil
}

// noResponse words a request that got no answer.
func noResponse(to sip.Uri, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("%s did not answer", to.HostPort())
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return fmt.Sprintf("%s could not be reached: %v", to.HostPort(), err)
}

// registerOnce registers and records the state.
func (m *Manager) registerOnce(ctx context.Context) (time.Duration, error) {
	granted, err := m.register(ctx, m.cfg.RegisterExpiry)
	now := m.d.Clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.regSt.At = now
	if err != nil {
		var re *regError
		errors.As(err, &re)
		m.regSt.Registered, m.regSt.Outcome, m.regSt.Error, m.regSt.Expires = false, re.Outcome, err.Error(), time.Time{}
		return 0, err
	}
	m.regSt.Registered, m.regSt.Outcome, m.regSt.Error, m.regSt.Expires = true, "", "", now.Add(granted)
	return granted, nil
}

// registerLoop keeps the binding fresh; failures are retried with a
// backoff, credentials refused only every ten minutes (providers block
// addresses that keep trying wrong passwords).
func (m *Manager) registerLoop(ctx context.Context) error {
	backoff := 15 * time.Second
	failedBefore := false
	for {
		granted, err := m.registerOnce(ctx)
		var wait time.Duration
		switch {
		case err == nil:
			if failedBefore {
				m.log.Info("registered to the SIP provider again", "registrar", m.reg.String())
			}
			failedBefore = false
			backoff = 15 * time.Second
			// Refresh well before the end: half the lifetime, at most
			// a minute before it.
			wait = max(granted/2, granted-time.Minute)
		default:
			if ctx.Err() != nil {
				return nil
			}
			var re *regError
			errors.As(err, &re)
			if !failedBefore {
				m.log.Warn("registering to the SIP provider failed", "registrar", m.reg.String(), "outcome", re.Outcome, "err", err)
				m.d.Audit(ctx, "voice.sip.register", "", "SIP registration failed: "+err.Error(), map[string]any{"registrar": m.reg.String(), "outcome": re.Outcome, "status": re.Status})
			}
			failedBefore = true
			wait = backoff
			backoff = min(backoff*2, 10*time.Minute)
			if re.Outcome == AuthFailed {
				wait = 10 * time.Minute
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			m.unregister()
			return nil
		case <-m.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// unregister removes the binding at shutdown, briefly.
func (m *Manager) unregister() {
	m.mu.Lock()
	was := m.regSt.Registered
	m.mu.Unlock()
	if !was {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = m.register(ctx, 0)
}
