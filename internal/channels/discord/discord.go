// Package discord adapts a Discord bot to channels.Platform: the owner
// talks to Hestia in a direct message with the bot.
//
// Supported:
//   - receiving over the Gateway (a WebSocket, so no public URL is
//     needed): Hello, Identify with the DIRECT_MESSAGES and GUILD_MESSAGES
//     intents (neither privileged; DMs carry their content without
//     MESSAGE_CONTENT), heartbeats with the first one jittered, a
//     connection whose heartbeat goes unacknowledged dropped as a zombie,
//     Resume (session id and sequence, on resume_gateway_url) after a
//     drop or a Reconnect request, Invalid Session (resume again or
//     identify anew after 1–5 s), and close codes that retrying cannot
//     fix (4004 authentication failed, 4010–4014) ending Receive with an
//     error that says what to change;
//   - direct messages (Private: the channel's type is checked once to be
//     a DM, type 1) and guild messages that mention the bot or reply to
//     it (Private false: the relay answers those only with a refusal);
//     messages from bots and webhooks, the bot's own included, and
//     system messages are skipped; the first audio attachment (a voice
//     message) becomes Update.Voice and every other attachment an
//     Update.Attachments entry, fetched on demand from the CDN without
//     the bot token (CDN URLs are signed);
//   - sending and editing through the REST API with the message's
//     Outgoing.Key as an enforced nonce (Discord returns the first
//     message instead of posting a second), Markdown rendered to Discord's
//     dialect and never over 2,000 characters, mentions never pinging
//     (allowed_mentions is empty) and link previews suppressed;
//   - approval prompts as message components (Approve, Deny, Allow 10 min;
//     "Decline to answer" for questions), custom_id "a:<approval id>:<verb>",
//     and their presses (INTERACTION_CREATE, type 3) as Update.Action with
//     Ref = the prompt's "CHANNEL_ID/MESSAGE_ID"; a press is answered
//     within Discord's 3 s with the relay's notice as an ephemeral reply,
//     or deferred and followed up when the relay takes longer;
//   - rate limits: a 429 becomes channels.RetryAfterError with Discord's
//     retry_after, a bucket the last answer emptied is waited out;
//   - audio replies (VoiceSender) as an attached file;
//   - catching up (channels.CatchUpper): a Resume is replayed by Discord,
//     but a new session (after a restart, an invalidated session or one
//     that ended) replays nothing, so every READY queues, ahead of the
//     session's events, GET /channels/{id}/messages?after= the last
//     message delivered in each conversation that has a chat (the 20
//     most recently active), read forward page by page; the messages go
//     to the relay oldest first as ordinary updates with the same ID
//     (bots' messages, the bot's own included, skipped like live ones),
//     so the relay's dedupe drops one that also arrives live. The place
//     kept is a cursor per conversation (the last message id delivered,
//     live or caught up) in channels.db, lent by the relay
//     (channels.Cursors); a live message moves it only once that
//     conversation's catch-up succeeded, so a failed read (logged as
//     discordCatchUpFailed; live receiving goes on) is tried again from
//     the same place by the next session. Bounds: the last 24 hours
//     (`after` is never older than a snowflake of a day ago) and the
//     newest 50 messages per conversation, the rest skipped and logged
//     (discordCatchUpWindow, discordCatchUpTruncated); rate limits are
//     waited out.
//
// Not supported: the HTTP interactions endpoint (interactions arrive over
// the gateway, so there is no public route and no Ed25519 signature to
// check), slash commands, sharding (one personal bot needs one shard),
// gateway compression, threads, reactions, and Finder (Discord's history
// does not return nonces, and its nonce check covers only the last few
// minutes: a resend after a longer outage may post twice, which the relay
// prefers to a lost reply). Not caught up after a restart: messages
// older than 24 hours or beyond a conversation's newest 50, and those in
// a conversation without a chat yet (a first DM written while Hestia was
// away).
//
// Trust: everything arrives over TLS from Discord itself (the gateway URL
// must be wss:// unless the API root is a plain-HTTP test fake). A press
// is passed on only for a message the bot wrote, from this application;
// every id that later goes into a request path is checked to be a
// snowflake. The bot token is sent only to the API root, never to the CDN
// or the log.
package discord

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// DefaultAPIURL is Discord's REST root, API version 10.
const DefaultAPIURL = "https://discord.com/api/v10"

