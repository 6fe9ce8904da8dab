package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/chat"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/speech"
	"github.com/hestia-dev/hestia/internal/voice/sipcall"
)

// initSIP builds the SIP user agent of [voice.sip]: the assistant calling
// the user back. Its turns are channel turns in the call's chat (the same
// agent, approval broker, event bus and audit log as every surface); its
// routes are on the authenticated API; the registration is a worker.
func (a *App) initSIP(ctx context.Context) error {
	c := a.Config.Voice.SIP
	if !c.Enabled() || a.Server == nil || a.core.agent == nil {
		return nil
	}
	password := ""
	if c.Password != "" || c.PasswordFile != "" {
		p, err := readSecret("voice.sip.password", c.Password, c.PasswordFile)
		if err != nil {
			return err
		}
		password = p
	}
	svc, err := a.speechService()
	if err != nil {
		return err
	}
	if svc.TTS == nil {
		svc.Local = speech.FindEspeak()
	}
	cfg := sipcall.Config{
		Registrar: c.Registrar, Username: c.Username, AuthUsername: c.AuthUsername, Password: password,
		From: c.From, To: c.Number, Transport: c.Transport, ListenPort: c.ListenPort,
		RTPPortMin: c.RTPPortMin, RTPPortMax: c.RTPPortMax,
		RingTimeout: c.RingTimeout.D(), RTPTimeout: c.RTPTimeout.D(), MaxDuration: c.MaxDuration.D(),
		Voice: c.Voice, Greeting: c.Greeting, HalfDuplex: !c.BargeIn,
	}
	if c.Inbound {
		// Validated with the configuration; read again here, so a PIN
		// file changed since then is checked as it is now.
		pin, err := c.InboundPIN()
		if err != nil {
			return err
		}
		// Empty numbers: the number Hestia calls may call back.
		cfg.Inbound, cfg.PIN, cfg.InboundNumbers = true, pin, c.InboundNumbers
	}
	if c.LocalIP != "" {
		cfg.LocalIP, _ = netip.ParseAddr(c.LocalIP) // validated with the configuration
	}
	core := a.core
	d := sipcall.Deps{
		Agent: sipAgent{core.agent}, Chats: sipChats{core}, Approvals: core.approvals, Bus: core.bus,
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			core.audit.Record(ctx, audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
		},
		Log: a.Log.With("component", "sip"), Clock: a.Now,
	}
	if a.Notify != nil {
		d.Alert = func(ctx context.Context, title, body string) {
			n := notify.Notification{Kind: "call", Key: "sip-lockout:" + a.Now().UTC().Format(time.RFC3339), Title: title, Body: body, URL: "/settings"}
			if _, err := a.Notify.Notify(ctx, n); err != nil {
				a.Log.Warn("notifying the SIP lock-out", "err", err)
			}
		}
	}
	// Typed nils would read as configured.
	if m := svc.For("sip", "transcribe"); m != nil {
		d.STT = m
	}
	if svc.TTSPath() != speech.PathNone {
		d.TTS = sipSpeaker{svc}
	}
	m, err := sipcall.New(cfg, d)
	if err != nil {
		return fmt.Errorf("voice.sip: %w", err)
	}
	a.sip = m
	m.Routes(a.Server.API())
	a.AddWorker("sip", m.Run)
	a.OnClose(func() error { m.Close(); return nil })
	a.AddCheck(doctor.Check{Name: "sip", Run: func(context.Context) (doctor.Status, string) { return sipHealth(m, d) }})
	return nil
}

