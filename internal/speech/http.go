package speech

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/llm"
)

// Service is the daemon's speech surface: the OpenAI-compatible
// POST /v1/audio/transcriptions (used by the web app's recorder and any
// local program) and the metered Transcribe the channels call. Every call
// is recorded in the usage ledger, attributed like the rest of the gateway.
type Service struct {
	STT *Client // nil when the stt tier is not mapped
	TTS *Client // nil when the tts tier is not mapped
	// Local speaks when TTS is nil: espeak-ng where it is installed
	// (FindEspeak), else nil.
	Local *Espeak
	Usage llm.Recorder
	Now   func() time.Time
}

// Routes registers the speech routes.
func (s *Service) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleTranscribe)
	mux.HandleFunc("POST /v1/audio/speech", s.handleSpeech)
}

// Transcribe is Client.Transcribe with a usage row for service/action.
func (s *Service) Transcribe(ctx context.Context, audio []byte, filename, mime, service, action string) (string, error) {
	if s.STT == nil {
		return "", ErrNotConfigured
	}
	var text string
	err := s.metered(ctx, "stt", s.STT.Model, service, action, func() (err error) {
		text, err = s.STT.Transcribe(ctx, audio, filename, mime)
		return err
	})
	return text, err
}

// metered runs call and records one usage row of kind (the tier and
// provider have the same name) under service/action.
func (s *Service) metered(ctx context.Context, kind, model, service, action string, call func() error) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	start := now()
	err := call()
	if s.Usage != nil {
		outcome := "ok"
		if err != nil {
			outcome = "error"
		}
		if service == "" {
			service = "unknown"
		}
		s.Usage.RecordCall(context.WithoutCancel(ctx), llm.CallRecord{Start: start, Service: service, Action: action, Kind: kind,
			Tier: llm.Tier(kind), Provider: kind, Model: model, Duration: now().Sub(start), Outcome: outcome, Attempts: 1})
	}
	return err
}

// For returns a transcriber that records its calls under service/action.
func (s *Service) For(service, action string) *Metered {
	if s == nil || s.STT == nil {
		return nil
	}
	return &Metered{s: s, service: service, action: action}
}

// Metered is a Service bound to one attribution.
type Metered struct {
	s               *Service
	service, action string
}

// Transcribe implements the channels' Transcriber.
func (m *Metered) Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error) {
	return m.s.Transcribe(ctx, audio, filename, mime, m.service, m.action)
}

func (s *Service) handleTranscribe(w http.ResponseWriter, r *http.Request) {
	if s.STT == nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "not_configured", ErrNotConfigured.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxAudio+64<<10)
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpjson.Error(w, http.StatusRequestEntityTooLarge, "too_large", "the recording is larger than 25 MB")
			return
		}
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "the body must be multipart/form-data with a file field")
		return
	}
	defer r.MultipartForm.RemoveAll()
	f, hdr, err := r.FormFile("file")
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "the form has no file field")
		return
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxAudio+1))
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "reading the uploaded file failed")
		return
	}
	if len(data) > MaxAudio {
		httpjson.Error(w, http.StatusRequestEntityTooLarge, "too_large", "the recording is larger than 25 MB")
		return
	}
	if len(data) == 0 {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "the recording is empty")
		return
	}
	mime := hdr.Header.Get("Content-Type")
	claimed := FormatForMIME(mime)
	got := Sniff(data)
	if got == "" || (claimed != "" && claimed != got) {
		httpjson.Error(w, http.StatusUnsupportedMediaType, "unsupported_audio", "the recording is not in a supported audio format (ogg/opus, webm, mp3, m4a, wav, flac)")
		return
	}
	if claimed == "" {
		mime = "audio/" + got
	}
	name := hdr.Filename
	if name == "" || !strings.Contains(name, ".") {
		name = "audio." + got
	}
	service := r.Header.Get("x-usage-service")
	if service == "" {
		service = "web"
	}
	action := r.Header.Get("x-usage-action")
	if action == "" {
		action = "transcribe"
	}
	text, err := s.Transcribe(r.Context(), data, name, mime, service, action)
	if err != nil {
		httpjson.Error(w, http.StatusBadGateway, "stt_failed", err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]string{"text": text})
}
