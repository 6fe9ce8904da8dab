// Package matrix connects Hestia to Matrix as a bot account on any
// homeserver, through the client-server API (v3) over plain HTTP: one
// access token (Authorization: Bearer), /sync long polling, and the
// endpoints that send, edit and react. It adapts the platform to the
// channels.Platform interface; the relay owns identity, deduplication, the
// outbox and approvals.
//
// Supported:
//   - Receiving by /sync with a filter (messages, reactions, membership and
//     encryption events only). The sync position (next_batch) is kept in a
//     small owner-only state file and written after each batch is handled,
//     so a restart resumes where it stopped and messages written while
//     Hestia was down are answered; a batch cut off by a crash is read
//     again and the relay's deduplication by event id drops what was
//     handled. Without a saved position (first start, lost file) events
//     older than the adapter's start are history and are skipped. A
//     timeline the server cut short ("limited") is filled in from
//     /rooms/{roomId}/messages back to the previous position.
//   - Invites: accepted from the owners and trusted contacts given in
//     Config.Inviters, declined from everyone else. After joining, the
//     room's history from before the invite is not read as new messages.
//   - Private conversations: a room whose joined members are exactly the
//     bot and the sender (from /rooms/{roomId}/joined_members, cached until
//     a membership changes) is Private; any other room is not.
//   - Text (m.text, m.emote; reply quotes stripped), voice notes and audio
//     (m.audio, audio m.file), and files (m.file, m.image, m.video, with
//     their caption) as attachments, all fetched through the authenticated
//     media API (/_matrix/client/v1/media/download, spec v1.11) within
//     the relay's limit; other message types
//     arrive without text so the relay says what it can read. Notices
//     (m.notice) and edits of earlier messages are not answered, nor the
//     bot's own events. Threads: a message in a thread is answered in it.
//   - Sending m.room.message with the Markdown rendered to
//     org.matrix.custom.html (Render) beside the Markdown body, empty
//     m.mentions (so nothing the model writes pings @room or a person),
//     and a transaction id derived from Outgoing.Key: a retried send posts
//     nothing new (Limits.Idempotent; servers keep transaction ids for a
//     while, Synapse about half an hour). Content over the 64 KiB event
//     limit is shrunk, never refused. Edits by m.replace with m.new_content
//     and the "* " fallback. Spoken replies as m.audio voice messages.
//   - Approvals by reaction: on an open prompt the bot itself reacts 👍
//     and 👎 so one click answers it; a person's m.annotation 👍/✅
//     approves and 👎/❌ denies, arriving as Update.Action with Ref the
//     prompt's event id (Send returns the bare event id; conversations are
//     room ids). The request code line the relay writes works as well.
//   - Rate limits (429, M_LIMIT_EXCEEDED with retry_after_ms or
//     Retry-After) become *channels.RetryAfterError; a refused token
//     (M_UNKNOWN_TOKEN, M_MISSING_TOKEN), M_FORBIDDEN and other 4xx become
//     channels.Permanent with a message saying what to do.
//
// Not supported: end-to-end encryption. Matrix's pure-Go option is
// mautrix-go's crypto package with the goolm build tag (v0.33.0 builds with
// CGO_ENABLED=0). It was measured and left out: importing it costs every
// process of the one hestia binary about 2 ms, 3,000 allocations and
// 0.5 MB of package init (GODEBUG=inittrace; mostly mautrix/id and the
// crypto store's SQL upgrades) against 0.15 ms for an empty program, and
// brings about fifteen modules (zerolog, gjson/sjson, go.mau.fi/util with
// a database layer of its own beside the project's). Beyond the cost, a
// bot that reads encrypted rooms reliably must keep Olm/Megolm sessions
// across restarts, publish and rotate device keys, and, as clients move
// to withholding room keys from devices their owner has not cross-signed
// (MSC4153), run cross-signing with a recovery key: a component of its
// own, not a channel adapter. Instead, encrypted rooms are detected
// (m.room.encrypted events, m.room.encryption state and invites): an owner
// or contact writing there gets one plain-text notice per room asking them
// to talk to the bot in a room with encryption off; strangers' encrypted
// messages go to the relay as empty messages, so they are refused and
// audited like any other. Also not supported: buttons (Matrix has
// none), finding a sent message in history (the transaction id makes
// sends idempotent instead), images and files, spaces, and rooms the bot
// joins any other way than an invite.
//
// Security: the homeserver authenticates every event's sender (over
// federation, by signatures), so the sender's user id is trusted as the
// identity the relay matches; display names are not, and are only shown.
// The only inbound path is the adapter's own authenticated HTTPS request
// to the configured homeserver: there is no webhook to forge. The token is
// sent only in the Authorization header, never in a URL, a log line or an
// error.
package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
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
)

