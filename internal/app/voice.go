package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/speech"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/voice"
)

// initVoice serves the web app's voice mode (internal/voice): the ticket
// and status routes on the authenticated API, the socket as a public route
// that the ticket authenticates, and the doctor check that says which
// speech path is active.
func (a *App) initVoice(ctx context.Context) error {
	svc, err := a.speechService()
	if err != nil {
		return err
	}
	a.AddCheck(doctor.Check{Name: "speech", Run: func(context.Context) (doctor.Status, string) { return speechHealth(svc) }})
	if a.Server == nil || a.core.agent == nil {
		return nil
	}
	core := a.core
	d := voice.Deps{
		Agent: voiceAgent{core.agent}, Chats: tgChats{core}, Approvals: core.approvals, Bus: core.bus,
		STTPath: svc.STTPath(), TTSPath: svc.TTSPath(),
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			core.audit.Record(ctx, audit.Entry{Type: typ, ChatID: chatID, Summary: summary, Data: data})
		},
		Revoked: a.deviceRevoked,
		Log:     a.Log.With("component", "voice"),
		Clock:   a.Now,
	}
	// Typed nils would read as configured.
	if m := svc.For("voice", "transcribe"); m != nil {
		d.STT = m
	}
	if svc.TTSPath() != speech.PathNone {
		d.TTS = voiceSpeaker{svc}
	}
	v := voice.New(voice.Config{}, d)
	v.Routes(a.Server.API())
	a.Server.HandlePublic("GET "+voice.SocketPath, v.SocketHandler())
	a.AddWorker("voice", v.Run)
	a.OnClose(v.Close)
	return nil
}

// speechHealth says which speech path is active: stt endpoint or none,
// tts endpoint, espeak-ng or none.
func speechHealth(svc *speech.Service) (doctor.Status, string) {
	stt, tts := svc.STTPath(), svc.TTSPath()
	if stt == speech.PathNone && tts == speech.PathNone {
		return doctor.Skip, "stt: none; tts: none (map [llm.tiers] stt and tts to OpenAI-compatible audio endpoints, or install espeak-ng for local speech)"
	}
	detail := "stt: " + stt
	if svc.STT != nil {
		detail += fmt.Sprintf(" (%s at %s)", svc.STT.Model, hostOf(svc.STT.BaseURL))
	} else {
		detail += " (voice notes and voice mode need [llm.tiers] stt)"
	}
	detail += "; tts: " + tts
	switch {
	case svc.TTS != nil:
		detail += fmt.Sprintf(" (%s at %s)", svc.TTS.Model, hostOf(svc.TTS.BaseURL))
	case svc.Local != nil:
		detail += " (local fallback " + svc.Local.Path + ")"
	}
	return doctor.OK, detail
}

func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
}

// deviceRevoked reports whether a paired device was revoked (or removed)
// since its voice ticket was issued.
func (a *App) deviceRevoked(ctx context.Context, id string) bool {
	if a.Devices == nil {
		return false
	}
	d, err := a.Devices.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return true
	}
	if err != nil {
		// Fail closed: a session that cannot be vouched for ends.
		a.Log.Warn("checking a voice session's device", "device", id, "err", err)
		return true
	}
	return d.RevokedAt != nil
}

// voiceAgent starts voice turns with the channel origin labelled Voice.
type voiceAgent struct{ ag *agent.Agent }

func (v voiceAgent) Submit(ctx context.Context, chatID, text string) (string, error) {
	t, err := v.ag.Submit(ctx, chatID, text, voice.TurnOptions())
	if err != nil {
		return "", err
	}
	return t.ID, nil
}

// voiceSpeaker speaks a voice reply as WAV through the tts tier or
// espeak-ng, metered as voice/speak.
type voiceSpeaker struct{ svc *speech.Service }

func (v voiceSpeaker) Speak(ctx context.Context, text string) ([]byte, string, error) {
	return v.svc.Speak(ctx, text, "", "wav", "voice", "speak")
}
