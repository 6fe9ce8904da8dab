// Package sipcall is the assistant calling the user back over SIP: a SIP
// user agent (github.com/emiago/sipgo for the signalling) that registers
// to the user's provider or PBX, places a call to the user's own number,
// and holds the conversation over RTP with G.711.
//
// A call is a channel, not a second agent. What the user says becomes an
// ordinary turn in the call's chat with the channel origin "SIP call"
// (TurnOptions), so every tool call goes through the authority exactly as
// from the web app or Telegram; the reply streams back as events and is
// spoken sentence by sentence. The loop per utterance:
//
//	RTP in → G.711 → PCM 8 kHz → 16 kHz → voice.VAD → stt tier → turn
//	turn events → voice.Splitter → tts tier → 8 kHz → G.711 → RTP out
//
// Approvals: while an approval card of the call's chat is pending, it is
// read out with "press 1 to approve, 2 to deny", and the digits (RFC 4733
// telephone-events) decide it through the approval broker, where the first
// decision from any surface wins. A question card is answered by speaking.
//
// Every call ends with a classified Outcome (answered, no_answer, busy,
// rejected, unreachable, auth_failed, media_error, network_error, and
// pin_failed for an inbound call) and its duration, recorded in the audit
// trail and as a line in the call's chat (an inbound call without the
// right PIN has no chat: only the audit row).
//
// Media is implemented here rather than with a media library: the call
// needs plain RTP/AVP, G.711 and telephone-events, a few hundred lines
// with their parsers fuzzed, while the maintained Go media stack on top of
// sipgo (emiago/diago v0.42) links pion's WebRTC stack (ICE, DTLS, SRTP,
// TURN, mDNS: 21 more modules, 2.2 MB and about 0.2 ms of package init in
// every process of the one binary), keeps its RTP port range in package
// variables, and reworked its media API in the release before
// (docs/decisions/sip-media.md).
//
// Inbound calls (Config.Inbound, off by default) are answered only from
// the owner's numbers, and only after a PIN entered on the keypad: caller
// ID is not authentication (a From header, and even a provider's
// P-Asserted-Identity, can be forged). When Hestia registers, an INVITE
// must come from the registrar's address (403 otherwise: a stranger on the
// network sending straight to Hestia's port); a number not listed is
// declined with 603 and audited; a call while another is in progress is
// 486. The call is answered with the same G.711 negotiation, "Hestia.
// Enter your PIN, then hash." is spoken, and the digits are compared in
// constant time; three wrong PINs, or none within 20 s, end the call. Until
// the PIN is right, nothing the caller says or presses reaches a chat, a
// turn or an approval. Three failed calls within 10 minutes decline every
// inbound call for the next 10 minutes, twice as long at each lock-out in
// a row up to a day, and alert the owner. After the PIN the call is the
// same conversation as an outbound one, in a fresh chat, its turns
// labelled "SIP call (inbound)" (InboundTurnOptions).
//
// Barge-in (bargein.go): the line is full duplex, as voice mode is. The
// caller speaking over the assistant stops it within half a second: the
// queued audio is dropped, the rest of the turn in progress is muted, and
// what the caller says, taken from a pre-roll before they began, is
// transcribed and submitted, which interrupts that turn in the agent (it
// keeps what it had streamed in the chat). While the assistant speaks the
// onset is stricter than in silence: louder (-35 dBFS), longer (300 ms of
// speech within 500 ms), and no more than 12 dB below the loudest audio
// sent in the last 320 ms, which the line's echo of it is not; so a
// cough, line noise or that echo does not stop it. # still skips what is
// being said. Speech never decides an approval: it stops the read-out,
// and while an approval waits the caller's words queue behind its turn
// instead of interrupting (and so cancelling) it. Config.HalfDuplex
// ([voice.sip] barge_in = false) ignores the caller while the assistant
// speaks.
//
// Scope: one call at a time, outbound, and inbound from the owner's
// numbers with a PIN (others are declined with 603); full duplex unless
// barge-in is off; an inbound call needs its SDP offer in the INVITE; no
// SRTP, no RTCP.
package sipcall

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/voice"
)

// Label names the call's origin on approval cards and in the audit trail;
// InboundLabel a call the owner placed to Hestia, so a card tells the two
// apart.
const (
	Label        = "SIP call"
	InboundLabel = "SIP call (inbound)"
)

