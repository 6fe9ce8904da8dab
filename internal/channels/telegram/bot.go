// Package telegram is the Telegram channel: a bot that long-polls the Bot
// API (or receives a webhook), serves only allow-listed Telegram users, maps each Telegram chat to
// a Hestia chat, streams replies by editing a message at a bounded rate,
// and brings approval cards into the chat as messages with inline buttons.
//
// Decisions go through the same approval broker as the web app and the
// CLI, so the first decision wins wherever it is made; a card decided
// elsewhere has its buttons withdrawn. Authority stays in code: a button
// press is honoured only from an allow-listed user with the approve scope,
// on the very message the card was sent as, once.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `channels/telegram/tgtest` too:
//
// the Telegram bot (`telegram.db`: polling offset, receive mode, handled update ids, chat mapping,
// approval cards, refused users): long polling or a webhook (`POST /telegram/webhook`, secret
// token per start checked in constant time; an update is handled once across modes and restarts)
// over the plain Bot API, 429 `retry_after` waited out for sends/edits (bounded) while streaming
// edits hold back, a shed follower catching up from the event ring so a final reply is never lost,
// spoken replies (sendVoice through the `tts` tier), allow-listed users with scopes, one Hestia
// chat per Telegram chat, replies streamed by rate-bounded edits, Markdown rendered to Telegram's
// HTML subset and split under 4096 characters, approval cards with inline buttons decided through
// the approval broker (checked against the card's chat, message, user and state; replays refused),
// voice notes through `speech`; the in-repo fake Bot API server the tests use.
package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

// Agent starts turns.
type Agent interface {
	Submit(ctx context.Context, chatID, text string) error
}

// Chats creates Hestia chats and tells whether one still exists.
type Chats interface {
	Create(ctx context.Context, title string) (string, error)
	Exists(ctx context.Context, id string) (bool, error)
}

// Approvals decides pending requests (the approval broker).
type Approvals interface {
	Decide(id string, d approval.Decision) (approval.Decision, error)
}

// Transcriber turns a voice note into text (the stt tier).
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error)
}

// Speaker turns a reply into audio (the tts tier); it returns the audio
// and its content type.
type Speaker interface {
	Speak(ctx context.Context, text string) ([]byte, string, error)
}

// AuditFunc records an audit event.
type AuditFunc func(ctx context.Context, typ, chatID, summary string, data any)

// Config tunes the bot.
type Config struct {
	// Users are the allow-listed Telegram user ids and their scopes (the
	// owner and trusted contacts). Everyone else is refused.
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
	// WebhookURL, when set, switches from long polling to a webhook:
	// Telegram POSTs updates there (the daemon serves WebhookPath) with
	// a secret token checked on every request. Empty polls; switching
	// back deletes the webhook.
	WebhookURL string
	// VoiceReplies says when a reply is also spoken (sendVoice through
	// the Speaker): VoiceWhenVoice (default), VoiceAlways or VoiceOff.
	VoiceReplies string
}

// Voice reply modes.
const (
	VoiceWhenVoice = "voice" // when the user's message was a voice note
	VoiceAlways    = "always"
	VoiceOff       = "off"
)

// Deps are the components the bot drives.
type Deps struct {
	API         *Client
	Store       *Store
	Agent       Agent
	Chats       Chats
	Approvals   Approvals
	Bus         *events.Bus
	Audit       AuditFunc
	Transcriber Transcriber // nil: voice notes are refused as not configured
	Speaker     Speaker     // nil: replies are text only
	Log         *slog.Logger
	Clock       func() time.Time
}

// Defaults.
const (
	DefaultPollTimeout   = 25 * time.Second
	DefaultEditInterval  = 1500 * time.Millisecond
	DefaultMaxVoiceBytes = 20 << 20 // the Bot API's own download limit
)

