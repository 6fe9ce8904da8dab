// Package voice is the web app's hands-free conversation: microphone audio
// streamed over a WebSocket, utterances cut by voice-activity detection,
// transcribed by the stt tier, run as ordinary turns of the chat, and the
// reply spoken sentence by sentence through the tts tier as it streams.
//
// Voice is a channel, not a second agent: an utterance becomes
// agent.Submit with the channel origin labelled "Voice" (TurnOptions), so
// its tool calls go through the authority, the audit and the budget like
// every turn, and the transcript is the chat's own. The session follows
// the chat on the event bus like a channel's follower: message.delta of
// its turns is split into sentences (Splitter) and spoken, turn.finished
// flushes the rest, approval.requested is read out ("… Approve or deny?")
// and answered by a strict spoken yes/no (ParseAnswer) or by tapping the
// card, approval.resolved clears it.
//
// Barge-in: speech starting while the assistant speaks or thinks stops
// playback at once (a "stop" message, queued synthesis dropped, the rest of
// that turn muted); the utterance, once transcribed, is submitted like any
// new message, which interrupts the running turn in the agent.
//
// Voice-activity detection is server-side and energy-based (vad.go) on the
// 16 kHz PCM frames the browser sends: 20 ms frames against an adaptive
// noise floor, 60 ms of speech to start (200 ms while the assistant
// speaks, against its own voice leaking back), 600 ms of silence to end.
//
// Authentication: browsers cannot set headers on a WebSocket, so the app
// first asks POST /api/voice/tickets (bearer token, chat scope) for a
// one-time ticket, valid 30 seconds, bound to the caller's device identity
// and one chat; GET /voice/socket?ticket=… redeems it. The socket accepts
// only same-origin pages, and a session whose device is revoked ends.
package voice

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/speech"
)

// Label names the voice origin on approval cards and in the audit.
const Label = "Voice"

// TurnOptions are the options of every voice turn: the channel origin,
// labelled Voice. The adversarial origin matrix builds its voice row with
// this, so it tests what the daemon submits.
func TurnOptions() agent.Options {
	return agent.Options{Kind: authority.Channel, OriginLabel: Label}
}

// SocketPath is the WebSocket route, served outside bearer auth (the
// ticket authenticates it).
const SocketPath = "/voice/socket"

// Agent starts turns (agent.Agent.Submit with TurnOptions).
type Agent interface {
	Submit(ctx context.Context, chatID, text string) (turnID string, err error)
}

// Chats creates a chat for a conversation started without one and tells
// whether one exists.
type Chats interface {
	Create(ctx context.Context, title string) (string, error)
	Exists(ctx context.Context, id string) (bool, error)
}

// Approvals decides pending requests (the approval broker).
type Approvals interface {
	Decide(id string, d approval.Decision) (approval.Decision, error)
}

// Transcriber turns an utterance (WAV) into text: the stt tier.
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error)
}

// Speaker turns a sentence into audio and its content type: the tts tier
// or espeak-ng.
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, string, error)
}

// Deps are the components a voice conversation drives.
type Deps struct {
	Agent     Agent
	Chats     Chats
	Approvals Approvals
	Bus       *events.Bus
	STT       Transcriber // nil: voice mode is unavailable
	TTS       Speaker     // nil: replies are shown, not spoken
	// STTPath and TTSPath say which speech path is active (speech.Path*).
	STTPath, TTSPath string
	// Audit records an event; optional.
	Audit func(ctx context.Context, typ, chatID, summary string, data any)
	// Revoked reports whether a paired device was revoked since its
	// ticket was issued; optional (nothing is ever revoked).
	Revoked func(ctx context.Context, deviceID string) bool
	Log     *slog.Logger
	Clock   func() time.Time
}

// Config tunes the service. Zero values take the defaults.
type Config struct {
	VAD VADConfig
	// TicketTTL is how long a ticket may wait to be redeemed (30 s).
	TicketTTL time.Duration
	// MaxSessions bounds open conversations (8).
	MaxSessions int
	// Timing sends the client the latency split of each turn's first
	// audio (the bench reads it); off by default.
	Timing bool
}

// Service hands out tickets and runs the sessions.
type Service struct {
	cfg Config
	d   Deps

	mu       sync.Mutex // guards the fields below
	tickets  map[string]ticket
	sessions map[*session]struct{}
	closed   bool
	wg       sync.WaitGroup
}

type ticket struct {
	id      devices.Identity
	chatID  string
	expires time.Time
}

// New returns a service.
func New(cfg Config, d Deps) *Service {
	cfg.VAD.defaults()
	if cfg.TicketTTL <= 0 {
		cfg.TicketTTL = 30 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 8
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Audit == nil {
		d.Audit = func(context.Context, string, string, string, any) {}
	}
	if d.STTPath == "" || d.STT == nil {
		d.STTPath = speech.PathNone
	}
	if d.TTSPath == "" {
		d.TTSPath = speech.PathNone
	}
	return &Service{cfg: cfg, d: d, tickets: map[string]ticket{}, sessions: map[*session]struct{}{}}
}

// Routes registers the authenticated routes: GET /api/voice (read) and
// POST /api/voice/tickets (chat).
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/voice", s.handleStatus)
	mux.HandleFunc("POST /api/voice/tickets", s.handleTicket)
}

// Status is GET /api/voice: whether voice mode can run and which speech
// paths it would use.
type Status struct {
	Available bool   `json:"available"`
	STT       string `json:"stt"`
	TTS       string `json:"tts"`
	// Reason says why voice mode is not available.
	Reason string `json:"reason,omitempty"`
}