// TurnOptions are the options of a turn started by what the user says on
// a call: the channel origin labelled "SIP call". The person is the owner
// (Hestia called the owner's own number), so the turn is not tainted by
// the words themselves; content the turn reads still taints it as usual.
// The adversarial origin matrix builds its SIP row with this.
func TurnOptions() agent.Options {
	return agent.Options{Kind: authority.Channel, OriginLabel: Label}
}

// InboundTurnOptions are the options of a turn on a call the owner placed
// to Hestia: the channel origin labelled "SIP call (inbound)". The caller
// proved to be the owner with the PIN (the number alone proves nothing),
// so, as on an outbound call, the words do not taint the turn. The
// adversarial origin matrix has a row built with this.
func InboundTurnOptions() agent.Options {
	return agent.Options{Kind: authority.Channel, OriginLabel: InboundLabel}
}

// Config is one SIP account and the number to call.
type Config struct {
	// Registrar is the provider's or PBX's SIP URI ("sip:sip.example.net",
	// "sips:pbx.lan:5061"); empty when calls go out without registering
	// (then To must be a full URI).
	Registrar string
	// Username and AuthUsername (default Username) and Password are the
	// account's credentials for digest authentication (RFC 3261 §22).
	Username, AuthUsername, Password string
	// From is the caller's address of record (default
	// sip:Username@registrar-host).
	From string
	// To is the user's number ("+393471234567", "100") — dialled at the
	// registrar's host — or a full SIP URI.
	To string
	// Transport is udp (default), tcp or tls.
	Transport string
	// ListenPort is the local SIP port (0: one the system picks).
	ListenPort int
	// LocalIP is the address put in Contact, Via and SDP; zero: the
	// address the system routes to the provider from.
	LocalIP netip.Addr
	// RTPPortMin and RTPPortMax bound the local RTP ports (0: any).
	RTPPortMin, RTPPortMax int
	// RingTimeout is how long the phone may ring (default 30 s).
	RingTimeout time.Duration
	// ResponseTimeout is how long the provider may take to answer the
	// INVITE at all, with 100 Trying or more (default 10 s); past it the
	// call is a network_error.
	ResponseTimeout time.Duration
	// RTPTimeout ends a call whose audio stopped (default 15 s).
	RTPTimeout time.Duration
	// MaxDuration bounds a call (default 20 min).
	MaxDuration time.Duration
	// RegisterExpiry is the registration lifetime asked for (default 5
	// min); it is refreshed before it runs out.
	RegisterExpiry time.Duration
	// Voice is the tts voice ("" for the tier's default).
	Voice string
	// Greeting is spoken when a call was placed without an opening line.
	Greeting string
	// VAD tunes the detection of the caller's utterances (the voice
	// socket's detector). On a call the end of speech waits 700 ms by
	// default, so a breath between phrases does not end a turn, and
	// speech may be as quiet as -50 dBFS: a phone line carries little
	// noise, and a caller away from the handset is quiet.
	VAD voice.VADConfig
	// HalfDuplex turns barge-in off: the caller's audio is ignored while
	// the assistant speaks (and for a moment after, against its echo),
	// and only # skips what is being said. With barge-in (the default)
	// the caller speaking over the assistant stops it, under a stricter
	// onset than listening in silence (bargein.go); a line whose echo
	// makes the assistant interrupt itself needs this.
	HalfDuplex bool
	// TLS configures the tls transport (nil: system roots, TLS 1.2+).
	TLS *tls.Config

	// Inbound answers calls to Hestia (off: every new INVITE is declined
	// with 603). It needs PIN.
	Inbound bool
	// InboundNumbers are the numbers allowed to call, compared with the
	// caller's after dropping spaces and a leading + or 00 (empty: the
	// user part of To).
	InboundNumbers []string
	// PIN is what an inbound caller enters on the keypad (the configuration
	// asks for 6 to 16 digits).
	PIN string
	// PINTimeout ends an inbound call whose PIN is not right this long
	// after the prompt (default 20 s).
	PINTimeout time.Duration
}

