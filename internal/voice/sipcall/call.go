package sipcall

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/hestia-dev/hestia/internal/agent"
)

// CallRequest asks for a call.
type CallRequest struct {
	// ChatID continues a chat (a job's or watch's, whose result is being
	// called in); empty creates a chat titled Title.
	ChatID string
	Title  string
	// Opening is spoken when the phone is answered (Config.Greeting when
	// empty).
	Opening string
	// RecordOpening writes Opening into the chat as the assistant's words
	// (when it is not there already, as a delivered result is).
	RecordOpening bool
	// Origin says who asked ("cli", "api", "quick-call", "job:NAME",
	// "watch:ID"); audited with the outcome.
	Origin string
}

// Call states.
const (
	StateRinging  = "ringing"
	StateAnswered = "answered"
	StateEnded    = "ended"
)

// Directions of a call.
const (
	Outbound = "outbound"
	Inbound  = "inbound"
)

// Call is a call in progress or ended.
type Call struct {
	ID string
	// ChatID is the call's chat; an inbound call has none until its PIN
	// was right.
	ChatID string
	To     string
	Origin string
	// Direction is Outbound (Hestia called) or Inbound (the owner called
	// Hestia; From is the number it came from).
	Direction string
	From      string

	done   chan struct{}
	hangup context.CancelCauseFunc

	mu     sync.Mutex // guards state and result
	state  string
	result Result
}

// Done is closed when the call has ended.
func (c *Call) Done() <-chan struct{} { return c.done }

// Result is the outcome; complete once Done is closed.
func (c *Call) Result() Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.result
}

// State is ringing, answered or ended.
func (c *Call) State() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

func (c *Call) setState(s string) {
	c.mu.Lock()
	c.state = s
	c.mu.Unlock()
}

// errHungUp is the cause when someone asks Hestia to hang up.
var errHungUp = errors.New("hung up on request")

// Hangup ends the call (or stops the ringing).
func (c *Call) Hangup() { c.hangup(errHungUp) }

// turnOptions are the options of the turns the call starts.
func (c *Call) turnOptions() agent.Options {
	if c.Direction == Inbound {
		return InboundTurnOptions()
	}
	return TurnOptions()
}

// Wait blocks until the call ends or ctx ends.
func (c *Call) Wait(ctx context.Context) (Result, error) {
	select {
	case <-c.done:
		return c.Result(), nil
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// Status is the user agent's state for the API.
type Status struct {
	To           string       `json:"to"`
	Registration RegState     `json:"registration"`
	Inbound      InboundState `json:"inbound"`
	Current      *Snapshot    `json:"current,omitempty"`
}

// Snapshot is a call as the API shows it.
type Snapshot struct {
	ID        string  `json:"id"`
	ChatID    string  `json:"chat_id"`
	To        string  `json:"to"`
	Direction string  `json:"direction"`
	From      string  `json:"from,omitempty"`
	State     string  `json:"state"`
	Result    *Result `json:"result,omitempty"`
}

// Snapshot describes c.
func (c *Call) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Snapshot{ID: c.ID, ChatID: c.ChatID, To: c.To, Direction: c.Direction, From: c.From, State: c.state}
	if c.state == StateEnded {
		r := c.result
		s.Result = &r
	}
	return s
}

// Status reports the registration and the call in progress.
func (m *Manager) Status() Status {
	st := Status{To: m.cfg.To, Registration: m.Registration(), Inbound: m.Inbound()}
	m.mu.Lock()
	cur := m.current
	m.mu.Unlock()
	if cur != nil {
		s := cur.Snapshot()
		st.Current = &s
	}
	return st
}

// Get returns a recent call by id.
func (m *Manager) Get(id string) (*Call, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.calls[id]
	return c, ok
}

// keptCalls bounds the calls remembered for status queries.
const keptCalls = 20

// Call places a call to the user and returns at once; the call goes on
// in the background until it ends (Call.Done). A call already in
// progress is ErrCallInProgress.
func (m *Manager) Call(ctx context.Context, req CallRequest) (*Call, error) {
	if m.d.TTS == nil {
		return nil, ErrNoSpeech
	}
	m.mu.Lock()
	switch {
	case m.closed:
		m.mu.Unlock()
		return nil, ErrClosed
	case m.current != nil:
		m.mu.Unlock()
		return nil, ErrCallInProgress
	}
	c := &Call{ID: newCallID(), To: m.cfg.To, Origin: req.Origin, Direction: Outbound, done: make(chan struct{}), state: StateRinging}
	m.current = c
	m.mu.Unlock()
	release := func() {
		m.mu.Lock()
		m.current = nil
		m.mu.Unlock()
	}
	c.ChatID = req.ChatID
	if c.ChatID == "" {
		title := req.Title
		if title == "" {
			title = "Call " + m.d.Clock().Format("2 Jan 15:04")
		}
		id, err := m.d.Chats.Create(ctx, title)
		if err != nil {
			release()
			return nil, fmt.Errorf("creating the call's chat: %w", err)
		}
		c.ChatID = id
	}
	if req.Opening == "" {
		req.Opening = m.cfg.Greeting
	}
	if req.RecordOpening {
		if err := m.d.Chats.Note(ctx, c.ChatID, req.Opening); err != nil {
			m.log.Warn("writing the call's opening line to its chat", "chat", c.ChatID, "err", err)
		}
	}
	var callCtx context.Context
	callCtx, c.hangup = context.WithCancelCause(m.ctx)
	m.remember(c)
	m.publish(c)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer c.hangup(nil)
		res := m.place(callCtx, c, req)
		m.finish(c, res)
		release()
		close(c.done)
	}()
	return c, nil
}