// Config is what the adapter needs, secrets already read.
type Config struct {
	// Name is the channel's configured name ("discord").
	Name string
	// Token is the bot token (without the "Bot " prefix).
	Token string
	// APIURL is the REST root; empty means DefaultAPIURL.
	APIURL string
	// Backoff is the unit of reconnect waits (a reconnect after a healthy
	// session waits up to one unit, failures double it, an invalid
	// session waits 1–5 units); zero means one second. Tests shorten it.
	Backoff time.Duration
}

// Adapter is a Discord bot as a channels.Platform.
type Adapter struct {
	name    string
	token   string
	api     string   // REST root without a trailing slash
	apiURL  *url.URL // parsed api, for the gateway and CDN checks
	http    *http.Client
	log     *slog.Logger
	backoff time.Duration
	limits  rateLimits
	// ackAfter is how long a button press may wait for the relay's notice
	// before the adapter defers it (Discord fails presses unanswered
	// after 3 s).
	ackAfter time.Duration

	// cu keeps catch-up's place: the cursors the relay lends
	// (CatchUpWith) and which conversations are behind.
	cu channels.CatchUp

	mu sync.Mutex // guards the fields below
	// The gateway session: what Resume needs, and who the bot is.
	sessionID string
	resumeURL string
	seq       int64
	botID     string
	appID     string
	// dms caches channel id → is a DM, looked up once per channel.
	dms map[string]bool
}

var (
	_ channels.Platform    = (*Adapter)(nil)
	_ channels.VoiceSender = (*Adapter)(nil)
	_ channels.Checker     = (*Adapter)(nil)
	_ channels.CatchUpper  = (*Adapter)(nil)
)

// New returns an adapter. client is used for REST, the gateway and the
// CDN (tests point the API root at discordtest); nil means a default
// client. log may be nil.
func New(cfg Config, client *http.Client, log *slog.Logger) (*Adapter, error) {
	if cfg.Token == "" {
		return nil, errors.New("discord: no bot token (channels.discord.token or token_file)")
	}
	if strings.HasPrefix(strings.ToLower(cfg.Token), "bot ") || strings.ContainsAny(cfg.Token, " \t\r\n") {
		return nil, errors.New(`discord: the bot token must be the token alone, without "Bot " or spaces`)
	}
	if cfg.Name == "" {
		cfg.Name = "discord"
	}
	if cfg.APIURL == "" {
		cfg.APIURL = DefaultAPIURL
	}
	api := strings.TrimSuffix(cfg.APIURL, "/")
	u, err := url.Parse(api)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("discord: API root %q is not an http(s) URL", cfg.APIURL)
	}
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	log = log.With("channel", cfg.Name)
	return &Adapter{
		name: cfg.Name, token: cfg.Token, api: api, apiURL: u, http: client,
		log: log, backoff: cfg.Backoff, ackAfter: 2 * time.Second,
		limits: rateLimits{empty: map[string]time.Time{}}, dms: map[string]bool{},
		cu: channels.CatchUp{Platform: "discord", Log: log, Less: idLess, Valid: snowflake},
	}, nil
}

// Name is the configured channel name.
func (a *Adapter) Name() string { return a.name }

// Kind is "discord".
func (a *Adapter) Kind() string { return "discord" }

// Limits: 2,000 characters (the relay splits below 1,900 to leave room for
// rendering), edits (Discord allows about five per five seconds on a
// channel), buttons, and idempotent sends by nonce.
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: maxSource, Edit: true, EditInterval: 1500 * time.Millisecond, Buttons: true, Idempotent: true}
}