// Bot is the running channel.
type Bot struct {
	cfg Config
	d   Deps

	mu        sync.Mutex // guards followers
	followers map[string]*follower
	wg        sync.WaitGroup

	// cards is read-held while a card is sent and its message id stored,
	// and write-held by a button press before it looks the card up, so a
	// press that beats the store write waits instead of being refused.
	cards sync.RWMutex

	// hookMu serializes webhook deliveries and guards hook, which is set
	// while Run is receiving by webhook.
	hookMu sync.Mutex
	hook   *hookState
}

// New builds a bot.
func New(cfg Config, d Deps) *Bot {
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = DefaultEditInterval
	}
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = DefaultMaxVoiceBytes
	}
	if cfg.VoiceReplies == "" {
		cfg.VoiceReplies = VoiceWhenVoice
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Audit == nil {
		d.Audit = func(context.Context, string, string, string, any) {}
	}
	return &Bot{cfg: cfg, d: d, followers: map[string]*follower{}}
}

// Run receives updates until ctx ends: by webhook when WebhookURL is set,
// by long polling otherwise. Either way an update is handled once: its id
// is recorded after handling, and one seen before (a webhook delivery
// Telegram retries, an update polled again after switching modes or
// restarting) is skipped.
func (b *Bot) Run(ctx context.Context) error {
	err := b.run(ctx)
	if ctx.Err() != nil {
		return nil // shutdown, not a failure (a store call may have seen it)
	}
	return err
}

func (b *Bot) run(ctx context.Context) error {
	defer b.wg.Wait()
	maps, err := b.d.Store.Mappings(ctx)
	if err != nil {
		return err
	}
	for _, m := range maps {
		if b.allowed(m.UserID, devices.Chat) {
			b.follow(ctx, m)
		}
	}
	if b.cfg.WebhookURL != "" {
		return b.runWebhook(ctx)
	}
	return b.poll(ctx)
}

// poll long-polls getUpdates. Transport errors back off and retry; the
// offset is stored after each update, so a restart resumes exactly after
// the last handled one.
func (b *Bot) poll(ctx context.Context) error {
	mode, err := b.d.Store.Mode(ctx)
	if err != nil {
		return err
	}
	if mode == "webhook" {
		// Telegram refuses getUpdates while a webhook is set.
		if !b.untilDone(ctx, "deleting the telegram webhook", b.d.API.DeleteWebhook) {
			return nil
		}
	}
	if mode != "polling" {
		if err := b.d.Store.SetMode(context.WithoutCancel(ctx), "polling"); err != nil {
			return err
		}
	}
	offset, err := b.d.Store.Offset(ctx)
	if err != nil {
		return err
	}
	backoff := time.Second
	for ctx.Err() == nil {
		ups, err := b.d.API.GetUpdates(ctx, offset, b.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			wait := backoff
			var ae *APIError
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				wait = time.Duration(ae.RetryAfter) * time.Second
			}
			if errors.As(err, &ae) && ae.Code == http.StatusConflict {
				// A webhook set elsewhere (or by an older run): take over.
				if err := b.d.API.DeleteWebhook(ctx); err == nil {
					continue
				}
			}
			b.d.Log.Warn("telegram polling failed", "err", err, "retryIn", wait)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			backoff = min(backoff*2, time.Minute)
			continue
		}
		backoff = time.Second
		for _, u := range ups {
			if u.UpdateID < offset {
				continue // already handled (a server repeating itself)
			}
			if err := b.handleOnce(ctx, u); err != nil {
				return err
			}
			offset = u.UpdateID + 1
			// Stored even when shutdown began during the update: it was handled.
			if err := b.d.Store.SetOffset(context.WithoutCancel(ctx), offset); err != nil {
				return err
			}
		}
	}
	return nil
}

// handleOnce handles u unless its id was handled before, then records it.
func (b *Bot) handleOnce(ctx context.Context, u Update) error {
	seen, err := b.d.Store.Seen(context.WithoutCancel(ctx), u.UpdateID)
	if err != nil {
		return err
	}
	if seen {
		b.d.Log.Info("telegram update already handled; skipped", "update", u.UpdateID)
		return nil
	}
	b.handle(ctx, u)
	_, err = b.d.Store.MarkSeen(context.WithoutCancel(ctx), u.UpdateID)
	return err
}

