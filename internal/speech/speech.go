// Package speech reaches the speech tiers of [llm.tiers]: stt, an
// OpenAI-compatible POST /audio/transcriptions (a local whisper.cpp server,
// OpenAI, Groq …), and tts, POST /audio/speech. Voice notes from Telegram
// and the web app become text here before they reach the agent. Without a
// tts tier, espeak-ng speaks where it is installed (espeak.go): a robotic
// but zero-configuration local voice.
package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
)

// MaxAudio is the largest recording accepted for transcription (the
// OpenAI API's own limit).
const MaxAudio = 25 << 20

// ErrNotConfigured is returned when no speech tier is configured.
var ErrNotConfigured = errors.New("speech-to-text is not configured: map [llm.tiers] stt to an OpenAI-compatible transcription endpoint, e.g. stt = [\"whisper/whisper-1\"]")

// Client calls one speech endpoint.
type Client struct {
	BaseURL string // up to and including /v1
	APIKey  string
	Model   string
	HTTP    *http.Client
}

// FromConfig returns the client of the first target of a speech tier, or
// nil when the tier is not mapped.
func FromConfig(c config.LLMConfig, tier string) (*Client, error) {
	list := c.Tiers[tier]
	if len(list) == 0 {
		return nil, nil
	}
	provider, model := config.SplitLLMTarget(list[0])
	cl := &Client{Model: model, HTTP: &http.Client{Timeout: 2 * time.Minute}}
	if provider == "default" {
		cl.BaseURL, cl.APIKey = c.BaseURL, c.APIKey
	} else {
		p, ok := c.Providers[provider]
		if !ok {
			return nil, fmt.Errorf("llm.tiers.%s: provider %q is not defined in [llm.providers]", tier, provider)
		}
		if p.Kind == "anthropic" {
			return nil, fmt.Errorf("llm.tiers.%s: provider %q is Anthropic, which has no speech API", tier, provider)
		}
		cl.BaseURL, cl.APIKey = p.BaseURL, p.APIKey
	}
	if cl.BaseURL == "" || model == "" {
		return nil, fmt.Errorf("llm.tiers.%s: target %q needs a provider with a base_url and a model", tier, list[0])
	}
	cl.BaseURL = strings.TrimSuffix(cl.BaseURL, "/")
	return cl, nil
}

// Transcribe sends audio to /audio/transcriptions and returns the text.
func (c *Client) Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error) {
	if c == nil {
		return "", ErrNotConfigured
	}
	if len(audio) == 0 {
		return "", errors.New("the recording is empty")
	}
	if len(audio) > MaxAudio {
		return "", fmt.Errorf("the recording is %d MB; at most %d MB can be transcribed", len(audio)>>20, MaxAudio>>20)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("model", c.Model)
	_ = mw.WriteField("response_format", "json")
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", mime)
	fw, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("building transcription request: %w", err)
	}
	fw.Write(audio)
	mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/audio/transcriptions", &body)
	if err != nil {
		return "", fmt.Errorf("building transcription request: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	replayable(req)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return "", fmt.Errorf("calling the transcription endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("reading the transcription: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := resp.Status
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			msg += ": " + e.Error.Message
		}
		return "", fmt.Errorf("the transcription endpoint answered %s", msg)
	}
	var out struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("the transcription endpoint's answer is not JSON with a text field")
	}
	return strings.TrimSpace(out.Text), nil
}

// replayable lets the transport send a request again on a new connection
// when the kept-alive one it picked was closed by the server before any
// answer (whisper.cpp's and llama.cpp's servers close idle ones after a
// few seconds). net/http retries only requests it holds idempotent; an
// Idempotency-Key entry with no value marks one without sending a
// header. Transcribing or speaking twice changes nothing.
func replayable(r *http.Request) { r.Header["Idempotency-Key"] = nil }
