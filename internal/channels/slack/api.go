package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// The subset of the Slack Web API (https://api.slack.com/methods) the
// adapter calls, over plain HTTP. Tokens travel only in the Authorization
// header, never in a URL, so transport errors cannot leak them.
//
// Write methods (chat.*) take JSON bodies; read methods take form bodies,
// because Slack ignores JSON arguments on several of them (the call then
// fails as if the argument were missing).

// APIError is a Web API answer with ok=false.
type APIError struct {
	Method string
	// Code is Slack's error string ("channel_not_found", "invalid_auth").
	Code string
	// Details are response_metadata.messages (why blocks were invalid).
	Details []string
}

func (e *APIError) Error() string {
	s := "slack " + e.Method + ": " + e.Code
	if len(e.Details) > 0 {
		s += " (" + strings.Join(e.Details, "; ") + ")"
	}
	return s
}

// transient are the error codes Slack documents as worth retrying (the
// common errors of every method); any other ok=false answer will fail the
// same way next time.
var transient = map[string]bool{
	"internal_error":      true,
	"fatal_error":         true,
	"request_timeout":     true,
	"service_unavailable": true,
	"team_added_to_org":   true,
	"ratelimited":         true,
}

// maxAnswer bounds one Web API answer (a history page of 200 messages
// with blocks stays far below).
const maxAnswer = 8 << 20

// client calls the Web API with one token per call.
type client struct {
	base string // e.g. https://slack.com/api
	http *http.Client
}

