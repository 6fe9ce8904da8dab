package whatsapp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// The subset of the Cloud API (Graph API) Hestia uses, over plain HTTP:
// POST /{phone-number-id}/messages, POST /{phone-number-id}/media,
// GET /{media-id} and the media download. Meta publishes no Go SDK, and
// the third-party ones wrap these four calls in far more surface.

// APIError is the Graph API's error object: {"error":{"message", "type",
// "code", "error_subcode", "error_data":{"details"}, "fbtrace_id"}}.
type APIError struct {
	Op         string // what failed, e.g. "sending a message"
	Status     int    // HTTP status
	Code       int
	Subcode    int
	Type       string
	Message    string
	Details    string
	Trace      string
	RetryAfter time.Duration // from a Retry-After header, when sent
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("whatsapp: %s: HTTP %d", e.Op, e.Status)
	if e.Code != 0 {
		s += fmt.Sprintf(", error %d", e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Details != "" && e.Details != e.Message {
		s += " (" + e.Details + ")"
	}
	return s
}

// graphError is the wire shape of a Graph API error.
type graphError struct {
	Error *struct {
		Message   string `json:"message"`
		Type      string `json:"type"`
		Code      int    `json:"code"`
		Subcode   int    `json:"error_subcode"`
		ErrorData struct {
			Details string `json:"details"`
		} `json:"error_data"`
		Trace string `json:"fbtrace_id"`
	} `json:"error"`
}

// maxAnswer bounds an API answer (a send's answer is a few hundred bytes).
const maxAnswer = 1 << 20

// api calls the Cloud API with a bearer token. The token travels only in
// the Authorization header, never in a URL, so no error holds it.
type api struct {
	base    string   // API root with version, e.g. https://graph.facebook.com/v23.0
	origin  *url.URL // the API root's scheme and host
	token   string
	phoneID string
	http    *http.Client
}

func (c *api) request(ctx context.Context, method, path string, body io.Reader, ctype string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// do sends req and decodes a JSON answer into out, or the error object.
func (c *api) do(req *http.Request, op string, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("whatsapp: %s: reading the answer: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(op, resp, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("whatsapp: %s: the answer (HTTP %d) is not the expected JSON: %w", op, resp.StatusCode, err)
		}
	}
	return nil
}

func decodeError(op string, resp *http.Response, data []byte) error {
	e := &APIError{Op: op, Status: resp.StatusCode}
	if s, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var g graphError
	if json.Unmarshal(data, &g) == nil && g.Error != nil {
		e.Code, e.Subcode, e.Type, e.Message, e.Details, e.Trace = g.Error.Code, g.Error.Subcode, g.Error.Type, g.Error.Message, g.Error.ErrorData.Details, g.Error.Trace
	} else {
		// A proxy's or load balancer's page: name the status only.
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// sendAnswer is the answer to POST /{phone-number-id}/messages.
type sendAnswer struct {
	Messages []struct {
		ID string `json:"id"`
	} `json:"messages"`
}

// postMessage sends one message object (its "type" and payload; the
// envelope fields are added here) and returns the new message's id.
func (c *api) postMessage(ctx context.Context, msg map[string]any) (string, error) {
	const op = "sending a message"
	msg["messaging_product"] = "whatsapp"
	msg["recipient_type"] = "individual"
	body, err := json.Marshal(msg)
	if err != nil {
		return "", fmt.Errorf("whatsapp: %s: encoding: %w", op, err)
	}
	req, err := c.request(ctx, http.MethodPost, "/"+url.PathEscape(c.phoneID)+"/messages", bytes.NewReader(body), "application/json")
	if err != nil {
		return "", fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	var out sendAnswer
	if err := c.do(req, op, &out); err != nil {
		return "", err
	}
	if len(out.Messages) == 0 || out.Messages[0].ID == "" {
		return "", fmt.Errorf("whatsapp: %s: the answer names no message id", op)
	}
	return out.Messages[0].ID, nil
}

// button is one reply button.
type button struct {
	ID    string
	Title string
}

func textMessage(to, body, replyTo string) map[string]any {
	m := map[string]any{"to": to, "type": "text", "text": map[string]any{"body": body, "preview_url": false}}
	if replyTo != "" {
		m["context"] = map[string]string{"message_id": replyTo}
	}
	return m
}

func buttonMessage(to, body string, buttons []button) map[string]any {
	bs := make([]map[string]any, len(buttons))
	for i, b := range buttons {
		bs[i] = map[string]any{"type": "reply", "reply": map[string]string{"id": b.ID, "title": b.Title}}
	}
	return map[string]any{"to": to, "type": "interactive", "interactive": map[string]any{
		"type":   "button",
		"body":   map[string]string{"text": body},
		"action": map[string]any{"buttons": bs},
	}}
}

func templateMessage(to, name, lang string, params []string) map[string]any {
	t := map[string]any{"name": name, "language": map[string]string{"code": lang}}
	if len(params) > 0 {
		ps := make([]map[string]string, len(params))
		for i, p := range params {
			ps[i] = map[string]string{"type": "text", "text": p}
		}
		t["components"] = []map[string]any{{"type": "body", "parameters": ps}}
	}
	return map[string]any{"to": to, "type": "template", "template": t}
}

// uploadMedia uploads audio for a later audio message and returns its id.
func (c *api) uploadMedia(ctx context.Context, data []byte, mime, filename string) (string, error) {
	const op = "uploading media"
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("messaging_product", "whatsapp")
	_ = mw.WriteField("type", mime)
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
	h.Set("Content-Type", mime)
	fw, err := mw.CreatePart(h)
	if err != nil {
		return "", fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	if _, err := fw.Write(data); err != nil {
		return "", fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	if err := mw.Close(); err != nil {
		return "", fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	req, err := c.request(ctx, http.MethodPost, "/"+url.PathEscape(c.phoneID)+"/media", &body, mw.FormDataContentType())
	if err != nil {
		return "", fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := c.do(req, op, &out); err != nil {
		return "", err
	}
	if out.ID == "" {
		return "", fmt.Errorf("whatsapp: %s: the answer names no media id", op)
	}
	return out.ID, nil
}

// phoneInfo is the answer to GET /{phone-number-id}.
type phoneInfo struct {
	ID           string `json:"id"`
	Display      string `json:"display_phone_number"`
	VerifiedName string `json:"verified_name"`
}

// phoneNumber reads the business number the adapter sends from; it
// changes nothing.
func (c *api) phoneNumber(ctx context.Context) (phoneInfo, error) {
	const op = "reading the business phone number"
	req, err := c.request(ctx, http.MethodGet, "/"+url.PathEscape(c.phoneID)+"?fields=display_phone_number,verified_name", nil, "")
	if err != nil {
		return phoneInfo{}, fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	var out phoneInfo
	if err := c.do(req, op, &out); err != nil {
		return phoneInfo{}, err
	}
	if out.Display == "" {
		return phoneInfo{}, fmt.Errorf("whatsapp: %s: the answer names no display_phone_number (is phone_number_id the id of a WhatsApp business number?)", op)
	}
	return out, nil
}

// mediaInfo is the answer to GET /{media-id}.
type mediaInfo struct {
	URL      string `json:"url"`
	MimeType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	FileSize int64  `json:"file_size"`
	ID       string `json:"id"`
}

// ErrTooLarge is returned when a file is over the limit asked for; it is
// the relay's own, so an attachment's refusal names the limit.
var ErrTooLarge = channels.ErrTooLarge

// fetchMedia resolves a media id to its short-lived URL and downloads it
// (both with the bearer token), refusing more than max bytes and content
// whose SHA-256 differs from the one Meta names.
func (c *api) fetchMedia(ctx context.Context, op, id string, max int64) ([]byte, error) {
	req, err := c.request(ctx, http.MethodGet, "/"+url.PathEscape(id)+"?phone_number_id="+url.QueryEscape(c.phoneID), nil, "")
	if err != nil {
		return nil, fmt.Errorf("whatsapp: %s: %w", op, err)
	}
	var info mediaInfo
	if err := c.do(req, op, &info); err != nil {
		return nil, err
	}
	if info.FileSize > max {
		return nil, fmt.Errorf("whatsapp: %s: %w (%d bytes, at most %d)", op, ErrTooLarge, info.FileSize, max)
	}
	u, err := url.Parse(info.URL)
	if err != nil || !c.mediaHostAllowed(u) {
		// The token goes with the download: only to Meta's hosts.
		return nil, fmt.Errorf("whatsapp: %s: the media URL is not on a Meta host", op)
	}
	req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: %s: %w", op, redactURL(err))
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("whatsapp: %s: downloading: %w", op, redactURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("whatsapp: %s: downloading: HTTP %d", op, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("whatsapp: %s: downloading: %w", op, redactURL(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("whatsapp: %s: %w (over %d bytes)", op, ErrTooLarge, max)
	}
	if want, ok := decodeSum(info.SHA256); ok {
		if got := sha256.Sum256(data); !bytes.Equal(got[:], want) {
			return nil, fmt.Errorf("whatsapp: %s: the download does not match its SHA-256", op)
		}
	}
	return data, nil
}

// decodeSum reads a SHA-256 as Meta writes it: hex in media answers,
// base64 in webhook payloads. Anything else is not checked.
func decodeSum(s string) ([]byte, bool) {
	if b, err := hex.DecodeString(s); err == nil && len(b) == sha256.Size {
		return b, true
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == sha256.Size {
		return b, true
	}
	return nil, false
}

// metaHosts are the domains Meta serves media downloads from.
var metaHosts = []string{"fbsbx.com", "facebook.com", "whatsapp.net", "fbcdn.net"}

func (c *api) mediaHostAllowed(u *url.URL) bool {
	if u.Scheme == c.origin.Scheme && u.Host == c.origin.Host {
		return true // the configured API root (the fake in tests)
	}
	if u.Scheme != "https" || u.User != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, d := range metaHosts {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// redactURL drops the URL from a transport error: media URLs carry
// signed query parameters.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}
