package channels

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
)

// Agent starts turns.
type Agent interface {
	Submit(ctx context.Context, chatID, text string, o Submit) error
}

// Submit describes a turn started from a channel.
type Submit struct {
	// Label names the channel on approval cards ("Slack").
	Label string
	// Provenance is set for a message from someone who is not the owner:
	// the turn starts tainted by it.
	Provenance []taint.Source
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

// AuditFunc records an audit event.
type AuditFunc func(ctx context.Context, typ, chatID, summary string, data any)

// Config is what the relay needs to know about one channel.
type Config struct {
	// Label is the channel's name for people ("Slack").
	Label string
	// Users are the allow-listed platform ids and their scopes: the
	// owner's identities (chat, approve, read) and trusted contacts.
	Users map[string][]devices.Scope
	// Owners are the ids among Users that are the owner's own; a message
	// from anyone else starts a tainted turn.
	Owners []string
	// OwnerConv is a conversation with the owner that exists before they
	// write (Telegram: the owner's user id is their private chat); owner
	// notices go there when no conversation is mapped yet.
	OwnerConv string
	// PublicURL is the web app's address for "open in Hestia" links.
	PublicURL string
	// MaxVoiceBytes refuses larger voice notes before fetching them.
	MaxVoiceBytes int64
	// InboxDir is where received files are saved (DATA/inbox), one folder
	// per channel and day; empty refuses files as not set up.
	InboxDir string
	// MaxFileBytes refuses a larger file (default DefaultMaxFileBytes);
	// MaxMessageBytes bounds the files of one message together (default
	// DefaultMaxMessageBytes), MaxFiles their number (DefaultMaxFiles).
	MaxFileBytes    int64
	MaxMessageBytes int64
	MaxFiles        int
	// VoiceReplies says when a reply is also spoken (VoiceWhenVoice,
	// VoiceAlways, VoiceOff), on platforms that post audio.
	VoiceReplies string
	// MaxAttempts bounds retries of one outbound message (default 50,
	// about a day with the backoff's one-hour ceiling).
	MaxAttempts int
}

// Deps are the components the relay drives.
type Deps struct {
	Platform    Platform
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

// CatchUpper is implemented by platforms that do not hand over, after a
// restart or a session they could not resume, what was posted while they
// were not connected (Slack, Discord): they fetch it themselves from the
// history of the conversations that have a chat, from the last message
// they delivered there, and deliver it through the Handler like live
// updates, so the relay's dedupe by Update.ID drops whatever also arrives
// live. The relay calls CatchUpWith once, before the first Receive.
type CatchUpper interface {
	CatchUpWith(c *Cursors)
}

// Cursors is what the relay lends a CatchUpper: where to catch up, and a
// cursor per conversation (the last message delivered there, in the
// platform's own terms, opaque here) kept in channels.db under the
// channel's name, so it survives restarts.
type Cursors struct {
	store   *Store
	channel string
	extra   string
}

// NewCursors returns the cursors of a channel; ownerConv, when set, is
// caught up in even before it has a chat (Config.OwnerConv).
func NewCursors(s *Store, channel, ownerConv string) *Cursors {
	return &Cursors{store: s, channel: channel, extra: ownerConv}
}

// Conversations lists where to catch up: the channel's conversations with
// a Hestia chat (the owner's DM and the others the relay answers in), the
// most recently active first, then the owner's conversation if it has no
// chat yet.
func (c *Cursors) Conversations(ctx context.Context) ([]string, error) {
	convs, err := c.store.activeConversations(ctx, c.channel)
	if err != nil {
		return nil, err
	}
	if c.extra != "" && !slices.Contains(convs, c.extra) {
		convs = append(convs, c.extra)
	}
	return convs, nil
}

// Get returns the cursor of a conversation ("" when none).
func (c *Cursors) Get(ctx context.Context, conv string) (string, error) {
	return c.store.Cursor(ctx, c.channel, conv)
}

// Set records the cursor of a conversation.
func (c *Cursors) Set(ctx context.Context, conv, value string) error {
	return c.store.SetCursor(ctx, c.channel, conv, value)
}

// Relay runs one channel: it turns platform updates into turns and
// decisions, and the chats' events into platform messages.
type Relay struct {
	cfg  Config
	d    Deps
	name string
	lim  Limits

	mu        sync.Mutex // guards followers
	followers map[string]*follower
	wg        sync.WaitGroup

	ob *outbox
}

// New builds a relay.
func New(cfg Config, d Deps) *Relay {
	if cfg.Label == "" {
		cfg.Label = d.Platform.Kind()
	}
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = 20 << 20
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 50
	}
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxMessageBytes <= 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.MaxFiles <= 0 {
		cfg.MaxFiles = DefaultMaxFiles
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
	lim := d.Platform.Limits()
	if lim.MaxText <= 0 {
		lim.MaxText = 4000
	}
	if lim.EditInterval <= 0 {
		lim.EditInterval = DefaultEditInterval
	}
	r := &Relay{cfg: cfg, d: d, name: d.Platform.Name(), lim: lim, followers: map[string]*follower{}}
	r.ob = newOutbox(r)
	return r
}

// Name is the channel's configured name.
func (r *Relay) Name() string { return r.name }

// Run receives updates and sends the outbox until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	defer r.wg.Wait()
	maps, err := r.d.Store.Mappings(ctx, r.name)
	if err != nil {
		return err
	}
	for _, m := range maps {
		if r.allowed(m.Sender, devices.Chat) {
			r.follow(ctx, m)
		}
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.ob.run(ctx)
	}()
	if c, ok := r.d.Platform.(CatchUpper); ok {
		c.CatchUpWith(NewCursors(r.d.Store, r.name, r.cfg.OwnerConv))
	}
	backoff := time.Second
	for ctx.Err() == nil {
		start := r.d.Clock()
		err := r.d.Platform.Receive(ctx, r.handle)
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			err = errors.New("receiving stopped")
		}
		if r.d.Clock().Sub(start) > time.Minute {
			backoff = time.Second // it ran a while: a fresh failure
		}
		r.d.Log.Warn(r.cfg.Label+" receiving failed", "channel", r.name, "err", err, "retryIn", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Minute)
	}
	return nil
}