// call posts args to method with token and decodes the answer into out.
// args is url.Values (a form body) or anything else (a JSON body). A 429
// comes back as *channels.RetryAfterError, an error Slack says will not go
// away as *channels.PermanentError around *APIError.
func (c *client) call(ctx context.Context, token, method string, args, out any) error {
	var body io.Reader
	ctype := "application/json; charset=utf-8"
	if form, ok := args.(url.Values); ok {
		body = strings.NewReader(form.Encode())
		ctype = "application/x-www-form-urlencoded"
	} else {
		b, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("slack %s: encoding: %w", method, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+method, body)
	if err != nil {
		return fmt.Errorf("slack %s: building request: %w", method, err)
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("slack %s: %w", method, redact(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("slack %s: reading answer: %w", method, redact(err))
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return &channels.RetryAfterError{
			Err:   &APIError{Method: method, Code: "ratelimited"},
			After: retryAfter(resp.Header.Get("Retry-After")),
		}
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("slack %s: HTTP %d", method, resp.StatusCode)
	}
	var env struct {
		OK       bool   `json:"ok"`
		Error    string `json:"error"`
		Metadata struct {
			Messages []string `json:"messages"`
		} `json:"response_metadata"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		err := fmt.Errorf("slack %s: answer is not JSON (HTTP %d)", method, resp.StatusCode)
		if resp.StatusCode >= 400 {
			// A 4xx without Slack's envelope is an unknown method or a
			// refused request shape: sending it again changes nothing.
			return channels.Permanent(err)
		}
		return err
	}
	if !env.OK {
		ae := &APIError{Method: method, Code: env.Error, Details: env.Metadata.Messages}
		if ae.Code == "" {
			ae.Code = fmt.Sprintf("ok=false without an error (HTTP %d)", resp.StatusCode)
		}
		if ae.Code == "ratelimited" {
			return &channels.RetryAfterError{Err: ae, After: retryAfter(resp.Header.Get("Retry-After"))}
		}
		if transient[ae.Code] {
			return ae
		}
		return channels.Permanent(ae)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("slack %s: decoding answer: %w", method, err)
		}
	}
	return nil
}

// retryAfter reads a Retry-After header in seconds; Slack always sends
// one with a 429, but a missing or odd value still waits a little.
func retryAfter(h string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h))
	if err != nil || n < 1 {
		return time.Second
	}
	return time.Duration(n) * time.Second
}

// redact drops the URL from transport errors: a Socket Mode URL carries a
// connection ticket.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// identity is what auth.test says about the bot.
type identity struct {
	UserID string `json:"user_id"`
	BotID  string `json:"bot_id"`
	TeamID string `json:"team_id"`
	Team   string `json:"team"`
	User   string `json:"user"`
}

func (c *client) authTest(ctx context.Context, token string) (identity, error) {
	var id identity
	err := c.call(ctx, token, "auth.test", url.Values{}, &id)
	if err == nil && id.UserID == "" {
		err = errors.New("slack auth.test: the answer names no bot user (is this a bot token?)")
	}
	return id, err
}

// connectionsOpen asks for a Socket Mode WebSocket URL (app-level token).
func (c *client) connectionsOpen(ctx context.Context, appToken string) (string, error) {
	var out struct {
		URL string `json:"url"`
	}
	if err := c.call(ctx, appToken, "apps.connections.open", url.Values{}, &out); err != nil {
		return "", err
	}
	u, err := url.Parse(out.URL)
	if err != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" {
		return "", errors.New("slack apps.connections.open: the answer holds no WebSocket URL")
	}
	return out.URL, nil
}

// posted is chat.postMessage's answer.
type posted struct {
	Channel string `json:"channel"`
	TS      string `json:"ts"`
}

// message is a message as conversations.history returns it.
type message struct {
	Type         string `json:"type"`
	Subtype      string `json:"subtype"`
	User         string `json:"user"`
	BotID        string `json:"bot_id"`
	Text         string `json:"text"`
	TS           string `json:"ts"`
	ThreadTS     string `json:"thread_ts"`
	ParentUserID string `json:"parent_user_id"`
	Files        []file `json:"files"`
	Metadata     *struct {
		EventType    string          `json:"event_type"`
		EventPayload json.RawMessage `json:"event_payload"`
	} `json:"metadata"`
}

// page is one page of conversations.history or conversations.replies.
type page struct {
	Messages []message `json:"messages"`
	HasMore  bool      `json:"has_more"`
	Meta     struct {
		NextCursor string `json:"next_cursor"`
	} `json:"response_metadata"`
}

// history reads one page of a conversation's messages, newest first, or
// with thread set, of a thread's replies, oldest first (its root leading
// the first page); metadata included. oldest, when set, keeps only
// messages posted after that ts (the root excepted).
func (c *client) history(ctx context.Context, token, channel, thread, oldest, cursor string, limit int) (page, error) {
	args := url.Values{"channel": {channel}, "limit": {strconv.Itoa(limit)}, "include_all_metadata": {"true"}}
	method := "conversations.history"
	if thread != "" {
		method = "conversations.replies"
		args.Set("ts", thread)
	}
	if oldest != "" {
		args.Set("oldest", oldest)
	}
	if cursor != "" {
		args.Set("cursor", cursor)
	}
	var p page
	err := c.call(ctx, token, method, args, &p)
	return p, err
}

// userName returns a person's display name (users:read).
func (c *client) userName(ctx context.Context, token, user string) (string, error) {
	var out struct {
		User struct {
			Name     string `json:"name"`
			RealName string `json:"real_name"`
			Profile  struct {
				DisplayName string `json:"display_name"`
				RealName    string `json:"real_name"`
			} `json:"profile"`
		} `json:"user"`
	}
	if err := c.call(ctx, token, "users.info", url.Values{"user": {user}}, &out); err != nil {
		return "", err
	}
	for _, n := range []string{out.User.Profile.DisplayName, out.User.Profile.RealName, out.User.RealName, out.User.Name} {
		if n = strings.TrimSpace(n); n != "" {
			return n, nil
		}
	}
	return "", nil
}

// ErrTooLarge is returned when a file is over the size asked for; it is
// the relay's own, so an attachment's refusal names the limit.
var ErrTooLarge = channels.ErrTooLarge

// download fetches a private file with the bot token (files:read).
// Without the token Slack answers 200 with its HTML sign-in page, so an
// HTML answer is an error rather than audio.
//
// A web page in answer is Slack's sign-in page (a token without the
// files:read scope) unless the file is a web page itself (html).
func (c *client) download(ctx context.Context, token, rawURL string, max int64, html bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("slack file download: %w", redact(err))
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack file download: %w", redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("slack file download: HTTP %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/html" && !html {
		return nil, errors.New("slack file download: Slack answered with a web page, not the file (does the app have the files:read scope?)")
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("slack file download: %w", redact(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("slack file download: %w (over %d bytes)", ErrTooLarge, max)
	}
	return data, nil
}