func (c *Config) defaults() {
	if c.Transport == "" {
		c.Transport = "udp"
	}
	if c.AuthUsername == "" {
		c.AuthUsername = c.Username
	}
	if c.RingTimeout <= 0 {
		c.RingTimeout = 30 * time.Second
	}
	if c.ResponseTimeout <= 0 {
		c.ResponseTimeout = 10 * time.Second
	}
	if c.RTPTimeout <= 0 {
		c.RTPTimeout = 15 * time.Second
	}
	if c.MaxDuration <= 0 {
		c.MaxDuration = 20 * time.Minute
	}
	if c.RegisterExpiry <= 0 {
		c.RegisterExpiry = 5 * time.Minute
	}
	if c.Greeting == "" {
		c.Greeting = "Hello, this is Hestia. How can I help?"
	}
	if c.TLS == nil {
		c.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.VAD.EndSilence <= 0 {
		c.VAD.EndSilence = 700 * time.Millisecond
	}
	if c.VAD.MinLevel == 0 {
		c.VAD.MinLevel = -50
	}
	if c.PINTimeout <= 0 {
		c.PINTimeout = 20 * time.Second
	}
}

// Agent starts turns in a chat with the options given (TurnOptions, or
// InboundTurnOptions on a call the owner placed).
type Agent interface {
	Submit(ctx context.Context, chatID, text string, o agent.Options) error
}

// Chats creates the call's chat and writes the lines the call adds to it
// (the opening line, the outcome) as the assistant's.
type Chats interface {
	Create(ctx context.Context, title string) (string, error)
	Exists(ctx context.Context, id string) (bool, error)
	Note(ctx context.Context, chatID, text string) error
}

// Approvals is the approval broker.
type Approvals interface {
	Decide(id string, d approval.Decision) (approval.Decision, error)
	Pending(chatID string) []approval.Request
}

// Transcriber is the stt tier.
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error)
}

// Speaker is the tts tier: text to audio in the format asked for ("wav"
// or "pcm" here), returning the audio and its content type.
type Speaker interface {
	Speak(ctx context.Context, text, voice, format string) ([]byte, string, error)
}

// Deps are what a call drives.
type Deps struct {
	Agent     Agent
	Chats     Chats
	Approvals Approvals
	Bus       *events.Bus
	STT       Transcriber // nil: the caller's speech cannot be understood
	TTS       Speaker     // nil: calls are refused as not configured
	// Audit records an audit event.
	Audit func(ctx context.Context, typ, chatID, summary string, data any)
	// Alert tells the owner of something they should act on (inbound
	// calls locked out after failed PINs); optional.
	Alert func(ctx context.Context, title, body string)
	Log   *slog.Logger
	Clock func() time.Time
}

// Errors from Call.
var (
	ErrCallInProgress = errors.New("a call is already in progress")
	ErrNoSpeech       = errors.New("calls need the tts tier: map [llm.tiers] tts to an OpenAI-compatible /audio/speech endpoint")
	ErrClosed         = errors.New("the SIP user agent is shut down")
)

// Manager is the SIP user agent: it keeps the registration and places
// calls, one at a time.
type Manager struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	target sip.Uri // whom to call
	reg    sip.Uri // the registrar; Host empty when not registering
	from   sip.Uri

	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	listen net.Addr // the SIP listener's address (udp, tcp)
	lnConn net.PacketConn
	lnTCP  net.Listener
	lnWG   sync.WaitGroup // the listener's serving goroutine

	ctx    context.Context // the manager's life; calls run under it
	cancel context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // asks the registration loop to try now

	registrar registrar

	// inbound is the set of normalised numbers allowed to call and the
	// PIN's digest (the PIN itself is not kept); read-only after New.
	inbound inboundPolicy

	mu        sync.Mutex // guards the fields below
	current   *Call
	dialogs   *sipgo.DialogClientCache // the current outbound call's dialogs
	inDialog  *inboundDialog           // the current inbound call's dialog
	active    *activeMedia             // the current call's stream, once answered
	regSt     RegState
	calls     map[string]*Call // recent calls by id, for status queries
	order     []string
	closed    bool
	guard     inboundGuard // the lock-out after failed PINs, refusals audited
	regAddrs  []netip.Addr // the registrar's resolved addresses…
	regAddrAt time.Time    // …as of then
}

// RegState is the registration's state.
type RegState struct {
	// Registering says a registrar is configured.
	Registering bool      `json:"registering"`
	Registered  bool      `json:"registered"`
	Outcome     Outcome   `json:"outcome,omitempty"` // of the last failure
	Error       string    `json:"error,omitempty"`
	At          time.Time `json:"at,omitzero"` // of the last attempt
	Expires     time.Time `json:"expires,omitzero"`
}

