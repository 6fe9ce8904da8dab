// Package slack adapts a Slack app to channels.Platform, over plain HTTP
// (the Web API) and a WebSocket (Socket Mode).
//
// Supported:
//   - Receiving by Socket Mode (the default: apps.connections.open with the
//     app-level token, then a WebSocket; every envelope is acknowledged
//     after the relay's Handler returns, so a crash before that has Slack
//     deliver it again; "disconnect" messages reconnect at once) or by the
//     Events API (Routes: POST /channels/NAME/events and
//     /channels/NAME/interactive, each delivery's X-Slack-Signature v0
//     HMAC-SHA256 checked in constant time with the signing secret and
//     refused when its timestamp is more than five minutes off; the
//     url_verification challenge answered).
//   - Conversations: direct messages with the bot (Private; Conv is the DM
//     channel "D…" for top-level messages, "D…/THREAD_TS" in a thread) and
//     threads in channels: a message there counts when it mentions the bot
//     (or replies in a thread the bot started), and Conv is always
//     "CHANNEL/THREAD_TS" (the mention's own ts when it starts a thread),
//     so replies go to that thread rather than the whole channel.
//     Update.ID is "CHANNEL/TS", so the message and app_mention events of
//     one message deduplicate to one turn.
//   - Skipped: messages from any bot (this one included), message
//     subtypes other than file_share and thread_broadcast (edits,
//     deletions, joins), messages with neither text nor a file.
//   - Voice: an audio file (or Slack voice clip) on a message is
//     Update.Voice, fetched with the bot token only from files.slack.com.
//   - Files: every other file with a url_private is an attachment
//     (Update.Attachments), fetched the same way within the relay's limit.
//   - Sending: Markdown rendered as mrkdwn (chat.postMessage), editing
//     (chat.update), approval prompts as Block Kit buttons (action_id
//     approve / deny / allow_10m, value = the approval id); a press
//     arrives as a block_actions payload and becomes Update.Action with
//     Ref "CHANNEL/TS" of the prompt, acknowledged to the presser with an
//     ephemeral message.
//   - Finder: every message carries metadata {event_type: "hestia_outbox",
//     event_payload: {key}}; Find looks for it among the bot's recent
//     messages of the conversation (Slack has no idempotency key).
//   - HTTP 429 becomes *channels.RetryAfterError (Retry-After); errors Slack
//     documents as lasting become channels.Permanent.
//   - Catching up (channels.CatchUpper): Slack keeps no events for an app
//     that is not connected, so every new Socket Mode connection (before
//     any of its envelopes is handled) and the start of the Events API
//     mode first read, in the conversations that have a chat (the owner's
//     DM and DM threads, the 20 most recently active), what was posted
//     after the last message delivered there: conversations.history with
//     oldest, conversations.replies for a thread. Each message passes the
//     same checks as a live event (bots, the bot itself included, and
//     edits skipped) and goes to the relay oldest first, as an ordinary
//     update with the same ID, so the relay's dedupe drops one that also
//     arrives live. The place kept is a cursor per conversation (the last
//     ts delivered, live or caught up) in channels.db, lent by the relay
//     (channels.Cursors); a live message moves it only once that
//     conversation's catch-up succeeded, so a failed catch-up (logged;
//     live receiving goes on) is tried again from the same place by the
//     next connection. Bounds: the last 24 hours and the newest 50
//     messages per conversation; what lies beyond is skipped and logged.
//     Rate limits are waited out (Retry-After, up to five per call).
//
// Not supported: slash commands and other interactive payloads (shortcuts,
// modals) are acknowledged and ignored; channel messages that neither
// mention the bot nor reply in its thread; sending voice (no VoiceSender); Enterprise Grid org-wide installs.
// Not caught up after a restart: messages older than 24 hours or beyond a
// conversation's newest 50, and those in a conversation without a chat
// yet (a first DM, or a new thread under an old message, written while
// Hestia was away).
//
// Scopes the bot token needs: chat:write, im:history, app_mentions:read,
// channels:history and groups:history (for channel threads and Find),
// users:read (display names; optional), files:read (voice notes and files). Socket
// Mode needs an app-level token with connections:write.
package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Modes of receiving.
const (
	ModeSocket = "socket"
	ModeEvents = "events"
)

