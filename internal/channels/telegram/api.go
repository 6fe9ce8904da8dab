package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// ReplyMarkup is what the fake server records of sent messages.
	ReplyMarkup *InlineKeyboard `json:"reply_markup,omitempty"`
}

// Media is a voice note or audio file.
type Media struct {
	FileID   string `json:"file_id"`
	Duration int    `json:"duration,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
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

// Client calls the Bot API. The token is part of every URL, so no error
// this client returns contains a URL.
type Client struct {
	base  string // API root, e.g. https://api.telegram.org
	token string
	http  *http.Client
}

// NewClient returns a client for the bot token at the API root apiURL.
func NewClient(apiURL, token string) *Client {
	return &Client{base: strings.TrimSuffix(apiURL, "/"), token: token, http: &http.Client{}}
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
	err := c.call(ctx, "sendMessage", p, &m)
	return m, err
}

// EditMessageText replaces a message's text; a nil keyboard removes its
// buttons. An edit to identical text is not an error.
func (c *Client) EditMessageText(ctx context.Context, chatID, messageID int64, html string, kb *InlineKeyboard) error {
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
	return c.call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": id, "text": text}, nil)
}

// GetFile resolves a file id to a download path.
func (c *Client) GetFile(ctx context.Context, fileID string) (File, error) {
	var f File
	err := c.call(ctx, "getFile", map[string]any{"file_id": fileID}, &f)
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
