package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// MaxSpeechInput bounds the text of one speech request (characters), as
// OpenAI's /audio/speech does.
const MaxSpeechInput = 4096

// ErrTTSNotConfigured is returned when no tts tier is configured.
var ErrTTSNotConfigured = errors.New("text-to-speech is not configured: map [llm.tiers] tts to an OpenAI-compatible /audio/speech endpoint")

// Speak turns text into audio through /audio/speech. It returns the audio
// and its content type.
func (c *Client) Speak(ctx context.Context, text, voice, format string) ([]byte, string, error) {
	if c == nil {
		return nil, "", ErrTTSNotConfigured
	}
	if strings.TrimSpace(text) == "" {
		return nil, "", errors.New("there is no text to speak")
	}
	if n := utf8.RuneCountInString(text); n > MaxSpeechInput {
		return nil, "", fmt.Errorf("the text is %d characters; at most %d can be spoken at once", n, MaxSpeechInput)
	}
	if voice == "" {
		voice = "alloy"
	}
	if format == "" {
		format = "opus"
	}
	body, _ := json.Marshal(map[string]string{"model": c.Model, "input": text, "voice": voice, "response_format": format})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/audio/speech", bytes.NewReader(body))
	if err != nil {
		return nil, "", fmt.Errorf("building speech request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	replayable(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("calling the speech endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAudio+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading the speech audio: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("the speech endpoint answered %s", resp.Status)
	}
	if len(data) > MaxAudio {
		return nil, "", fmt.Errorf("the speech endpoint sent more than %d MB", MaxAudio>>20)
	}
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "application/octet-stream"
	}
	return data, ct, nil
}

type speechBody struct {
	Model          string  `json:"model"`
	Input          string  `json:"input"`
	Voice          string  `json:"voice"`
	ResponseFormat string  `json:"response_format"`
	Speed          float64 `json:"speed"`
}

func (s *Service) handleSpeech(w http.ResponseWriter, r *http.Request) {
	if s.TTS == nil && s.Local == nil {
		httpjson.Error(w, http.StatusServiceUnavailable, "not_configured", ErrTTSNotConfigured.Error())
		return
	}
	var b speechBody
	if err := httpjson.DecodeLenient(w, r, &b, 64<<10); err != nil {
		httpjson.BadRequest(w, err)
		return
	}
	if strings.TrimSpace(b.Input) == "" || utf8.RuneCountInString(b.Input) > MaxSpeechInput {
		httpjson.Error(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("input must be 1 to %d characters", MaxSpeechInput))
		return
	}
	switch b.ResponseFormat {
	case "", "opus", "mp3", "aac", "flac", "wav", "pcm":
	default:
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "response_format must be opus, mp3, aac, flac, wav or pcm")
		return
	}
	audio, ct, err := s.Speak(r.Context(), b.Input, b.Voice, b.ResponseFormat, r.Header.Get("x-usage-service"), r.Header.Get("x-usage-action"))
	if err != nil {
		httpjson.Error(w, http.StatusBadGateway, "tts_failed", err.Error())
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(audio)
}

// Speak is Client.Speak with a usage row for service/action. Without a
// tts tier it falls back to espeak-ng (Local), which speaks WAV whatever
// format was asked for; the content type says so.
func (s *Service) Speak(ctx context.Context, text, voice, format, service, action string) ([]byte, string, error) {
	var (
		audio []byte
		ct    string
	)
	switch {
	case s.TTS != nil:
		err := s.metered(ctx, "tts", s.TTS.Model, service, action, func() (err error) {
			audio, ct, err = s.TTS.Speak(ctx, text, voice, format)
			return err
		})
		return audio, ct, err
	case s.Local != nil:
		err := s.metered(ctx, "tts", EspeakModel, service, action, func() (err error) {
			audio, err = s.Local.Speak(ctx, text)
			return err
		})
		return audio, "audio/wav", err
	}
	return nil, "", ErrTTSNotConfigured
}

// Speech paths doctor and the voice mode report.
const (
	PathEndpoint = "endpoint"  // an OpenAI-compatible endpoint of the tier
	PathEspeak   = "espeak-ng" // the local fallback (text-to-speech only)
	PathNone     = "none"
)

// STTPath says how speech is turned into text: PathEndpoint or PathNone.
func (s *Service) STTPath() string {
	if s != nil && s.STT != nil {
		return PathEndpoint
	}
	return PathNone
}

// TTSPath says how text is spoken: PathEndpoint, PathEspeak or PathNone.
func (s *Service) TTSPath() string {
	switch {
	case s == nil:
		return PathNone
	case s.TTS != nil:
		return PathEndpoint
	case s.Local != nil:
		return PathEspeak
	}
	return PathNone
}

// SpeakerFor returns a speaker (Ogg/Opus voice) that records its calls
// under service/action, or nil when the tts tier is not mapped. espeak-ng
// does not count: it speaks WAV, which platforms do not show as a voice
// note.
func (s *Service) SpeakerFor(service, action string) *MeteredSpeaker {
	if s == nil || s.TTS == nil {
		return nil
	}
	return &MeteredSpeaker{s: s, service: service, action: action}
}

// MeteredSpeaker is a Service's text-to-speech bound to one attribution.
type MeteredSpeaker struct {
	s               *Service
	service, action string
}

// Speak implements the channels' Speaker: Opus audio in an Ogg container,
// which Telegram shows as a voice note.
func (m *MeteredSpeaker) Speak(ctx context.Context, text string) ([]byte, string, error) {
	return m.s.Speak(ctx, text, "", "opus", m.service, m.action)
}