// Config is what the adapter needs; secrets are plain values (the app
// reads *_file secrets before calling New).
type Config struct {
	// Name is the channel's configured name; "slack" when empty. The
	// Events API routes live under /channels/NAME/.
	Name string
	// APIURL is the Web API root; https://slack.com/api when empty.
	APIURL string
	// BotToken is the Bot User OAuth Token (xoxb-…). Required.
	BotToken string
	// Mode is ModeSocket (default) or ModeEvents.
	Mode string
	// AppToken is the app-level token (xapp-…) Socket Mode connects with.
	AppToken string
	// SigningSecret authenticates Events API deliveries.
	SigningSecret string
	// MaxVoiceBytes refuses larger audio files (default 25 MiB).
	MaxVoiceBytes int64
	// Clock is the time deliveries' timestamps are checked against.
	Clock func() time.Time
}

// Adapter is one Slack app as a channels.Platform.
type Adapter struct {
	cfg     Config
	api     client
	ws      *http.Client // the same transport, without a whole-request timeout
	log     *slog.Logger
	fileURL *url.URL // the API root, from which file downloads are also allowed (tests)

	// cu keeps catch-up's place: the cursors the relay lends
	// (CatchUpWith) and which conversations are behind.
	cu channels.CatchUp

	mu    sync.Mutex // guards the fields below
	id    identity   // the bot, from auth.test; empty until known
	names map[string]string
	// recv is the Handler and context of the running Receive, used by the
	// Events API routes; nil while Receive is not running.
	recv *receiver

	// pingEvery spaces Socket Mode keepalive pings.
	pingEvery time.Duration
}

type receiver struct {
	ctx context.Context
	h   channels.Handler
}

var _ channels.Platform = (*Adapter)(nil)
var _ channels.Router = (*Adapter)(nil)
var _ channels.Finder = (*Adapter)(nil)
var _ channels.Checker = (*Adapter)(nil)
var _ channels.CatchUpper = (*Adapter)(nil)

// New returns an adapter for cfg. httpClient may be nil (a client with
// sensible timeouts is used); tests pass one that reaches their fake.
func New(cfg Config, httpClient *http.Client, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		cfg.Name = "slack"
	}
	if cfg.APIURL == "" {
		cfg.APIURL = "https://slack.com/api"
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeSocket
	}
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = 25 << 20
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !strings.HasPrefix(cfg.BotToken, "xoxb-") {
		return nil, errors.New("slack: the bot token must be a Bot User OAuth Token (xoxb-…)")
	}
	switch cfg.Mode {
	case ModeSocket:
		if !strings.HasPrefix(cfg.AppToken, "xapp-") {
			return nil, errors.New("slack: Socket Mode needs an app-level token (xapp-…) with connections:write")
		}
	case ModeEvents:
		if cfg.SigningSecret == "" {
			return nil, errors.New("slack: the Events API needs the app's signing secret")
		}
	default:
		return nil, fmt.Errorf("slack: mode %q is not %q or %q", cfg.Mode, ModeSocket, ModeEvents)
	}
	u, err := url.Parse(cfg.APIURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("slack: API URL %q is not an http(s) URL", cfg.APIURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 60 * time.Second}
	}
	ws := *httpClient
	ws.Timeout = 0 // a WebSocket lives for hours; its dial is bounded by a context instead
	log = log.With("channel", cfg.Name)
	return &Adapter{
		cfg:       cfg,
		api:       client{base: strings.TrimSuffix(cfg.APIURL, "/"), http: httpClient},
		ws:        &ws,
		log:       log,
		fileURL:   u,
		names:     map[string]string{},
		cu:        channels.CatchUp{Platform: "slack", Log: log, Less: tsLess, Valid: tsRe.MatchString},
		pingEvery: 30 * time.Second,
	}, nil
}

// Name is the configured channel name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Kind is "slack".
func (a *Adapter) Kind() string { return "slack" }

// MaxText is how much Markdown one message carries. Slack accepts 40,000
// characters of text but only 3,000 per section block, and a prompt is
// blocks; 3,500 keeps a rendered prompt within a couple of sections and a
// reply readable without Slack's "Show more".
const MaxText = 3500

// Limits: editable, buttons, no idempotency key (Find instead). chat.update
// is rate limited at Tier 3 (about 50 a minute), so a streaming message is
// edited at most every 1.5 s.
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: MaxText, Edit: true, EditInterval: 1500 * time.Millisecond, Buttons: true}
}

var (
	channelIDRe = lazyre.New(`^[A-Z0-9]{2,30}$`)
	tsRe        = lazyre.New(`^[0-9]{1,12}\.[0-9]{1,9}$`)
)

// splitConv reads "CHANNEL" or "CHANNEL/TS" (a conversation with its
// thread, or a message reference).
func splitConv(s string) (channel, ts string, err error) {
	channel, ts, _ = strings.Cut(s, "/")
	if !channelIDRe.MatchString(channel) {
		return "", "", fmt.Errorf("%q does not start with a Slack channel id", s)
	}
	if ts != "" && !tsRe.MatchString(ts) {
		return "", "", fmt.Errorf("%q does not end with a Slack message timestamp", s)
	}
	return channel, ts, nil
}

