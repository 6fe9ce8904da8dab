package sipcall

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Routes registers the call API on the authenticated mux. Every route
// needs a paired device's token (or the local token): GET is the read
// scope, the POSTs the chat scope (internal/devices), like sending a
// message.
//
//	POST /api/voice/call              {"text", "chat_id"?} rings the user; 202 with the call
//	POST /api/voice/quick-call        {"text"?} the one-tap phone shortcut: a fresh chat, then ring
//	GET  /api/voice/call              the registration and the call in progress
//	GET  /api/voice/calls/{id}        one recent call, its outcome once ended
//	POST /api/voice/calls/{id}/hangup ends it
//
// The quick call lives under /api on purpose: a route outside it would be
// public, and ringing the owner's phone from any page or script on the
// network is not something to leave open.
func (m *Manager) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/voice/call", m.handleCall)
	mux.HandleFunc("POST /api/voice/quick-call", m.handleQuickCall)
	mux.HandleFunc("GET /api/voice/call", func(w http.ResponseWriter, r *http.Request) {
		httpjson.Respond(w, r, http.StatusOK, m.Status(), nil)
	})
	mux.HandleFunc("GET /api/voice/calls/{id}", func(w http.ResponseWriter, r *http.Request) {
		c, ok := m.Get(r.PathValue("id"))
		if !ok {
			httpjson.Error(w, http.StatusNotFound, httpjson.CodeNotFound, "no recent call with that id")
			return
		}
		httpjson.Respond(w, r, http.StatusOK, c.Snapshot(), nil)
	})
	mux.HandleFunc("POST /api/voice/calls/{id}/hangup", func(w http.ResponseWriter, r *http.Request) {
		c, ok := m.Get(r.PathValue("id"))
		if !ok {
			httpjson.Error(w, http.StatusNotFound, httpjson.CodeNotFound, "no recent call with that id")
			return
		}
		c.Hangup()
		// The BYE (or the CANCEL of a ringing call) takes a moment; the
		// answer shows the outcome when it is in by then.
		select {
		case <-c.Done():
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		httpjson.Respond(w, r, http.StatusOK, c.Snapshot(), nil)
	})
}

// MaxOpening bounds an opening line (characters).
const MaxOpening = 2000

type callBody struct {
	Text   string `json:"text"`
	ChatID string `json:"chat_id"`
}

func (m *Manager) handleCall(w http.ResponseWriter, r *http.Request) {
	var b callBody
	if err := httpjson.DecodeLimit(w, r, &b, 16<<10); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	b.Text = strings.TrimSpace(b.Text)
	if b.Text == "" || utf8.RuneCountInString(b.Text) > MaxOpening {
		httpjson.Error(w, http.StatusBadRequest, httpjson.CodeBadRequest, fmt.Sprintf("text, the opening line, must be 1 to %d characters", MaxOpening))
		return
	}
	req := CallRequest{ChatID: b.ChatID, Opening: b.Text, RecordOpening: true, Origin: "api", Title: "Call: " + clipTitle(b.Text)}
	m.answerCall(w, r, req)
}

func (m *Manager) handleQuickCall(w http.ResponseWriter, r *http.Request) {
	var b callBody
	if r.ContentLength != 0 {
		if err := httpjson.DecodeLimit(w, r, &b, 16<<10); err != nil {
			httpjson.BadRequest(w, err)
			return
		}
	}
	b.Text = strings.TrimSpace(b.Text)
	if utf8.RuneCountInString(b.Text) > MaxOpening || b.ChatID != "" {
		httpjson.Error(w, http.StatusBadRequest, httpjson.CodeBadRequest, fmt.Sprintf("a quick call takes only text, at most %d characters, and always starts a new chat", MaxOpening))
		return
	}
	if b.Text == "" {
		b.Text = m.cfg.Greeting
	}
	m.answerCall(w, r, CallRequest{Opening: b.Text, RecordOpening: true, Origin: "quick-call", Title: "Quick call"})
}

func (m *Manager) answerCall(w http.ResponseWriter, r *http.Request, req CallRequest) {
	if req.ChatID != "" {
		ok, err := m.d.Chats.Exists(r.Context(), req.ChatID)
		if err != nil {
			httpjson.Respond(w, r, 0, nil, httpjson.Internal("checking the chat", err))
			return
		}
		if !ok {
			httpjson.Error(w, http.StatusNotFound, httpjson.CodeNotFound, "no chat with that id")
			return
		}
	}
	c, err := m.Call(context.WithoutCancel(r.Context()), req)
	switch {
	case errors.Is(err, ErrCallInProgress):
		httpjson.Error(w, http.StatusConflict, httpjson.CodeConflict, err.Error())
	case errors.Is(err, ErrNoSpeech), errors.Is(err, ErrClosed):
		httpjson.Error(w, http.StatusServiceUnavailable, "not_configured", err.Error())
	case err != nil:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("placing the call", err))
	default:
		httpjson.Respond(w, r, http.StatusAccepted, c.Snapshot(), nil)
	}
}

func clipTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 60 {
		s = string([]rune(s)[:59]) + "…"
	}
	return s
}