func (r *Relay) scopes(sender string) []devices.Scope { return r.cfg.Users[sender] }

func (r *Relay) allowed(sender string, s devices.Scope) bool {
	sc := r.scopes(sender)
	return sc != nil && devices.Has(sc, s)
}

func (r *Relay) owner(sender string) bool { return slices.Contains(r.cfg.Owners, sender) }

// handle is the Handler given to the platform: each update once.
func (r *Relay) handle(ctx context.Context, u Update) {
	defer func() {
		if p := recover(); p != nil {
			r.d.Log.Error(r.cfg.Label+" update panicked", "channel", r.name, "update", u.ID, "panic", fmt.Sprint(p))
		}
	}()
	if u.ID == "" {
		r.d.Log.Warn(r.cfg.Label+" update without an id ignored", "channel", r.name)
		return
	}
	fresh, err := r.d.Store.MarkSeen(context.WithoutCancel(ctx), r.name, u.ID)
	if err != nil {
		r.d.Log.Error("recording a channel update", "channel", r.name, "err", err)
		return
	}
	if !fresh {
		r.d.Log.Info(r.cfg.Label+" update already handled; skipped", "channel", r.name, "update", u.ID)
		return
	}
	if r.scopes(u.Sender) != nil {
		if err := r.d.Store.TouchUser(context.WithoutCancel(ctx), r.name, u.Sender, u.SenderName); err != nil {
			r.d.Log.Warn("recording a channel user", "err", err)
		}
	}
	if u.Action != nil {
		r.handleAction(ctx, u)
		return
	}
	r.handleMessage(ctx, u)
}

const refusal = "Sorry, this is a private assistant and I can only talk to the people its owner has allowed. Your message was not read."

// reply queues a short notice to a conversation.
func (r *Relay) reply(ctx context.Context, u Update, text string) {
	if err := r.d.Store.Enqueue(context.WithoutCancel(ctx), Item{Channel: r.name, Conv: u.Conv, Key: replyKey(r.name, u.ID, text), Text: text, ReplyTo: u.ReplyTo}); err != nil {
		r.d.Log.Error("queueing a channel reply", "channel", r.name, "err", err)
		return
	}
	r.ob.wake()
}