// outboxEvent is the metadata event type every sent message carries.
const outboxEvent = "hestia_outbox"

// Send posts m to conv ("CHANNEL" or "CHANNEL/THREAD_TS") and returns
// "CHANNEL/TS".
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	channel, thread, err := splitConv(conv)
	if err != nil {
		return "", channels.Permanent(fmt.Errorf("slack send: %w", err))
	}
	args := messageArgs(m, false)
	args["channel"] = channel
	if thread != "" {
		args["thread_ts"] = thread
	}
	// Link previews of what the assistant cites would clutter the chat.
	args["unfurl_links"] = false
	args["unfurl_media"] = false
	var out posted
	if err := a.api.call(ctx, a.cfg.BotToken, "chat.postMessage", args, &out); err != nil {
		return "", err
	}
	if out.TS == "" {
		return "", errors.New("slack chat.postMessage: the answer names no message ts")
	}
	if out.Channel == "" {
		out.Channel = channel
	}
	return out.Channel + "/" + out.TS, nil
}

// Edit replaces the text and prompt of the message ref ("CHANNEL/TS").
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	channel, ts, err := splitConv(ref)
	if err == nil && ts == "" {
		err = fmt.Errorf("%q names no message", ref)
	}
	if err != nil {
		return channels.Permanent(fmt.Errorf("slack edit: %w", err))
	}
	args := messageArgs(m, true)
	args["channel"] = channel
	args["ts"] = ts
	return a.api.call(ctx, a.cfg.BotToken, "chat.update", args, nil)
}

// messageArgs renders m as chat.postMessage / chat.update arguments: text,
// blocks when m is a prompt, metadata carrying the key.
func messageArgs(m channels.Outgoing, edit bool) map[string]any {
	text := Render(m.Text)
	args := map[string]any{}
	if m.Prompt != nil {
		blocks := promptBlocks(text, m.Prompt)
		args["blocks"] = blocks
		// With blocks, text is only the notification's preview.
		args["text"] = truncate(text, maxSectionText)
	} else {
		args["text"] = truncate(text, maxMessageText-1000)
		if edit {
			// chat.update keeps the old blocks unless told otherwise: an
			// empty list removes a prompt's buttons along with its sections.
			args["blocks"] = []any{}
		}
	}
	if strings.TrimSpace(text) == "" {
		// Slack refuses an empty message (no_text).
		args["text"] = "…"
	}
	if m.Key != "" {
		args["metadata"] = map[string]any{"event_type": outboxEvent, "event_payload": map[string]string{"key": m.Key}}
	}
	return args
}

// The buttons of a prompt. action_id names the verb; value carries the
// approval id so a press round-trips it.
const promptBlockID = "hestia_prompt"

type textObj struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

type block struct {
	Type     string    `json:"type"`
	BlockID  string    `json:"block_id,omitempty"`
	Text     *textObj  `json:"text,omitempty"`
	Elements []element `json:"elements,omitempty"`
}

type element struct {
	Type     string   `json:"type"`
	ActionID string   `json:"action_id"`
	Text     *textObj `json:"text"`
	Value    string   `json:"value"`
	Style    string   `json:"style,omitempty"`
}

// promptBlocks is the text as section blocks followed, while the prompt is
// open, by its buttons.
func promptBlocks(text string, p *channels.Prompt) []block {
	if strings.TrimSpace(text) == "" {
		text = "…"
	}
	parts := sections(text, maxSectionText)
	if len(parts) > maxBlocks-1 {
		parts = parts[:maxBlocks-1]
		parts[len(parts)-1] = truncate(parts[len(parts)-1]+"…", maxSectionText)
	}
	var out []block
	for _, s := range parts {
		out = append(out, block{Type: "section", Text: &textObj{Type: "mrkdwn", Text: truncate(s, maxSectionText)}})
	}
	if p.Closed {
		return out
	}
	button := func(label, verb, style string) element {
		return element{Type: "button", ActionID: verb, Text: &textObj{Type: "plain_text", Text: label, Emoji: true}, Value: p.ApprovalID, Style: style}
	}
	var els []element
	if p.Question {
		els = []element{button("Decline to answer", string(channels.VerbDeny), "")}
	} else {
		els = []element{
			button("✅ Approve", string(channels.VerbApprove), "primary"),
			button("❌ Deny", string(channels.VerbDeny), "danger"),
			button("⏱ Allow 10 min", string(channels.VerbAllow10m), ""),
		}
	}
	return append(out, block{Type: "actions", BlockID: promptBlockID, Elements: els})
}