// Config is what the adapter needs; secrets are already read.
type Config struct {
	// Name is the channel's configured name ("matrix").
	Name string
	// Homeserver is the client API's base URL (https://matrix.example.org).
	Homeserver string
	// Token is the bot account's access token.
	Token string
	// Inviters are the user ids whose invites the bot accepts (the
	// channel's owners and trusted contacts); every other invite is
	// declined. Whether someone may chat is still the relay's decision.
	Inviters []string
	// StateFile keeps the sync position across restarts; "" keeps it in
	// memory only (a restart then skips what was written while down).
	StateFile string
	// PollTimeout is how long one /sync waits for news (default 30s).
	PollTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Platform limits.
const (
	// maxText is how many runes one message carries; the relay splits
	// longer replies. Text and its HTML together stay well within the
	// event limit for ordinary text; send shrinks what does not.
	maxText = 8000
	// maxContent bounds an event's content as sent: the homeserver refuses
	// events over 65,536 bytes, and the server adds the envelope (ids,
	// hashes, signatures, prev_events) on top of the content.
	maxContent = 60000
	// maxMedia bounds a downloaded voice note (the relay's own cap is
	// lower; this only keeps a hostile server from filling memory).
	maxMedia = 64 << 20
)

// Adapter is the Matrix platform.
type Adapter struct {
	cfg      Config
	base     string // homeserver root without a trailing slash
	hc       *http.Client
	log      *slog.Logger
	inviters map[string]bool
	now      func() time.Time

	mu      sync.Mutex // guards the fields below
	userID  string     // the bot, from whoami
	since   string     // the sync position
	loaded  bool       // the state file was read
	started time.Time  // the first Receive: older events are history without a position
	rooms   map[string]*roomState
}

// roomState is what the adapter remembers of a room between syncs.
type roomState struct {
	// members maps joined users to display names; nil until fetched and
	// after a membership change.
	members   map[string]string
	encrypted bool
	noticed   bool // the encryption notice was posted (this process)
}

// New builds the adapter. hc may be nil (http.DefaultClient's transport,
// no overall timeout: each call sets its own).
func New(cfg Config, hc *http.Client, log *slog.Logger) (*Adapter, error) {
	if cfg.Name == "" {
		cfg.Name = "matrix"
	}
	u, err := url.Parse(strings.TrimSpace(cfg.Homeserver))
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("matrix: homeserver %q is not an http(s) URL", cfg.Homeserver)
	}
	if strings.TrimSpace(cfg.Token) == "" {
		return nil, errors.New("matrix: no access token")
	}
	cfg.Token = strings.TrimSpace(cfg.Token)
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if hc == nil {
		hc = &http.Client{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	inv := map[string]bool{}
	for _, id := range cfg.Inviters {
		if id = strings.TrimSpace(id); id != "" {
			inv[id] = true
		}
	}
	return &Adapter{cfg: cfg, base: strings.TrimRight(u.String(), "/"), hc: hc, log: log, inviters: inv, now: now,
		rooms: map[string]*roomState{}}, nil
}

// Name is the channel's configured name.
func (a *Adapter) Name() string { return a.cfg.Name }

// Kind is "matrix".
func (a *Adapter) Kind() string { return "matrix" }

// Limits: edits (m.replace), reactions for approvals, idempotent sends by
// transaction id. Edits are spaced: Synapse's default message rate limit
// is one event per five seconds with a burst of ten, and a streaming edit
// is an event like any other (an admin can lift the bot's limit).
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: maxText, Edit: true, EditInterval: 3 * time.Second, Reactions: true, Idempotent: true}
}

var _ channels.Checker = (*Adapter)(nil)

// UserID is the bot's user id once Receive or Check has asked the
// homeserver ("" before).
func (a *Adapter) UserID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.userID
}

// Check asks the homeserver who the token belongs to (the connection
// test), every time: a token revoked since the adapter started must fail
// here. It fails when the token is refused (naming channels.matrix.token)
// or belongs to one of the people the bot serves, and names
// channels.matrix.homeserver when the server cannot be reached. It sends
// nothing.
func (a *Adapter) Check(ctx context.Context) (string, error) {
	id, err := a.whoami(ctx)
	if err != nil {
		var ae *APIError
		var ne net.Error
		if !errors.As(err, &ae) && errors.As(err, &ne) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			return "", fmt.Errorf("%w (check channels.matrix.homeserver and the network)", err)
		}
		return "", err
	}
	return id, nil
}

// identify learns the bot's user id once.
func (a *Adapter) identify(ctx context.Context) error {
	if a.UserID() != "" {
		return nil
	}
	_, err := a.whoami(ctx)
	return err
}

// whoami asks GET /account/whoami whose the token is and remembers it. A
// token of an owner's or contact's own account is refused: the adapter
// ignores its own account's messages, so it would ignore that person.
func (a *Adapter) whoami(ctx context.Context) (string, error) {
	data, _, err := a.call(ctx, request{op: "asking who the token belongs to", method: http.MethodGet, path: "/_matrix/client/v3/account/whoami"})
	if err != nil {
		return "", err
	}
	var who struct {
		UserID string `json:"user_id"`
	}
	if err := json.Unmarshal(data, &who); err != nil || !validID(who.UserID, '@') {
		return "", fmt.Errorf("matrix: whoami answered without a valid user_id")
	}
	if a.inviters[who.UserID] {
		return "", channels.Permanent(fmt.Errorf("matrix: the access token belongs to %s, one of the channel's owners or contacts; Hestia needs a bot account of its own (it ignores its own account's messages)", who.UserID))
	}
	a.mu.Lock()
	a.userID = who.UserID
	a.mu.Unlock()
	return who.UserID, nil
}

// txnID derives a transaction id from the parts that make a send unique:
// the same parts (a retry) give the same id, which the homeserver answers
// with the event it already made. Hashing keeps it short and URL-safe
// whatever the key holds.
func txnID(kind string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return "hestia-" + kind + "-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:18])
}

func (a *Adapter) room(id string) *roomState {
	r, ok := a.rooms[id]
	if !ok {
		r = &roomState{}
		a.rooms[id] = r
	}
	return r
}