// component is a message component: an action row (type 1) or a button
// (type 2). https://discord.com/developers/docs/components/reference
type component struct {
	Type       int         `json:"type"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	Components []component `json:"components,omitempty"`
}

// Button styles.
const (
	stylePrimary   = 1
	styleSecondary = 2
	styleSuccess   = 3
	styleDanger    = 4
)

// buttons renders a prompt's buttons; none when it is closed or its id
// does not fit a custom_id (the text's request code still works).
func (a *Adapter) buttons(p *channels.Prompt) []component {
	if p == nil || p.Closed || p.ApprovalID == "" {
		return []component{}
	}
	if len(customID(p.ApprovalID, channels.VerbAllow10m)) > maxCustomID {
		a.log.Warn("discordApprovalIDTooLong", "approvalID", clip(p.ApprovalID, 40))
		return []component{}
	}
	var row []component
	if p.Question {
		row = []component{{Type: componentButton, Style: styleSecondary, Label: "Decline to answer", CustomID: customID(p.ApprovalID, channels.VerbDeny)}}
	} else {
		row = []component{
			{Type: componentButton, Style: styleSuccess, Label: "Approve", CustomID: customID(p.ApprovalID, channels.VerbApprove)},
			{Type: componentButton, Style: styleDanger, Label: "Deny", CustomID: customID(p.ApprovalID, channels.VerbDeny)},
			{Type: componentButton, Style: stylePrimary, Label: "Allow 10 min", CustomID: customID(p.ApprovalID, channels.VerbAllow10m)},
		}
	}
	return []component{{Type: 1, Components: row}}
}

// Message flags we send.
const flagSuppressEmbeds = 1 << 2

// outgoing is the JSON body of a create or edit.
type outgoing struct {
	Content         string          `json:"content"`
	Components      []component     `json:"components"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
	Flags           int             `json:"flags"`
	Nonce           string          `json:"nonce,omitempty"`
	EnforceNonce    bool            `json:"enforce_nonce,omitempty"`
	Reference       *reference      `json:"message_reference,omitempty"`
	Attachments     []upload        `json:"attachments,omitempty"`
}

// allowedMentions with no parse list: text the model wrote never pings
// anyone (@everyone, a role, a user).
type allowedMentions struct {
	Parse []string `json:"parse"`
}

type reference struct {
	MessageID       string `json:"message_id"`
	FailIfNotExists bool   `json:"fail_if_not_exists"`
}

type upload struct {
	ID       int    `json:"id"`
	Filename string `json:"filename"`
}

func (a *Adapter) body(m channels.Outgoing) outgoing {
	content := Render(m.Text)
	if strings.TrimSpace(content) == "" {
		// Discord refuses an empty message (50006).
		content = "…"
	}
	return outgoing{Content: content, Components: a.buttons(m.Prompt), AllowedMentions: allowedMentions{Parse: []string{}}, Flags: flagSuppressEmbeds}
}

// nonce is the idempotency key as Discord takes it: at most 25
// characters, so a longer key is replaced by a digest of it.
func nonce(key string) string {
	if len(key) <= 25 {
		return key
	}
	sum := sha256.Sum256([]byte(key))
	return "k" + hex.EncodeToString(sum[:])[:24]
}

// Send posts m in channel conv and returns "CHANNEL_ID/MESSAGE_ID".
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	if !snowflake(conv) {
		return "", channels.Permanent(fmt.Errorf("discord send: conversation %q is not a channel id", clip(conv, 40)))
	}
	b := a.body(m)
	if m.Key != "" {
		b.Nonce, b.EnforceNonce = nonce(m.Key), true
	}
	if snowflake(m.ReplyTo) {
		b.Reference = &reference{MessageID: m.ReplyTo}
	}
	var sent message
	err := a.do(ctx, request{method: http.MethodPost, path: "/channels/" + conv + "/messages", route: "POST /channels/" + conv + "/messages",
		op: "send message to channel " + conv, body: b}, &sent)
	if err != nil {
		return "", err
	}
	if !snowflake(sent.ID) {
		return "", fmt.Errorf("discord send message to channel %s: answer has no message id", conv)
	}
	return conv + "/" + sent.ID, nil
}

// splitRef reads a reference Send returned.
func splitRef(ref string) (channel, msg string, ok bool) {
	channel, msg, ok = strings.Cut(ref, "/")
	return channel, msg, ok && snowflake(channel) && snowflake(msg)
}

// Edit replaces the text and buttons of a message sent before; a closed
// or absent prompt removes the buttons.
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	channel, msg, ok := splitRef(ref)
	if !ok {
		return channels.Permanent(fmt.Errorf("discord edit: reference %q is not CHANNEL_ID/MESSAGE_ID", clip(ref, 60)))
	}
	if conv != "" && conv != channel {
		return channels.Permanent(fmt.Errorf("discord edit: message %s belongs to channel %s, not %s", msg, channel, clip(conv, 40)))
	}
	return a.do(ctx, request{method: http.MethodPatch, path: "/channels/" + channel + "/messages/" + msg, route: "PATCH /channels/" + channel + "/messages",
		op: "edit message " + msg + " in channel " + channel, body: a.body(m)}, nil)
}