// remember keeps c for status queries.
func (m *Manager) remember(c *Call) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[c.ID] = c
	m.order = append(m.order, c.ID)
	if len(m.order) > keptCalls {
		delete(m.calls, m.order[0])
		m.order = m.order[1:]
	}
}

func newCallID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// publish tells the app about c; an inbound call is published once it
// has a chat (its PIN was right).
func (m *Manager) publish(c *Call) {
	c.mu.Lock()
	chatID := c.ChatID
	c.mu.Unlock()
	if m.d.Bus != nil && chatID != "" {
		m.d.Bus.Publish("voice.call", chatID, map[string]any{"call": c.Snapshot()})
	}
}

// finish records the outcome: the audit trail, a line in the chat (when
// the call has one), an event for the app.
func (m *Manager) finish(c *Call, res Result) {
	c.mu.Lock()
	c.result, c.state = res, StateEnded
	chatID := c.ChatID
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	data := map[string]any{"call_id": res.CallID, "to": res.To, "outcome": res.Outcome, "status": res.Status, "reason": res.Reason,
		"duration_ms": res.Duration.Milliseconds(), "ringing_ms": res.Ringing.Milliseconds(), "turns": res.Turns,
		"hung_up_by": res.HungUpBy, "origin": c.Origin, "packets_in": res.PacketsIn, "packets_out": res.PacketsOut,
		"direction": c.Direction}
	if c.Direction == Inbound {
		data["from"] = res.From
	}
	m.d.Audit(ctx, "voice.call", chatID, res.Summary(), data)
	if chatID != "" {
		if err := m.d.Chats.Note(ctx, chatID, res.Summary()); err != nil {
			m.log.Warn("writing the call's outcome to its chat", "chat", chatID, "err", err)
		}
	}
	m.publish(c)
	m.log.Info("SIP call ended", "call", c.ID, "outcome", res.Outcome, "status", res.Status, "reason", res.Reason, "duration", res.Duration)
}

