package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The subset of the Bot API (https://core.telegram.org/bots/api) Hestia
// uses, over plain HTTP: the API is small and stable, and a library would
// bring far more surface than these eight methods.

// Update is one incoming update.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message,omitempty"`
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
}

// User is a Telegram account.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is a Telegram conversation.
type Chat struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

// Message is a Telegram message.
type Message struct {
	MessageID int64  `json:"message_id"`
	From      *User  `json:"from,omitempty"`
	Chat      Chat   `json:"chat"`
	Date      int64  `json:"date,omitempty"`
	Text      string `json:"text,omitempty"`
	Voice     *Media `json:"voice,omitempty"`
	Audio     *Media `json:"audio,omitempty"`
	// Caption is the text sent with a file.
	Caption string `json:"caption,omitempty"`
	// Files: a document, a photo (one entry per size), a video, an
	// animation (which Telegram sends as a document too), a round video.
	Document  *Media      `json:"document,omitempty"`
	Photo     []PhotoSize `json:"photo,omitempty"`
	Video     *Media      `json:"video,omitempty"`
	Animation *Media      `json:"animation,omitempty"`
	VideoNote *Media      `json:"video_note,omitempty"`
	// ReplyMarkup is what the fake server records of sent messages.
	ReplyMarkup *InlineKeyboard `json:"reply_markup,omitempty"`
}

// Media is a voice note, audio file, document, video or animation.
type Media struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name,omitempty"`
	Duration int    `json:"duration,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	FileSize int64  `json:"file_size,omitempty"`
}

// PhotoSize is one size of a photo.
type PhotoSize struct {
	FileID   string `json:"file_id"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	FileSize int64  `json:"file_size,omitempty"`
}

// CallbackQuery is a press of an inline button.
type CallbackQuery struct {
	ID      string   `json:"id"`
	From    User     `json:"from"`
	Message *Message `json:"message,omitempty"`
	Data    string   `json:"data,omitempty"`
}

// InlineKeyboard is an inline keyboard markup.
type InlineKeyboard struct {
	Rows [][]Button `json:"inline_keyboard"`
}

// Button is one inline keyboard button: callback data or a URL.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	URL          string `json:"url,omitempty"`
}

// File is the answer of getFile.
type File struct {
	FileID   string `json:"file_id"`
	FileSize int64  `json:"file_size,omitempty"`
	FilePath string `json:"file_path,omitempty"`
}

// APIError is an answer with ok=false.
type APIError struct {
	Method      string
	Code        int
	Description string
	RetryAfter  int
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// Flooded reports whether err is Telegram's flood control (HTTP 429) and
// how long it asks to wait.
func Flooded(err error) (time.Duration, bool) {
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != http.StatusTooManyRequests {
		return 0, false
	}
	return time.Duration(max(ae.RetryAfter, 1)) * time.Second, true
}

// Client calls the Bot API. The token is part of every URL, so no error
// this client returns contains a URL.
type Client struct {
	base  string // API root, e.g. https://api.telegram.org
	token string
	http  *http.Client
	// Flood control: a send or edit answered 429 is retried after the
	// retry_after Telegram names, at most maxRetries times and only when
	// the wait is at most maxWait; anything longer fails at once rather
	// than stall a reply for minutes.
	maxRetries int
	maxWait    time.Duration
}

// Retry defaults.
const (
	DefaultMaxRetries = 3
	DefaultMaxWait    = 60 * time.Second
)

// NewClient returns a client for the bot token at the API root apiURL.
func NewClient(apiURL, token string) *Client {
	return &Client{base: strings.TrimSuffix(apiURL, "/"), token: token, http: &http.Client{}, maxRetries: DefaultMaxRetries, maxWait: DefaultMaxWait}
}

// retry runs fn again while it is answered 429 within the bounds.
func (c *Client) retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		wait, flooded := Flooded(err)
		if !flooded || attempt >= c.maxRetries || wait > c.maxWait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// callRetry is call with flood-control retries.
func (c *Client) callRetry(ctx context.Context, method string, params, out any) error {
	return c.retry(ctx, func() error { return c.call(ctx, method, params, out) })
}

// maxAnswer bounds a Bot API answer; updates batches are at most 100.
const maxAnswer = 8 << 20

func (c *Client) call(ctx context.Context, method string, params, out any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: encoding: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: building request: %w", method, redact(err))
	}
	req.Header.Set("Content-Type", "application/json")
	return c.do(req, method, out)
}