// maxUpload is Discord's upload limit for bots without boosts.
const maxUpload = 10 << 20

// SendVoice posts audio as an attached file, which Discord shows with a
// player.
func (a *Adapter) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	if !snowflake(conv) {
		return channels.Permanent(fmt.Errorf("discord send audio: conversation %q is not a channel id", clip(conv, 40)))
	}
	if len(audio) > maxUpload {
		return channels.Permanent(fmt.Errorf("discord send audio: %d bytes is over Discord's %d-byte upload limit", len(audio), maxUpload))
	}
	name := "reply" + audioExt(mime)
	meta, err := json.Marshal(outgoing{Content: "", Components: []component{}, AllowedMentions: allowedMentions{Parse: []string{}},
		Attachments: []upload{{ID: 0, Filename: name}}})
	if err != nil {
		return fmt.Errorf("discord send audio: encoding: %w", err)
	}
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("payload_json", string(meta)); err != nil {
		return fmt.Errorf("discord send audio: %w", err)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files[0]"; filename=%q`, name))
	h.Set("Content-Type", mime)
	fw, err := mw.CreatePart(h)
	if err != nil {
		return fmt.Errorf("discord send audio: %w", err)
	}
	if _, err := fw.Write(audio); err != nil {
		return fmt.Errorf("discord send audio: %w", err)
	}
	if err := mw.Close(); err != nil {
		return fmt.Errorf("discord send audio: %w", err)
	}
	return a.do(ctx, request{method: http.MethodPost, path: "/channels/" + conv + "/messages", route: "POST /channels/" + conv + "/messages",
		op: "send audio to channel " + conv, raw: buf.Bytes(), contentType: mw.FormDataContentType()}, nil)
}

func audioExt(mime string) string {
	switch strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0])) {
	case "audio/ogg", "audio/opus":
		return ".ogg"
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return ".m4a"
	case "audio/webm":
		return ".webm"
	}
	return ".bin"
}

// maxVoice bounds a fetched audio attachment.
const maxVoice = 25 << 20

// files turns the first audio attachment into an Update.Voice and the
// others into attachments.
func (a *Adapter) files(atts []attachment) (*channels.Voice, []channels.Attachment) {
	var voice *channels.Voice
	var rest []channels.Attachment
	for _, at := range atts {
		if at.URL == "" {
			continue
		}
		if voice == nil && strings.HasPrefix(strings.ToLower(at.ContentType), "audio/") {
			voice = &channels.Voice{Size: at.Size, Mime: at.ContentType, Filename: clip(at.Filename, 100),
				Fetch: func(ctx context.Context) ([]byte, error) { return a.fetch(ctx, at, maxVoice) }}
			continue
		}
		rest = append(rest, channels.Attachment{Name: at.Filename, Mime: at.ContentType, Size: at.Size,
			Fetch: func(ctx context.Context, limit int64) ([]byte, error) { return a.fetch(ctx, at, limit) }})
	}
	return voice, rest
}

// fetch downloads an attachment from the CDN. The bot token is not sent
// (CDN URLs are signed), and only https URLs, or the test fake's own
// host, are fetched: the URL comes from a payload.
func (a *Adapter) fetch(ctx context.Context, at attachment, max int64) ([]byte, error) {
	u, err := url.Parse(at.URL)
	if err != nil || u.Host == "" || !(u.Scheme == "https" || u.Scheme == a.apiURL.Scheme && u.Host == a.apiURL.Host) || u.User != nil {
		return nil, fmt.Errorf("discord attachment %s: refusing to fetch %q", at.ID, clip(at.URL, 80))
	}
	if at.Size > max {
		return nil, fmt.Errorf("discord attachment %s: %w (%d bytes, at most %d)", at.ID, channels.ErrTooLarge, at.Size, max)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("discord attachment %s: %w", at.ID, redact(err))
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord attachment %s: %w", at.ID, redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("discord attachment %s: HTTP %d", at.ID, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, fmt.Errorf("discord attachment %s: %w", at.ID, redact(err))
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("discord attachment %s: %w (over %d bytes)", at.ID, channels.ErrTooLarge, max)
	}
	return data, nil
}