// New builds the user agent and binds its SIP port.
func New(cfg Config, d Deps) (*Manager, error) {
	cfg.defaults()
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Audit == nil {
		d.Audit = func(context.Context, string, string, string, any) {}
	}
	m := &Manager{cfg: cfg, d: d, log: d.Log, kick: make(chan struct{}, 1), calls: map[string]*Call{}}
	if err := m.parseAddresses(); err != nil {
		return nil, err
	}
	if err := m.inbound.init(&m.cfg, m.target); err != nil {
		return nil, err
	}
	m.cfg.PIN = "" // only its digest is kept
	m.regSt.Registering = m.reg.Host != ""
	ua, err := sipgo.NewUA(
		sipgo.WithUserAgent("Hestia"),
		sipgo.WithUserAgentHostname(m.from.Host),
		sipgo.WithUserAgenTLSConfig(cfg.TLS),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(d.Log)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(d.Log)),
	)
	if err != nil {
		return nil, fmt.Errorf("starting the SIP user agent: %w", err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(d.Log))
	if err != nil {
		ua.Close()
		return nil, fmt.Errorf("starting the SIP user agent: %w", err)
	}
	m.ua, m.srv = ua, srv
	srv.OnBye(m.onBye)
	srv.OnInvite(m.onInvite)
	srv.OnAck(m.onAck)
	srv.OnUpdate(m.reinvite) // RFC 3311: session timers refresh with UPDATE too
	srv.OnOptions(func(req *sip.Request, tx sip.ServerTransaction) {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
	})
	// The manager's life starts before the port is bound: an INVITE may
	// arrive at once.
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if err := m.bind(); err != nil {
		m.cancel()
		ua.Close()
		return nil, err
	}
	return m, nil
}

// parseAddresses reads the registrar, the caller and the callee.
func (m *Manager) parseAddresses() error {
	c := m.cfg
	switch c.Transport {
	case "udp", "tcp", "tls":
	default:
		return fmt.Errorf("transport %q is not udp, tcp or tls", c.Transport)
	}
	if c.Registrar != "" {
		if err := sip.ParseUri(c.Registrar, &m.reg); err != nil || m.reg.Host == "" {
			return fmt.Errorf("registrar %q is not a SIP URI like sip:sip.example.net", c.Registrar)
		}
		m.reg.User = ""
	}
	switch {
	case strings.HasPrefix(c.To, "sip:") || strings.HasPrefix(c.To, "sips:"):
		if err := sip.ParseUri(c.To, &m.target); err != nil || m.target.Host == "" {
			return fmt.Errorf("the number to call %q is not a SIP URI like sip:100@pbx.lan", c.To)
		}
	case c.To == "":
		return errors.New("no number to call is set")
	case m.reg.Host == "":
		return fmt.Errorf("the number to call %q needs a registrar to be dialled at, or must be a full SIP URI", c.To)
	default:
		m.target = sip.Uri{Scheme: m.reg.Scheme, User: c.To, Host: m.reg.Host, Port: m.reg.Port}
	}
	if c.From != "" {
		if err := sip.ParseUri(c.From, &m.from); err != nil || m.from.Host == "" {
			return fmt.Errorf("from %q is not a SIP URI like sip:alice@sip.example.net", c.From)
		}
	} else {
		host := m.reg.Host
		if host == "" {
			host = m.target.Host
		}
		m.from = sip.Uri{Scheme: "sip", User: c.Username, Host: host}
	}
	if m.from.User == "" {
		m.from.User = c.Username
	}
	if m.from.User == "" {
		m.from.User = "hestia"
	}
	return nil
}