// untilDone retries fn with backoff until it succeeds (true) or ctx ends.
func (b *Bot) untilDone(ctx context.Context, what string, fn func(context.Context) error) bool {
	backoff := time.Second
	for {
		err := fn(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		b.d.Log.Warn(what+" failed", "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Minute)
	}
}

func (b *Bot) handle(ctx context.Context, u Update) {
	defer func() {
		if p := recover(); p != nil {
			b.d.Log.Error("telegram update panicked", "update", u.UpdateID, "panic", fmt.Sprint(p))
		}
	}()
	var from *User
	if u.CallbackQuery != nil {
		from = &u.CallbackQuery.From
	} else if u.Message != nil {
		from = u.Message.From
	}
	if from != nil && b.scopes(from.ID) != nil {
		if err := b.d.Store.TouchUser(context.WithoutCancel(ctx), from.ID, from.Username); err != nil {
			b.d.Log.Warn("recording telegram user", "err", err)
		}
	}
	switch {
	case u.CallbackQuery != nil:
		b.handleCallback(ctx, u.CallbackQuery)
	case u.Message != nil:
		b.handleMessage(ctx, u.Message)
	}
}

// scopes returns a user's scopes; nil for users not on the allow-list.
func (b *Bot) scopes(user int64) []devices.Scope { return b.cfg.Users[user] }

func (b *Bot) allowed(user int64, s devices.Scope) bool {
	sc := b.scopes(user)
	return sc != nil && devices.Has(sc, s)
}

func (b *Bot) send(ctx context.Context, chat int64, html string, kb *InlineKeyboard) (Message, error) {
	m, err := b.d.API.SendMessage(ctx, chat, html, kb)
	if err != nil {
		b.d.Log.Warn("telegram send failed", "chat", chat, "err", err)
	}
	return m, err
}

const refusal = "Sorry, this is a private assistant and I can only talk to the people its owner has allowed. Your message was not read."

func (b *Bot) handleMessage(ctx context.Context, msg *Message) {
	if msg.From == nil || msg.From.IsBot {
		return
	}
	user := msg.From.ID
	if b.scopes(user) == nil {
		first, err := b.d.Store.Refused(ctx, user)
		if err != nil {
			b.d.Log.Error("recording refused telegram user", "err", err)
		}
		b.d.Audit(ctx, "telegram.refused", "", fmt.Sprintf("message from Telegram user %d, who is not allowed, refused", user),
			map[string]any{"user_id": user, "username": msg.From.Username, "chat_id": msg.Chat.ID, "first": first})
		if first {
			b.send(ctx, msg.Chat.ID, Escape(refusal), nil)
		}
		return
	}
	if msg.Chat.Type != "" && msg.Chat.Type != "private" {
		b.send(ctx, msg.Chat.ID, Escape("I only answer in a private chat with you, where nobody else can read along."), nil)
		return
	}
	if !b.allowed(user, devices.Chat) {
		b.send(ctx, msg.Chat.ID, Escape("Your access does not include chatting with the assistant."), nil)
		return
	}
	text := strings.TrimSpace(msg.Text)
	voice := msg.Voice != nil || msg.Audio != nil
	switch {
	case msg.Voice != nil || msg.Audio != nil:
		media := msg.Voice
		if media == nil {
			media = msg.Audio
		}
		t, ok := b.transcribe(ctx, msg, media)
		if !ok {
			return
		}
		text = t
	case text == "/start":
		b.send(ctx, msg.Chat.ID, Escape("Hello! Write to me here like in the Hestia app. Actions that need your approval come as cards with buttons. /new starts a new conversation."), nil)
		return
	case text == "/new":
		if _, err := b.newChat(ctx, msg); err == nil {
			b.send(ctx, msg.Chat.ID, Escape("Started a new conversation."), nil)
		}
		return
	case text == "":
		b.send(ctx, msg.Chat.ID, Escape("I can read text and voice notes only."), nil)
		return
	}
	m, err := b.chatFor(ctx, msg)
	if err != nil {
		b.d.Log.Error("mapping telegram chat", "err", err)
		b.send(ctx, msg.Chat.ID, Escape("Something went wrong on my side; please try again."), nil)
		return
	}
	f := b.follow(ctx, m)
	// A pending question in this chat is answered by the next message.
	if q := f.pendingQuestion(); q != "" {
		if _, err := b.d.Approvals.Decide(q, approval.Decision{Outcome: approval.Answer, Answer: text}); err == nil {
			b.d.Audit(ctx, "telegram.answer", m.ChatID, "question answered from Telegram", map[string]any{"approval_id": q, "user_id": user})
			return
		}
	}
	f.setVoice(voice)
	if err := b.d.Agent.Submit(ctx, m.ChatID, text); err != nil {
		b.d.Log.Warn("starting turn from telegram", "chat", m.ChatID, "err", err)
		b.send(ctx, msg.Chat.ID, Escape("I could not start on that: "+err.Error()), nil)
	}
}

// chatFor returns the Hestia chat of a Telegram chat, creating one the
// first time (or when the old one was deleted in the app).
func (b *Bot) chatFor(ctx context.Context, msg *Message) (Mapping, error) {
	m, err := b.d.Store.ChatFor(ctx, msg.Chat.ID)
	if err == nil {
		ok, err := b.d.Chats.Exists(ctx, m.ChatID)
		if err != nil {
			return Mapping{}, err
		}
		if ok {
			return m, nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return Mapping{}, err
	}
	return b.newChat(ctx, msg)
}

func (b *Bot) newChat(ctx context.Context, msg *Message) (Mapping, error) {
	name := msg.From.FirstName
	if name == "" {
		name = msg.From.Username
	}
	id, err := b.d.Chats.Create(ctx, strings.TrimSpace("Telegram "+name))
	if err != nil {
		return Mapping{}, err
	}
	m := Mapping{TGChatID: msg.Chat.ID, UserID: msg.From.ID, ChatID: id}
	if err := b.d.Store.SetChat(ctx, m); err != nil {
		return Mapping{}, err
	}
	return m, nil
}

// follow returns the follower of m's chat, starting it if needed.
func (b *Bot) follow(ctx context.Context, m Mapping) *follower {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f, ok := b.followers[m.ChatID]; ok && f.m.TGChatID == m.TGChatID {
		return f
	}
	// A Telegram chat follows one Hestia chat: the one it left (after
	// /new) no longer gets its replies or counts it as an approver.
	for id, f := range b.followers {
		if f.m.TGChatID == m.TGChatID || id == m.ChatID {
			f.cancel()
			delete(b.followers, id)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	f := newFollower(b, m, cancel)
	b.followers[m.ChatID] = f
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer cancel()
		f.run(fctx)
	}()
	return f
}

// Followers reports how many chats are followed (tests).
func (b *Bot) Followers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.followers)
}

// decodeData unmarshals an event's data into v.
func decodeData(ev *events.Event, v any) error {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(ev.JSON(), &env); err != nil {
		return err
	}
	return json.Unmarshal(env.Data, v)
}

// Devices lists the allowed Telegram users as devices (kind telegram,
// managed in config) with their scopes and when they last wrote, so they
// show beside paired devices.
func (b *Bot) Devices(ctx context.Context) ([]devices.Device, error) {
	seen, err := b.d.Store.Users(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, len(b.cfg.Users))
	for id := range b.cfg.Users {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]devices.Device, 0, len(ids))
	for _, id := range ids {
		d := devices.Device{ID: fmt.Sprintf("tg_%d", id), Name: fmt.Sprintf("Telegram user %d", id), Kind: "telegram",
			Scopes: append([]devices.Scope(nil), b.cfg.Users[id]...), Managed: "config"}
		if u, ok := seen[id]; ok {
			if u.Username != "" {
				d.Name = fmt.Sprintf("Telegram @%s (%d)", u.Username, id)
			}
			d.CreatedAt = u.FirstSeen
			last := u.LastSeen
			d.LastSeenAt = &last
		}
		out = append(out, d)
	}
	return out, nil
}