// place runs a call from the INVITE to the hang-up.
func (m *Manager) place(ctx context.Context, c *Call, req CallRequest) Result {
	start := m.d.Clock()
	res := Result{CallID: c.ID, ChatID: c.ChatID, To: m.cfg.To, Direction: Outbound, Started: start}
	fail := func(o Outcome, status int, reason string) Result {
		res.Outcome, res.Status, res.Reason = o, status, reason
		if res.Ringing == 0 {
			res.Ringing = m.d.Clock().Sub(start)
		}
		return res
	}
	if m.reg.Host != "" && !m.Registration().Registered {
		// Registering first tells wrong credentials apart from a callee
		// who refuses, and catches a daemon that just started.
		if _, err := m.registerOnce(ctx); err != nil {
			var re *regError
			if errors.As(err, &re) && re.Outcome == AuthFailed {
				return fail(AuthFailed, re.Status, err.Error())
			}
			m.log.Info("calling without a registration", "err", err)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, m.cfg.ResponseTimeout)
	ip, err := m.localIP(lctx, m.target)
	cancel()
	if err != nil {
		return fail(NetworkError, 0, err.Error())
	}
	bindIP := ip
	if !m.cfg.LocalIP.IsValid() {
		bindIP = unspecified(ip)
	}
	med, err := openMedia(bindIP, m.cfg.RTPPortMin, m.cfg.RTPPortMax, m.log)
	if err != nil {
		return fail(MediaError, 0, err.Error())
	}
	defer med.close()
	cl, err := m.client(ip)
	if err != nil {
		return fail(NetworkError, 0, err.Error())
	}
	contact := m.contact(ip)
	dc := sipgo.NewDialogClientCache(cl, contact)
	m.mu.Lock()
	m.dialogs = dc
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.dialogs = nil
		m.mu.Unlock()
	}()

	var sid [8]byte
	_, _ = rand.Read(sid[:])
	sessID := binary.BigEndian.Uint64(sid[:]) >> 2 // room to count versions up
	invite := sip.NewRequest(sip.INVITE, m.target)
	invite.SetTransport(m.transport())
	from := &sip.FromHeader{DisplayName: "Hestia", Address: m.from, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	for _, h := range []sip.Header{from, &sip.ToHeader{Address: m.target}, &contact, sip.NewHeader("Content-Type", "application/sdp")} {
		invite.AppendHeader(h)
	}
	invite.SetBody(buildOffer(ip, med.port(), sessID))

	// The ring timeout bounds the whole wait; the response timeout ends
	// it early when the provider says nothing at all.
	ringCtx, cancelRing := context.WithTimeout(ctx, m.cfg.RingTimeout)
	defer cancelRing()
	waitCtx, cancelWait := context.WithCancelCause(ringCtx)
	defer cancelWait(nil)
	var responded, challenged atomic.Bool
	silence := time.AfterFunc(m.cfg.ResponseTimeout, func() {
		if !responded.Load() {
			// Nothing to CANCEL before a provisional response (RFC 3261
			// §9.1): sipgo gives up at once with this cause.
			cancelWait(sipgo.WaitAnswerForceCancelErr)
		}
	})
	defer silence.Stop()
	dialog, err := dc.WriteInvite(waitCtx, invite)
	if err != nil {
		return fail(NetworkError, 0, noResponse(m.target, err))
	}
	defer dialog.Close()
	err = dialog.WaitAnswer(waitCtx, sipgo.AnswerOptions{
		Username: m.cfg.AuthUsername, Password: m.cfg.Password,
		OnResponse: func(r *sip.Response) error {
			responded.Store(true)
			if r.StatusCode == sip.StatusUnauthorized || r.StatusCode == sip.StatusProxyAuthRequired {
				challenged.Store(true)
			}
			return nil
		},
	})
	res.Ringing = m.d.Clock().Sub(start)
	if err != nil {
		var dr *sipgo.ErrDialogResponse
		switch {
		case errors.As(err, &dr):
			o := classifyStatus(dr.Res.StatusCode, challenged.Load())
			if o == NoAnswer && dr.Res.StatusCode == 487 && ringCtx.Err() != nil {
				return fail(NoAnswer, 0, fmt.Sprintf("nobody answered within %s", m.cfg.RingTimeout))
			}
			return fail(o, dr.Res.StatusCode, dr.Res.Reason)
		case ctx.Err() != nil:
			// Hung up on request (or the daemon stopping) before anyone
			// picked up, whatever the provider had said by then.
			return fail(NoAnswer, 0, "cancelled before the phone was answered: "+causeText(ctx))
		case !responded.Load():
			return fail(NetworkError, 0, fmt.Sprintf("%s did not answer the INVITE within %s", m.target.HostPort(), m.cfg.ResponseTimeout))
		case ringCtx.Err() != nil:
			return fail(NoAnswer, 0, fmt.Sprintf("nobody answered within %s", m.cfg.RingTimeout))
		}
		return fail(NetworkError, 0, err.Error())
	}
	silence.Stop()
	answered := m.d.Clock()
	res.Answered = answered
	c.setState(StateAnswered)
	m.publish(c)
	ans, perr := parseAnswer(dialog.InviteResponse.Body())
	if err := dialog.Ack(ctx); err != nil {
		m.log.Warn("sending the ACK failed", "call", c.ID, "err", err)
	}
	bye := func() {
		bctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := dialog.Bye(bctx); err != nil {
			m.log.Info("the BYE was not confirmed", "call", c.ID, "err", err)
		}
	}
	if perr != nil {
		bye()
		res.Duration = m.d.Clock().Sub(answered)
		res.HungUpBy = "hestia"
		return fail(MediaError, 0, perr.Error())
	}

	m.mu.Lock()
	m.active = &activeMedia{med: med, ans: ans, ip: ip, contact: contact, id: sessID, version: sessID}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.active = nil
		m.mu.Unlock()
	}()
	convCtx, cancelConv := context.WithTimeoutCause(ctx, m.cfg.MaxDuration, m.maxDurationErr())
	defer cancelConv()
	cv := newConversation(m, c, med, req.Opening)
	m.converse(convCtx, cv, dialog.Context(), ans, &res)
	if res.HungUpBy != "phone" {
		bye()
	}
	return res
}

func (m *Manager) maxDurationErr() error {
	return fmt.Errorf("the call reached its longest allowed duration (%s)", m.cfg.MaxDuration)
}

// converse holds an answered call's conversation until it ends and
// records how it went in res (answered at res.Answered).
func (m *Manager) converse(ctx context.Context, cv *conversation, hungUp context.Context, ans answer, res *Result) {
	end := cv.run(ctx, hungUp, ans)
	res.Duration = m.d.Clock().Sub(res.Answered)
	res.Turns = cv.turns
	res.PacketsIn, res.PacketsOut = cv.med.recvd.Load(), cv.med.sent.Load()
	res.Outcome, res.Reason, res.HungUpBy = Answered, end.reason, end.by
	if end.mediaErr {
		res.Outcome = MediaError
	}
}

// unspecified is the any-address of ip's family, to bind RTP on.
func unspecified(ip netip.Addr) netip.Addr {
	if ip.Is4() {
		return netip.IPv4Unspecified()
	}
	return netip.IPv6Unspecified()
}

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return "cancelled"
}
