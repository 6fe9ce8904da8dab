// Package telegram is the Telegram channel: an adapter of the channel
// relay (internal/channels) over the plain Bot API. It receives by long
// polling or a webhook, renders Markdown as Telegram's HTML subset, sends
// approval prompts with inline buttons and spoken replies as voice notes,
// and hands documents, photos (the largest size), videos and animations
// to the relay as attachments (fetched with getFile, which the Bot API
// allows up to 20 MB);
// the relay does the rest as for every channel (allow-list, one Hestia
// chat per Telegram chat, updates handled once, the durable outbox,
// streaming by rate-bounded edits, approvals decided through the one
// broker so the first decision wins wherever it is made).
//
// Design notes (the package map in ARCHITECTURE.md points here); they
// cover `channels/telegram/tgtest` too: `telegram.db` keeps the polling
// offset and the receive mode; the webhook (`POST /telegram/webhook`)
// checks a secret token per start in constant time; 429 `retry_after` is
// waited out by the outbox and holds streaming edits back; button presses
// are checked by the relay against the prompt's chat, message, person and
// state (replays refused); `tgtest` is the in-repo fake Bot API server.
package telegram

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
)

// Config tunes the bot.
type Config struct {
	// Owner is the owner's Telegram user id; Users are the allow-listed
	// ids and their scopes (the owner and trusted contacts).
	Owner int64
	Users map[int64][]devices.Scope
	// PollTimeout is the long-polling wait of getUpdates.
	PollTimeout time.Duration
	// EditInterval is the least time between two edits of a streaming
	// reply (Telegram limits edits per chat).
	EditInterval time.Duration
	// PublicURL is the web app's address for "Edit in Hestia" links;
	// empty leaves the link out.
	PublicURL string
	// MaxVoiceBytes refuses larger voice notes before downloading them.
	MaxVoiceBytes int64
	// InboxDir is where received files are saved (DATA/inbox; empty
	// refuses them); MaxFileBytes and MaxMessageBytes are the relay's
	// limits (channels.Config).
	InboxDir        string
	MaxFileBytes    int64
	MaxMessageBytes int64
	// WebhookURL, when set, switches from long polling to a webhook.
	WebhookURL string
	// VoiceReplies says when a reply is also spoken: VoiceWhenVoice
	// (default), VoiceAlways or VoiceOff.
	VoiceReplies string
}

// Voice reply modes.
const (
	VoiceWhenVoice = channels.VoiceWhenVoice
	VoiceAlways    = channels.VoiceAlways
	VoiceOff       = channels.VoiceOff
)

// Deps are the components the bot drives.
type Deps struct {
	API         *Client
	Store       *Store          // offset and receive mode
	Channels    *channels.Store // the relay's state (channels.db)
	Agent       channels.Agent
	Chats       channels.Chats
	Approvals   channels.Approvals
	Bus         *events.Bus
	Audit       channels.AuditFunc
	Transcriber channels.Transcriber // nil: voice notes are refused as not configured
	Speaker     channels.Speaker     // nil: replies are text only
	Log         *slog.Logger
	Clock       func() time.Time
}

// Defaults.
const (
	DefaultPollTimeout   = 25 * time.Second
	DefaultEditInterval  = 1500 * time.Millisecond
	DefaultMaxVoiceBytes = 20 << 20 // the Bot API's own download limit
)

// Bot is the Telegram channel: the adapter on the relay.
type Bot struct {
	*channels.Relay
	adapter *Adapter
}

// New builds the bot.
func New(cfg Config, d Deps) *Bot {
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = DefaultMaxVoiceBytes
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	a := NewAdapter(d.API, d.Store, AdapterConfig{PollTimeout: cfg.PollTimeout, EditInterval: cfg.EditInterval,
		WebhookURL: cfg.WebhookURL, PublicURL: cfg.PublicURL, MaxVoiceBytes: cfg.MaxVoiceBytes}, d.Log)
	users := make(map[string][]devices.Scope, len(cfg.Users))
	for id, sc := range cfg.Users {
		users[strconv.FormatInt(id, 10)] = sc
	}
	r := channels.New(channels.Config{
		Label: "Telegram", Users: users, Owners: []string{strconv.FormatInt(cfg.Owner, 10)}, PublicURL: cfg.PublicURL,
		OwnerConv:     strconv.FormatInt(cfg.Owner, 10),
		MaxVoiceBytes: cfg.MaxVoiceBytes, VoiceReplies: cfg.VoiceReplies,
		InboxDir: cfg.InboxDir, MaxFileBytes: cfg.MaxFileBytes, MaxMessageBytes: cfg.MaxMessageBytes,
	}, channels.Deps{
		Platform: a, Store: d.Channels, Agent: d.Agent, Chats: d.Chats, Approvals: d.Approvals, Bus: d.Bus, Audit: d.Audit,
		Transcriber: d.Transcriber, Speaker: d.Speaker, Log: d.Log, Clock: d.Clock,
	})
	return &Bot{Relay: r, adapter: a}
}

// Check is the adapter's connection test (getMe).
func (b *Bot) Check(ctx context.Context) (string, error) { return b.adapter.Check(ctx) }

// WebhookHandler serves Telegram's webhook deliveries (WebhookPath).
func (b *Bot) WebhookHandler() http.Handler { return b.adapter.WebhookHandler() }

// ImportChats carries the chat mappings of the bot's own store from before
// the relay over to channels.db, once: a Telegram chat keeps answering in
// the Hestia chat it had.
func (b *Bot) ImportChats(ctx context.Context, old *Store, st *channels.Store) error {
	have, err := st.Mappings(ctx, "telegram")
	if err != nil || len(have) > 0 {
		return err
	}
	maps, err := old.Mappings(ctx)
	if err != nil {
		return fmt.Errorf("reading the old telegram chats: %w", err)
	}
	for _, m := range maps {
		if err := st.SetChat(ctx, channels.Mapping{Channel: "telegram", Conv: strconv.FormatInt(m.TGChatID, 10),
			Sender: strconv.FormatInt(m.UserID, 10), ChatID: m.ChatID}); err != nil {
			return err
		}
	}
	return nil
}