// sipHealth reports the registration and what a call would lack.
func sipHealth(m *sipcall.Manager, d sipcall.Deps) (doctor.Status, string) {
	st := m.Status()
	var msg string
	status := doctor.OK
	switch r := st.Registration; {
	case !r.Registering:
		msg = "calls " + m.Target() + " without registering"
	case r.Registered:
		msg = fmt.Sprintf("registered; calls %s", m.Target())
	case r.At.IsZero():
		msg = "registering…; calls " + m.Target()
	default:
		status, msg = doctor.Warn, fmt.Sprintf("not registered (%s: %s)", r.Outcome, r.Error)
		if r.Outcome == sipcall.AuthFailed {
			status = doctor.Fail
			msg += "; check voice.sip.username and the password"
		}
	}
	switch in := st.Inbound; {
	case !in.Enabled:
		msg += "; inbound calls off"
	case !in.LockedUntil.IsZero():
		if status == doctor.OK {
			status = doctor.Warn
		}
		msg += fmt.Sprintf("; inbound calls from %s (PIN required) declined until %s after failed PINs", strings.Join(in.Numbers, ", "), in.LockedUntil.Local().Format("15:04"))
	default:
		msg += fmt.Sprintf("; inbound calls on from %s (PIN required)", strings.Join(in.Numbers, ", "))
	}
	switch {
	case d.TTS == nil:
		status, msg = doctor.Fail, msg+"; calls need text-to-speech: map [llm.tiers] tts or install espeak-ng"
	case d.STT == nil:
		if status == doctor.OK {
			status = doctor.Warn
		}
		msg += "; without [llm.tiers] stt a call can only read out and take keypad approvals"
	}
	return status, msg
}

// sipAgent starts call turns with the SIP call origin the call names
// (sipcall.TurnOptions, or InboundTurnOptions on a call the owner placed).
type sipAgent struct{ ag *agent.Agent }

func (s sipAgent) Submit(ctx context.Context, chatID, text string, o agent.Options) error {
	_, err := s.ag.Submit(ctx, chatID, text, o)
	return err
}

// sipChats creates call chats and writes the call's own lines (the
// opening, the outcome) into them as the assistant's.
type sipChats struct{ core agentCore }

func (s sipChats) Create(ctx context.Context, title string) (string, error) {
	return tgChats(s).Create(ctx, title)
}

func (s sipChats) Exists(ctx context.Context, id string) (bool, error) {
	return tgChats(s).Exists(ctx, id)
}

func (s sipChats) Note(ctx context.Context, chatID, text string) error {
	msg := &chat.Message{Role: chat.RoleAssistant, Content: text}
	if err := s.core.chats.Append(ctx, chatID, msg); err != nil {
		return err
	}
	s.core.bus.Publish("message.created", chatID, map[string]any{"message": msg})
	return nil
}

// sipSpeaker speaks through the tts tier (or espeak-ng), metered as
// sip/speak.
type sipSpeaker struct{ svc *speech.Service }

func (s sipSpeaker) Speak(ctx context.Context, text, voice, format string) ([]byte, string, error) {
	return s.svc.Speak(ctx, text, voice, format, "sip", "speak")
}

// maxSpokenResult bounds what a delivery call reads out; the whole result
// is in the chat.
const maxSpokenResult = 600

// deliverCall calls the user with a job's or watch's result: the result
// is read out as the opening line and the call continues in the result's
// chat, so "rebook it" has the context (and the taint of the watch's
// message, which makes a write need an approval — answered with the
// keypad).
func (a *App) deliverCall(ctx context.Context, x notify.Notification) error {
	if a.sip == nil {
		return errors.New("calls are not configured ([voice.sip] number)")
	}
	text := strings.TrimSpace(x.Title)
	if body := strings.TrimSpace(x.Body); body != "" {
		if text != "" && !strings.HasSuffix(text, ".") {
			text += "."
		}
		text += " " + body
	}
	if utf8.RuneCountInString(text) > maxSpokenResult {
		text = string([]rune(text)[:maxSpokenResult]) + "… The rest is in the app."
	}
	chatID := x.ChatID
	if chatID != "" {
		if ok, err := (sipChats{a.core}).Exists(ctx, chatID); err != nil || !ok {
			chatID = ""
		}
	}
	// A result without a chat (a built-in job) gets one, with the result
	// written into it so the call's turns can see what was said.
	_, err := a.sip.Call(ctx, sipcall.CallRequest{ChatID: chatID, Title: "Call: " + x.Title, Opening: text, RecordOpening: chatID == "", Origin: x.Key})
	return err
}