func (r *Relay) handleMessage(ctx context.Context, u Update) {
	if r.scopes(u.Sender) == nil || u.Unverified {
		first, err := r.d.Store.Refused(ctx, r.name, u.Sender)
		if err != nil {
			r.d.Log.Error("recording a refused sender", "err", err)
		}
		r.d.Audit(ctx, "channel.refused", "", fmt.Sprintf("%s message from %s, who is not allowed, refused", r.cfg.Label, u.Sender),
			map[string]any{"channel": r.name, "sender": u.Sender, "name": u.SenderName, "conv": u.Conv, "first": first, "unverified": u.Unverified})
		if first && !u.Unverified {
			r.reply(ctx, u, refusal)
		}
		return
	}
	if !u.Private {
		r.reply(ctx, u, "I only answer in a private conversation with you, where nobody else can read along.")
		return
	}
	if !r.allowed(u.Sender, devices.Chat) {
		r.reply(ctx, u, "Your access does not include chatting with the assistant.")
		return
	}
	text := strings.TrimSpace(u.Text)
	files := len(u.Attachments) > 0
	switch {
	case u.Voice != nil:
		t, ok := r.transcribe(ctx, u)
		if !ok && !files {
			return
		}
		if ok {
			text = t
		}
	case files:
		// A caption is never a command or a request code: the files come
		// with it to the turn.
	case text == "/start" || strings.EqualFold(text, "/help"):
		r.reply(ctx, u, "Hello! Write to me here like in the Hestia app. Send files (a PDF, a photo, a document) and I can read them. Actions that need your approval come as prompts: answer with the buttons, or reply with the request code and approve or deny. /new starts a new conversation.")
		return
	case text == "/new":
		if _, err := r.newChat(ctx, u); err == nil {
			r.reply(ctx, u, "Started a new conversation.")
		}
		return
	case text == "":
		r.reply(ctx, u, "I can read text, voice notes and files, but this message had none of them.")
		return
	}
	if files {
		saved := r.receiveFiles(ctx, u)
		if len(saved) == 0 && text == "" {
			return // every file was refused, and each refusal answered
		}
		lines := make([]string, 0, len(saved)+1)
		if text != "" {
			lines = append(lines, text, "")
		}
		for _, f := range saved {
			lines = append(lines, f.line())
		}
		text = strings.Join(lines, "\n")
	} else if r.decideByCode(ctx, u, text) {
		return
	}
	m, err := r.chatFor(ctx, u)
	if err != nil {
		r.d.Log.Error("mapping a channel conversation", "channel", r.name, "err", err)
		r.reply(ctx, u, "Something went wrong on my side; please try again.")
		return
	}
	f := r.follow(ctx, m)
	f.setLast(u.ReplyTo, u.Voice != nil)
	if q := f.pendingQuestion(); q != "" && r.allowed(u.Sender, devices.Approve) {
		if _, err := r.d.Approvals.Decide(q, approval.Decision{Outcome: approval.Answer, Answer: text}); err == nil {
			r.d.Audit(ctx, "channel.answer", m.ChatID, "question answered from "+r.cfg.Label, map[string]any{"channel": r.name, "approval_id": q, "sender": u.Sender})
			return
		}
	}
	sub := SubmitFor(r.cfg.Label, r.d.Platform.Kind(), u.Sender, r.owner(u.Sender), r.d.Clock())
	if err := r.d.Agent.Submit(ctx, m.ChatID, text, sub); err != nil {
		r.d.Log.Warn("starting a turn from a channel", "channel", r.name, "chat", m.ChatID, "err", err)
		r.reply(ctx, u, "I could not start on that: "+err.Error())
	}
}