// Status reports the speech paths.
func (s *Service) Status() Status {
	st := Status{Available: s.d.STT != nil, STT: s.d.STTPath, TTS: s.d.TTSPath}
	if !st.Available {
		st.Reason = "Voice mode needs speech-to-text: " + speech.ErrNotConfigured.Error()
	}
	return st
}

func (s *Service) handleStatus(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, s.Status())
}

type ticketBody struct {
	ChatID string `json:"chat_id"`
}

func (s *Service) handleTicket(w http.ResponseWriter, r *http.Request) {
	if err := devices.Require(r.Context(), devices.Chat, "start a voice conversation"); err != nil {
		httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
		return
	}
	id, _ := devices.FromContext(r.Context())
	if s.d.STT == nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "not_configured", s.Status().Reason)
		return
	}
	var body ticketBody
	if r.ContentLength != 0 {
		if err := httpjson.DecodeLimit(w, r, &body, 4096); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
	}
	ctx := r.Context()
	chatID := strings.TrimSpace(body.ChatID)
	if chatID == "" {
		c, err := s.d.Chats.Create(ctx, "Voice conversation")
		if err != nil {
			httpjson.Respond(w, r, 0, nil, httpjson.Internal("creating a chat for the voice conversation failed", err))
			return
		}
		chatID = c
	} else if ok, err := s.d.Chats.Exists(ctx, chatID); err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("looking up the chat failed", err))
		return
	} else if !ok {
		httpjson.Error(w, http.StatusNotFound, "not_found", "chat "+chatID+" does not exist")
		return
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	tok := base64.RawURLEncoding.EncodeToString(raw)
	now := s.d.Clock()
	exp := now.Add(s.cfg.TicketTTL)
	s.mu.Lock()
	for k, t := range s.tickets {
		if !now.Before(t.expires) {
			delete(s.tickets, k)
		}
	}
	if len(s.tickets) >= 64 {
		s.mu.Unlock()
		httpjson.Error(w, http.StatusTooManyRequests, "too_many_tickets", "too many voice tickets are waiting to be used; try again in a minute")
		return
	}
	s.tickets[ticketKey(tok)] = ticket{id: id, chatID: chatID, expires: exp}
	s.mu.Unlock()
	httpjson.Write(w, http.StatusOK, map[string]any{
		"ticket": tok, "chat_id": chatID, "url": SocketPath + "?ticket=" + tok, "expires_at": exp.UTC(),
		"stt": s.d.STTPath, "tts": s.d.TTSPath,
	})
}

// ticketKey is how a ticket is stored: its hash, so the map never holds a
// usable credential.
func ticketKey(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// redeem takes a ticket once.
func (s *Service) redeem(tok string) (ticket, bool) {
	if tok == "" || len(tok) > 128 {
		return ticket{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := ticketKey(tok)
	t, ok := s.tickets[k]
	delete(s.tickets, k)
	if !ok || !s.d.Clock().Before(t.expires) {
		return ticket{}, false
	}
	return t, true
}

// SocketHandler serves GET SocketPath; register it outside bearer auth.
func (s *Service) SocketHandler() http.Handler { return http.HandlerFunc(s.handleSocket) }

func (s *Service) handleSocket(w http.ResponseWriter, r *http.Request) {
	t, ok := s.redeem(r.URL.Query().Get("ticket"))
	if !ok {
		httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "a valid voice ticket is required: POST /api/voice/tickets, then connect within 30 seconds")
		return
	}
	if t.id.DeviceID != "" && s.d.Revoked != nil && s.d.Revoked(r.Context(), t.id.DeviceID) {
		httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "the device was revoked")
		return
	}
	s.mu.Lock()
	full := len(s.sessions) >= s.cfg.MaxSessions
	closed := s.closed
	s.mu.Unlock()
	if closed {
		httpjson.Error(w, http.StatusServiceUnavailable, "shutting_down", "the daemon is shutting down")
		return
	}
	if full {
		httpjson.Error(w, http.StatusTooManyRequests, "too_many_sessions", "too many voice conversations are open")
		return
	}
	// The default origin check admits only pages of this daemon's own
	// origin: another site cannot open a socket with a stolen ticket.
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		s.d.Log.Info("voice socket not accepted", "err", err)
		return
	}
	conn.SetReadLimit(MaxFrame)
	ss := newSession(s, conn, t)
	if !s.add(ss) {
		conn.Close(websocket.StatusGoingAway, "the daemon is shutting down")
		return
	}
	defer s.remove(ss)
	ss.run()
}

// add registers a session; an older session of the same chat ends, so
// one chat is never spoken by two sessions at once.
func (s *Service) add(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for o := range s.sessions {
		if o.chatID == ss.chatID {
			o.end(websocket.StatusPolicyViolation, "replaced by a newer voice session in this chat")
		}
	}
	s.sessions[ss] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *Service) remove(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss)
	s.mu.Unlock()
	s.wg.Done()
}

// Sessions reports how many conversations are open.
func (s *Service) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// Close ends every session and waits for them.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	for ss := range s.sessions {
		ss.end(websocket.StatusGoingAway, "the daemon is shutting down")
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

// Run waits for ctx and then closes the service (a daemon worker).
func (s *Service) Run(ctx context.Context) error {
	<-ctx.Done()
	return s.Close()
}

func canApprove(id devices.Identity) bool { return devices.Has(id.Scopes, devices.Approve) }

var errEnded = errors.New("the voice session ended")
