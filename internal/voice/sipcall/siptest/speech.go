package siptest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Speech fakes the OpenAI-compatible speech endpoints on one server:
// POST /v1/audio/transcriptions answers the next scripted transcript
// (empty when the script has run out), POST /v1/audio/speech answers a
// 24 kHz WAV tone lasting PerChar for each character of the input.
type Speech struct {
	URL string // base URL up to and including /v1
	// PerChar is the length of speech per input character (default
	// 40 ms, so a 25-character sentence is a one-second tone).
	PerChar time.Duration

	mu          sync.Mutex
	transcripts []string
	heard       []int    // bytes of each recording transcribed
	recordings  [][]byte // the recordings (WAV files)
	spoken      []string
}

// NewSpeech starts the fake; transcripts are answered in order.
func NewSpeech(t testing.TB, transcripts ...string) *Speech {
	s := &Speech{PerChar: 40 * time.Millisecond, transcripts: transcripts}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/v1"
	return s
}

func (s *Speech) serve(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/audio/transcriptions":
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, `{"error":{"message":"no file"}}`, 400)
			return
		}
		data, _ := io.ReadAll(f)
		s.mu.Lock()
		s.heard = append(s.heard, len(data))
		s.recordings = append(s.recordings, data)
		text := ""
		if len(s.transcripts) > 0 {
			text, s.transcripts = s.transcripts[0], s.transcripts[1:]
		}
		s.mu.Unlock()
		_ = json.NewEncoder(w).Encode(map[string]string{"text": text})
	case "/v1/audio/speech":
		var body struct {
			Input  string `json:"input"`
			Format string `json:"response_format"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || strings.TrimSpace(body.Input) == "" {
			http.Error(w, `{"error":{"message":"bad request"}}`, 400)
			return
		}
		s.mu.Lock()
		s.spoken = append(s.spoken, body.Input)
		per := s.PerChar
		s.mu.Unlock()
		d := time.Duration(len([]rune(body.Input))) * per
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(WAV(Tone(440, 9000, d, 24000), 24000))
	default:
		http.NotFound(w, r)
	}
}

// Spoken lists the texts sent to the tts endpoint.
func (s *Speech) Spoken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.spoken...)
}

// Heard lists the sizes of the recordings sent to the stt endpoint.
func (s *Speech) Heard() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.heard...)
}

// Recordings are the files sent to the stt endpoint (WAV), in order.
func (s *Speech) Recordings() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.recordings...)
}

// SetPerChar changes PerChar once the fake may be serving.
func (s *Speech) SetPerChar(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.PerChar = d
}

// SpeechDuration is how long the fake speaks text.
func (s *Speech) SpeechDuration(text string) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.Duration(len([]rune(text))) * s.PerChar
}