// Check is the connection test: GET /users/@me proves the token and says
// who the bot is, without opening a gateway session or posting. A refused
// token names channels.discord.token (APIError does), an account that is
// not a bot says so, and an unreachable API names the API URL.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	var me struct {
		ID            string `json:"id"`
		Username      string `json:"username"`
		Discriminator string `json:"discriminator"`
		Bot           bool   `json:"bot"`
	}
	if err := a.do(ctx, request{method: http.MethodGet, path: "/users/@me", route: "GET /users/@me", op: "ask who the bot is"}, &me); err != nil {
		var ae *APIError
		var ne net.Error
		if !errors.As(err, &ae) && errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return "", fmt.Errorf("%w (check channels.discord.api_url and the network)", err)
		}
		return "", err
	}
	if me.ID == "" {
		return "", errors.New("discord ask who the bot is: the answer names no user")
	}
	name := me.Username
	if me.Discriminator != "" && me.Discriminator != "0" {
		name += "#" + me.Discriminator // accounts from before unique usernames
	}
	if !me.Bot {
		return "", fmt.Errorf("discord: the token belongs to @%s, who is not a bot; channels.discord.token must be the token of the application's bot (Developer Portal, Bot)", name)
	}
	return "@" + name + " (" + me.ID + ")", nil
}

// isDM reports whether a channel is a direct message (type 1), asking
// Discord once per channel. A failed lookup is not cached and counts as
// not private: the relay then refuses rather than answering where others
// might read.
func (a *Adapter) isDM(ctx context.Context, channel string) bool {
	a.mu.Lock()
	dm, known := a.dms[channel]
	a.mu.Unlock()
	if known {
		return dm
	}
	var ch struct {
		ID   string `json:"id"`
		Type int    `json:"type"`
	}
	if err := a.do(ctx, request{method: http.MethodGet, path: "/channels/" + channel, route: "GET /channels/" + channel, op: "look up channel " + channel}, &ch); err != nil {
		a.log.Warn("discordChannelLookupFailed", "channelID", channel, "err", err)
		return false
	}
	a.remember(channel, ch.Type == channelDM)
	return ch.Type == channelDM
}

// remember caches a channel's kind; the cache is bounded.
func (a *Adapter) remember(channel string, dm bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.dms) >= 4096 {
		clear(a.dms)
	}
	a.dms[channel] = dm
}

// self is who the bot is, from READY.
func (a *Adapter) self() (botID, appID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.botID, a.appID
}

// messageUpdate turns a MESSAGE_CREATE into an update, or reports that it
// is not for the relay (the bot's own, another bot's, a system message,
// a guild message not addressed to the bot, nothing to read).
func (a *Adapter) messageUpdate(ctx context.Context, m message) (channels.Update, bool) {
	botID, _ := a.self()
	if m.Author.ID == botID || m.Author.Bot || m.Author.System || m.WebhookID != "" {
		return channels.Update{}, false
	}
	if m.Type != messageDefault && m.Type != messageReply {
		return channels.Update{}, false
	}
	u := channels.Update{ID: m.ID, Conv: m.ChannelID, Sender: m.Author.ID, SenderName: m.Author.name(), Text: m.Content}
	u.Voice, u.Attachments = a.files(m.Attachments)
	if m.GuildID != "" {
		if !addressed(m, botID) {
			return channels.Update{}, false
		}
		if m.Member != nil && m.Member.Nick != "" {
			u.SenderName = clip(m.Member.Nick, 64)
		}
		// In a busy channel the answer quotes what it answers.
		u.Text = strings.TrimSpace(stripMention(m.Content, botID))
		u.ReplyTo = m.ID
	} else {
		u.Private = a.isDM(ctx, m.ChannelID)
	}
	if strings.TrimSpace(u.Text) == "" && u.Voice == nil && len(u.Attachments) == 0 {
		return channels.Update{}, false
	}
	return u, true
}

// addressed reports whether a guild message mentions the bot or replies
// to one of its messages.
func addressed(m message, botID string) bool {
	if botID == "" {
		return false
	}
	for _, u := range m.Mentions {
		if u.ID == botID {
			return true
		}
	}
	return m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil && m.ReferencedMessage.Author.ID == botID
}

func stripMention(s, botID string) string {
	s = strings.ReplaceAll(s, "<@"+botID+">", "")
	return strings.ReplaceAll(s, "<@!"+botID+">", "")
}