// chatFor returns the Hestia chat of a conversation, creating one the
// first time (or when the old one was deleted in the app).
func (r *Relay) chatFor(ctx context.Context, u Update) (Mapping, error) {
	m, err := r.d.Store.ChatFor(ctx, r.name, u.Conv)
	if err == nil {
		ok, err := r.d.Chats.Exists(ctx, m.ChatID)
		if err != nil {
			return Mapping{}, err
		}
		if ok && m.Sender == u.Sender {
			return m, nil
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return Mapping{}, err
	}
	return r.newChat(ctx, u)
}

func (r *Relay) newChat(ctx context.Context, u Update) (Mapping, error) {
	name := u.SenderName
	if name == "" {
		name = u.Sender
	}
	id, err := r.d.Chats.Create(ctx, truncate(strings.TrimSpace(r.cfg.Label+" "+name), 80))
	if err != nil {
		return Mapping{}, err
	}
	m := Mapping{Channel: r.name, Conv: u.Conv, Sender: u.Sender, ChatID: id}
	if err := r.d.Store.SetChat(ctx, m); err != nil {
		return Mapping{}, err
	}
	return m, nil
}

// follow returns the follower of m's chat, starting it if needed.
func (r *Relay) follow(ctx context.Context, m Mapping) *follower {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.followers[m.ChatID]; ok && f.m.Conv == m.Conv {
		return f
	}
	// A conversation follows one Hestia chat: the one it left (after /new)
	// no longer gets its replies or counts it as an approver.
	for id, f := range r.followers {
		if f.m.Conv == m.Conv || id == m.ChatID {
			f.cancel()
			delete(r.followers, id)
		}
	}
	fctx, cancel := context.WithCancel(ctx)
	f := newFollower(r, m, cancel)
	r.followers[m.ChatID] = f
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		f.run(fctx)
	}()
	return f
}

// Followers reports how many chats are followed (tests).
func (r *Relay) Followers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.followers)
}

// Devices lists the allowed identities of the channel as devices (managed
// in config) with their scopes and when they last wrote.
func (r *Relay) Devices(ctx context.Context) ([]devices.Device, error) {
	seen, err := r.d.Store.Users(ctx, r.name)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(r.cfg.Users))
	for id := range r.cfg.Users {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]devices.Device, 0, len(ids))
	for _, id := range ids {
		d := devices.Device{ID: r.name + ":" + id, Name: r.cfg.Label + " " + id, Kind: r.d.Platform.Kind(),
			Scopes: append([]devices.Scope(nil), r.cfg.Users[id]...), Managed: "config"}
		if u, ok := seen[id]; ok {
			if u.Name != "" {
				d.Name = fmt.Sprintf("%s %s (%s)", r.cfg.Label, u.Name, id)
			}
			d.CreatedAt = u.FirstSeen
			last := u.LastSeen
			d.LastSeenAt = &last
		}
		out = append(out, d)
	}
	return out, nil
}

// replyKey names a notice answering one update; an update may get several
// (a voice note's transcript, then a failure), each its own message.
func replyKey(channel, updateID, text string) string {
	h := sha256.Sum256([]byte(text))
	return channel + ":re:" + updateID + ":" + hex.EncodeToString(h[:6])
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// SubmitFor is how a channel message becomes a turn: labelled with the
// channel, and tainted by the message unless the owner wrote it — a
// trusted contact may ask, but what they write is not the owner's word, so
// gated tools need a card (the adversarial origin matrix builds its
// channel rows with this).
func SubmitFor(label, kind, sender string, owner bool, at time.Time) Submit {
	sub := Submit{Label: label}
	if !owner {
		sub.Provenance = []taint.Source{{Tool: "channel:" + kind, Detail: truncate("message from "+sender, 120), At: at}}
	}
	return sub
}

// NotifyOwner posts a notice (a scheduled job's result, a watch's message)
// to the owner's most recent conversation on this channel, through the
// outbox, so it arrives even across restarts. key identifies the notice:
// the same key posts once. It fails when the owner never wrote here and
// the platform has no OwnerConv: a bot may write only where spoken to.
func (r *Relay) NotifyOwner(ctx context.Context, key, title, body string) error {
	maps, err := r.d.Store.Mappings(ctx, r.name)
	if err != nil {
		return err
	}
	conv := r.cfg.OwnerConv
	for _, m := range maps { // oldest first: the last owner conversation wins
		if r.owner(m.Sender) {
			conv = m.Conv
		}
	}
	if conv == "" {
		return fmt.Errorf("%s: the owner has not written to the assistant here yet, so there is no conversation to post in", r.cfg.Label)
	}
	text := body
	if title != "" {
		text = "**" + title + "**\n\n" + body
	}
	for i, part := range Split(text, r.lim.MaxText) {
		if err := r.d.Store.Enqueue(ctx, Item{Channel: r.name, Conv: conv, Key: fmt.Sprintf("%s:notify:%s:%d", r.name, key, i), Text: part}); err != nil {
			return err
		}
	}
	r.ob.wake()
	return nil
}