// bind opens the SIP listener: requests go out from it and in-dialog
// requests (BYE) come back to it.
func (m *Manager) bind() error {
	host := "0.0.0.0"
	if m.cfg.LocalIP.IsValid() {
		host = m.cfg.LocalIP.String()
	}
	addr := net.JoinHostPort(host, strconv.Itoa(m.cfg.ListenPort))
	switch m.cfg.Transport {
	case "udp":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return fmt.Errorf("binding the SIP port %s: %w", addr, err)
		}
		m.lnConn, m.listen = pc, pc.LocalAddr()
		m.lnWG.Add(1)
		go func() {
			defer m.lnWG.Done()
			_ = m.srv.ServeUDP(pc)
		}()
		// Requests go out from this socket once the transport layer
		// knows it; ServeUDP registers it from its goroutine.
		tl := m.ua.TransportLayer()
		for i := 0; ; i++ {
			if _, err := tl.GetConnection("udp", pc.LocalAddr().String()); err == nil {
				break
			}
			if i == 200 {
				pc.Close()
				return fmt.Errorf("the SIP port %s did not start serving", addr)
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "tcp":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("binding the SIP port %s: %w", addr, err)
		}
		m.lnTCP, m.listen = ln, ln.Addr()
		m.lnWG.Add(1)
		go func() {
			defer m.lnWG.Done()
			_ = m.srv.ServeTCP(ln)
		}()
	case "tls":
		// Without a certificate of its own Hestia cannot accept TLS; the
		// provider reaches it over the connection Hestia opened (the
		// usual connection reuse for TLS).
	}
	return nil
}

// transport is the request transport name.
func (m *Manager) transport() string {
	if m.cfg.Transport == "tls" {
		return "TLS"
	}
	return strings.ToUpper(m.cfg.Transport)
}

// localIP is the address the provider sees Hestia at, for dest.
func (m *Manager) localIP(ctx context.Context, dest sip.Uri) (netip.Addr, error) {
	if m.cfg.LocalIP.IsValid() && !m.cfg.LocalIP.IsUnspecified() {
		return m.cfg.LocalIP, nil
	}
	host := dest.Host
	lookup := func(h string) ([]netip.Addr, error) {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip4", h)
		if err != nil || len(ips) == 0 {
			ips, err = net.DefaultResolver.LookupNetIP(ctx, "ip", h)
		}
		if err == nil && len(ips) == 0 {
			err = errors.New("no address")
		}
		return ips, err
	}
	ips, err := lookup(host)
	if err != nil {
		// A provider's domain may have only SRV records (RFC 3263 §4.2),
		// as sipgo's own resolution falls back to.
		proto := "udp"
		if m.cfg.Transport != "udp" {
			proto = m.cfg.Transport
		}
		if _, srvs, serr := net.DefaultResolver.LookupSRV(ctx, "sip", proto, host); serr == nil && len(srvs) > 0 {
			ips, err = lookup(strings.TrimSuffix(srvs[0].Target, "."))
		}
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolving %s: %w", host, err)
	}
	// A UDP "connection" sends nothing: it only asks the kernel which
	// source address routes to the provider.
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(ips[0], 5060)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("finding the route to %s: %w", host, err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}

// client is a request sender advertising ip in Via.
func (m *Manager) client(ip netip.Addr) (*sipgo.Client, error) {
	opts := []sipgo.ClientOption{sipgo.WithClientHostname(ip.String()), sipgo.WithClientLogger(m.log), sipgo.WithClientNAT()}
	if m.lnConn != nil {
		// Send from the listener so that replies, NAT bindings and the
		// registered contact all share one port.
		opts = append(opts, sipgo.WithClientConnectionAddr(m.lnConn.LocalAddr().String()))
	}
	return sipgo.NewClient(m.ua, opts...)
}

// contact is Hestia's Contact for requests advertising ip.
func (m *Manager) contact(ip netip.Addr) sip.ContactHeader {
	u := sip.Uri{Scheme: "sip", User: m.from.User, Host: ip.String()}
	if m.listen != nil {
		u.Port = addrPort(m.listen)
	}
	if m.cfg.Transport != "udp" {
		u.UriParams = sip.NewParams()
		u.UriParams.Add("transport", m.cfg.Transport)
	}
	return sip.ContactHeader{Address: u}
}

func addrPort(a net.Addr) int {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.Port
	case *net.TCPAddr:
		return a.Port
	}
	return 0
}

// Target is the address called.
func (m *Manager) Target() string { return m.target.String() }

// Registration reports the registration's state.
func (m *Manager) Registration() RegState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.regSt
}

// Run keeps the registration until ctx ends, then hangs up a call in
// progress, unregisters and closes the user agent.
func (m *Manager) Run(ctx context.Context) error {
	defer m.Close()
	if m.reg.Host == "" {
		<-ctx.Done()
		return nil
	}
	return m.registerLoop(ctx)
}