// How far back Find looks: the relay asks right after a restart, so the
// message, if it was posted, is among the newest of its conversation.
const (
	findPage  = 200
	findPages = 5
)

// Find looks for the message carrying key among the bot's recent messages
// of conv (conversations.history, or conversations.replies in a thread)
// and returns its ref.
func (a *Adapter) Find(ctx context.Context, conv, key string) (string, bool, error) {
	channel, thread, err := splitConv(conv)
	if err != nil {
		return "", false, channels.Permanent(fmt.Errorf("slack find: %w", err))
	}
	me, err := a.identity(ctx)
	if err != nil {
		return "", false, err
	}
	cursor := ""
	for range findPages {
		p, err := a.api.history(ctx, a.cfg.BotToken, channel, thread, "", cursor, findPage)
		if err != nil {
			return "", false, err
		}
		for _, msg := range p.Messages {
			// Only the bot's own messages count: another app could post
			// the same metadata, and must not make the relay think a
			// reply went out.
			if msg.Metadata == nil || msg.Metadata.EventType != outboxEvent || (msg.BotID != me.BotID && msg.User != me.UserID) {
				continue
			}
			var payload struct {
				Key string `json:"key"`
			}
			if json.Unmarshal(msg.Metadata.EventPayload, &payload) == nil && payload.Key == key && msg.TS != "" {
				return channel + "/" + msg.TS, true, nil
			}
		}
		if cursor = p.Meta.NextCursor; cursor == "" {
			break
		}
	}
	return "", false, nil
}

// Check is the connection test: auth.test proves the bot token (and says
// who the bot is, in which workspace); in Socket Mode,
// apps.connections.open proves the app-level token. The WebSocket URL it
// returns is dropped unused (it expires unopened), so no connection is
// made beside Receive's and nothing is posted. The Events API's signing
// secret can only be proven by a delivery, which the check cannot ask
// for. Errors name the setting to fix, never a token.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	id, err := a.api.authTest(ctx, a.cfg.BotToken)
	if err != nil {
		return "", fmt.Errorf("%w%s", err, tokenHint(err, "channels.slack.token (the Bot User OAuth Token, xoxb-…)"))
	}
	a.mu.Lock()
	a.id = id
	a.mu.Unlock()
	who := id.UserID
	if id.User != "" {
		who = "@" + id.User + " (" + id.UserID + ")"
	}
	if id.Team != "" {
		who += " in " + id.Team
	}
	if a.cfg.Mode == ModeSocket {
		if _, err := a.api.connectionsOpen(ctx, a.cfg.AppToken); err != nil {
			return "", fmt.Errorf("%w%s", err, tokenHint(err, "channels.slack.app_token (an app-level token, xapp-…, with connections:write; Socket Mode switched on)"))
		}
		return who + ", Socket Mode", nil
	}
	return who + ", Events API", nil
}

// tokenHint names the setting to fix when Slack refused a token or its
// scopes, and the API URL when Slack could not be reached.
func tokenHint(err error, setting string) string {
	var ae *APIError
	if !errors.As(err, &ae) {
		var ne net.Error
		if errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return " (check channels.slack.api_url and the network)"
		}
		return ""
	}
	switch ae.Code {
	case "not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired", "not_allowed_token_type", "no_permission", "missing_scope", "app_missing_action_url":
		return "; check " + setting
	}
	return ""
}

// identity returns the bot's ids, asking auth.test once.
func (a *Adapter) identity(ctx context.Context) (identity, error) {
	a.mu.Lock()
	id := a.id
	a.mu.Unlock()
	if id.UserID != "" {
		return id, nil
	}
	id, err := a.api.authTest(ctx, a.cfg.BotToken)
	if err != nil {
		return identity{}, err
	}
	a.mu.Lock()
	a.id = id
	a.mu.Unlock()
	return id, nil
}

// maxNames bounds the display-name cache (one entry per person who wrote).
const maxNames = 1000

// displayName returns a person's name, or their id when users.info fails
// (the users:read scope is optional).
func (a *Adapter) displayName(ctx context.Context, user string) string {
	a.mu.Lock()
	n, ok := a.names[user]
	a.mu.Unlock()
	if ok {
		return n
	}
	n, err := a.api.userName(ctx, a.cfg.BotToken, user)
	if err != nil {
		a.log.Debug("slack users.info failed; using the user id as the name", "user", user, "err", err)
		return user
	}
	if n == "" {
		n = user
	}
	a.mu.Lock()
	if len(a.names) >= maxNames {
		clear(a.names)
	}
	a.names[user] = n
	a.mu.Unlock()
	return n
}