// do sends a prepared request and decodes the Bot API envelope.
func (c *Client) do(req *http.Request, method string, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("telegram %s: reading answer: %w", method, redact(err))
	}
	var env struct {
		OK          bool            `json:"ok"`
		Result      json.RawMessage `json:"result"`
		ErrorCode   int             `json:"error_code"`
		Description string          `json:"description"`
		Parameters  struct {
			RetryAfter int `json:"retry_after"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("telegram %s: answer is not JSON (HTTP %d)", method, resp.StatusCode)
	}
	if !env.OK {
		code := env.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		return &APIError{Method: method, Code: code, Description: env.Description, RetryAfter: env.Parameters.RetryAfter}
	}
	if out != nil {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return fmt.Errorf("telegram %s: decoding result: %w", method, err)
		}
	}
	return nil
}

// redact drops the request URL (which holds the token) from transport errors.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// GetMe returns the bot's own account; it changes nothing, so it proves
// the token works without sending.
func (c *Client) GetMe(ctx context.Context) (User, error) {
	var u User
	err := c.call(ctx, "getMe", map[string]any{}, &u)
	return u, err
}

// GetUpdates long-polls for updates after offset.
func (c *Client) GetUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]Update, error) {
	var out []Update
	err := c.call(ctx, "getUpdates", map[string]any{
		"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": []string{"message", "callback_query"},
	}, &out)
	return out, err
}

// SendMessage sends HTML text, optionally with an inline keyboard.
func (c *Client) SendMessage(ctx context.Context, chatID int64, html string, kb *InlineKeyboard) (Message, error) {
	p := map[string]any{"chat_id": chatID, "text": html, "parse_mode": "HTML", "link_preview_options": map[string]bool{"is_disabled": true}}
	if kb != nil {
		p["reply_markup"] = kb
	}
	var m Message
	err := c.callRetry(ctx, "sendMessage", p, &m)
	return m, err
}

// EditMessageText replaces a message's text; a nil keyboard removes its
// buttons. An edit to identical text is not an error. Flood control is
// waited out (within bounds) and retried.
func (c *Client) EditMessageText(ctx context.Context, chatID, messageID int64, html string, kb *InlineKeyboard) error {
	return c.retry(ctx, func() error { return c.TryEditMessageText(ctx, chatID, messageID, html, kb) })
}

// TryEditMessageText is EditMessageText without waiting out flood
// control: a streaming edit answered 429 is dropped (the caller holds its
// edits back for the named time; the next or final edit shows the text).
func (c *Client) TryEditMessageText(ctx context.Context, chatID, messageID int64, html string, kb *InlineKeyboard) error {
	p := map[string]any{"chat_id": chatID, "message_id": messageID, "text": html, "parse_mode": "HTML", "link_preview_options": map[string]bool{"is_disabled": true}}
	if kb != nil {
		p["reply_markup"] = kb
	}
	err := c.call(ctx, "editMessageText", p, nil)
	var ae *APIError
	if errors.As(err, &ae) && strings.Contains(ae.Description, "message is not modified") {
		return nil
	}
	return err
}

// AnswerCallbackQuery acknowledges a button press with a short notice.
func (c *Client) AnswerCallbackQuery(ctx context.Context, id, text string) error {
	return c.callRetry(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": text}, nil)
}

// SetWebhook asks Telegram to POST updates to url, each carrying secret
// in the X-Telegram-Bot-Api-Secret-Token header. Pending updates are kept.
func (c *Client) SetWebhook(ctx context.Context, url, secret string) error {
	return c.callRetry(ctx, "setWebhook", map[string]any{
		"url": url, "secret_token": secret, "allowed_updates": []string{"message", "callback_query"}, "drop_pending_updates": false,
	}, nil)
}

// DeleteWebhook turns webhook delivery off so getUpdates works again;
// pending updates are kept for polling.
func (c *Client) DeleteWebhook(ctx context.Context) error {
	return c.callRetry(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil)
}

// SendVoice uploads audio as a voice note (Ogg/Opus shows as one) or, with
// asAudio, as an audio file (other formats).
func (c *Client) SendVoice(ctx context.Context, chatID int64, audio []byte, filename, mime string, asAudio bool) (Message, error) {
	method, field := "sendVoice", "voice"
	if asAudio {
		method, field = "sendAudio", "audio"
	}
	var m Message
	err := c.retry(ctx, func() error {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("chat_id", fmt.Sprint(chatID))
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name=%q; filename=%q`, field, filename)}
		h["Content-Type"] = []string{mime}
		fw, err := mw.CreatePart(h)
		if err != nil {
			return fmt.Errorf("telegram %s: building upload: %w", method, err)
		}
		fw.Write(audio)
		mw.Close()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+c.token+"/"+method, &body)
		if err != nil {
			return fmt.Errorf("telegram %s: building request: %w", method, redact(err))
		}
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return c.do(req, method, &m)
	})
	return m, err
}

// GetFile resolves a file id to a download path.
func (c *Client) GetFile(ctx context.Context, fileID string) (File, error) {
	var f File
	err := c.callRetry(ctx, "getFile", map[string]any{"file_id": fileID}, &f)
	return f, err
}

// ErrTooLarge is returned by Download for files over the limit.
var ErrTooLarge = errors.New("file is too large")

// Download fetches a file from getFile's path, refusing more than max bytes.
func (c *Client) Download(ctx context.Context, path string, max int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/file/bot"+c.token+"/"+strings.TrimPrefix(path, "/"), nil)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", redact(err))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("telegram download: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("telegram download: %w", redact(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w (over %d bytes)", ErrTooLarge, max)
	}
	return data, nil
}