// Close ends a call in progress and releases the ports. Safe to call more
// than once.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait() // calls end under the cancelled context, then the listener
	if m.lnConn != nil {
		m.lnConn.Close()
	}
	if m.lnTCP != nil {
		m.lnTCP.Close()
	}
	m.ua.Close()
	m.lnWG.Wait()
}

// activeMedia is what a re-INVITE of the call in progress is answered
// from.
type activeMedia struct {
	med     *media
	ans     answer
	ip      netip.Addr
	contact sip.ContactHeader
	id      uint64
	version uint64 // the o= line's last session version; guarded by Manager.mu
}

// onInvite answers a re-INVITE within the call in progress (a session
// refresh, the phone moving its audio); a new call to Hestia is declined
// with 603 unless inbound calls are on (inbound.go).
func (m *Manager) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); to != nil && to.Params.Has("tag") {
		m.reinvite(req, tx)
		return
	}
	if !m.cfg.Inbound {
		from := ""
		if f := req.From(); f != nil {
			from = f.Address.String()
		}
		m.log.Info("declined an incoming SIP call (inbound calls are off)", "from", from)
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusGlobalDecline, "Decline", nil))
		return
	}
	m.answerInbound(req, tx)
}

// inboundDialog is the current inbound call's dialog.
type inboundDialog struct {
	sess *sipgo.DialogServerSession
	// bye says the caller's BYE ended it (perhaps before its ACK was
	// handled: the call was answered all the same).
	bye atomic.Bool
}

// inDialogMatches returns the current inbound call's dialog when req
// belongs to it (Hestia is its UAS: RFC 3261 §12.2.2), else nil.
func (m *Manager) inDialogMatches(req *sip.Request) *inboundDialog {
	m.mu.Lock()
	in := m.inDialog
	m.mu.Unlock()
	if in == nil {
		return nil
	}
	if id, err := sip.DialogIDFromRequestUAS(req); err != nil || id != in.sess.ID {
		return nil
	}
	return in
}

// onAck confirms the current inbound call's dialog; an ACK for a
// re-INVITE's 200 needs nothing.
func (m *Manager) onAck(req *sip.Request, tx sip.ServerTransaction) {
	if in := m.inDialogMatches(req); in != nil {
		_ = in.sess.ReadAck(req, tx) // a re-INVITE's ACK has another CSeq: nothing to confirm
	}
}

// reinvite answers an offer within the call (a re-INVITE, RFC 3261 §14.2,
// or an UPDATE, RFC 3311): the same
// format, at the address the new offer names. A changed codec is refused
// with 488 and the call goes on as it was (§14.2: the session is
// unchanged after a failed re-INVITE).
func (m *Manager) reinvite(req *sip.Request, tx sip.ServerTransaction) {
	m.mu.Lock()
	dc, am := m.dialogs, m.active
	m.mu.Unlock()
	matched := false
	if dc != nil {
		_, err := dc.MatchRequestDialog(req)
		matched = err == nil
	}
	if !matched {
		matched = m.inDialogMatches(req) != nil
	}
	if am == nil || !matched {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		return
	}
	body := req.Body()
	if len(body) > 0 {
		offer, err := parseAnswer(body)
		if err != nil || offer.Codec != am.ans.Codec {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 488, "Not Acceptable Here", nil))
			return
		}
		am.med.retarget(offer.Addr)
	} else if req.Method == sip.UPDATE {
		// A refresh without an offer (RFC 4028 §10): only the 200.
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
		return
	}
	m.mu.Lock()
	am.version++
	sdp := buildAnswer(am.ip, am.med.port(), am.id, am.version, am.ans)
	m.mu.Unlock()
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", sdp)
	res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	res.AppendHeader(sip.HeaderClone(&am.contact))
	_ = tx.Respond(res)
}

// onBye ends the current call when the phone hangs up.
func (m *Manager) onBye(req *sip.Request, tx sip.ServerTransaction) {
	if in := m.inDialogMatches(req); in != nil {
		if err := in.sess.ReadBye(req, tx); err != nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
			return
		}
		in.bye.Store(true)
		return
	}
	m.mu.Lock()
	dc := m.dialogs
	m.mu.Unlock()
	if dc == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		return
	}
	if err := dc.ReadBye(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
	}
}
