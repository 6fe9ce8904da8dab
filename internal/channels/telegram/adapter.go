package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/speech"
)

// Adapter is the Telegram platform of the channel relay: updates in by
// long polling or webhook, Markdown out as Telegram's HTML subset, approval
// prompts with inline buttons, spoken replies with sendVoice.
type Adapter struct {
	api *Client
	st  *Store
	cfg AdapterConfig
	log *slog.Logger

	// hookMu serializes webhook deliveries and guards hook, which is set
	// while Receive is receiving by webhook.
	hookMu sync.Mutex
	hook   *hookState
}

// AdapterConfig tunes the adapter.
type AdapterConfig struct {
	PollTimeout  time.Duration
	EditInterval time.Duration
	// WebhookURL, when set, switches from long polling to a webhook.
	WebhookURL string
	// PublicURL adds an "Edit in Hestia" button to approval prompts.
	PublicURL string
	// MaxVoiceBytes is the most a voice note may weigh.
	MaxVoiceBytes int64
}

// NewAdapter returns the adapter; st keeps the polling offset and mode.
func NewAdapter(api *Client, st *Store, cfg AdapterConfig, log *slog.Logger) *Adapter {
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = DefaultPollTimeout
	}
	if cfg.EditInterval <= 0 {
		cfg.EditInterval = DefaultEditInterval
	}
	if cfg.MaxVoiceBytes <= 0 {
		cfg.MaxVoiceBytes = DefaultMaxVoiceBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Adapter{api: api, st: st, cfg: cfg, log: log}
}

var (
	_ channels.Platform    = (*Adapter)(nil)
	_ channels.Router      = (*Adapter)(nil)
	_ channels.VoiceSender = (*Adapter)(nil)
	_ channels.Checker     = (*Adapter)(nil)
)

// Name and Kind are "telegram": one bot per home.
func (a *Adapter) Name() string { return "telegram" }
func (a *Adapter) Kind() string { return "telegram" }

// Limits: Telegram takes 4,096 characters after entity parsing; the
// relay splits Markdown a little below it.
func (a *Adapter) Limits() channels.Limits {
	return channels.Limits{MaxText: chunkRunes, Edit: true, EditInterval: a.cfg.EditInterval, Buttons: true}
}

// Check asks getMe who the bot is (the connection test): it sends
// nothing and returns "@username". A refused token says which setting to
// fix; the token itself is never in an error (it is part of the URL, which
// the client drops from transport errors).
func (a *Adapter) Check(ctx context.Context) (string, error) {
	me, err := a.api.GetMe(ctx)
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && (ae.Code == http.StatusUnauthorized || ae.Code == http.StatusNotFound) {
			// Telegram answers 404 for a token of the wrong shape, 401
			// for a revoked or unknown one.
			return "", fmt.Errorf("%w: the bot token was refused; check telegram.token (or token_file)", err)
		}
		if ae == nil {
			return "", fmt.Errorf("%w (check telegram.api_url and the network)", err)
		}
		return "", err
	}
	if !me.IsBot {
		return "", fmt.Errorf("telegram getMe: the token belongs to %s, who is not a bot; telegram.token must be a token from @BotFather", userLabel(me))
	}
	return userLabel(me), nil
}

// userLabel is "@username", or the first name and id of an account
// without one.
func userLabel(u User) string {
	if u.Username != "" {
		return "@" + u.Username
	}
	return fmt.Sprintf("%s (%d)", u.FirstName, u.ID)
}

// Routes serves the webhook; while polling it answers 503.
func (a *Adapter) Routes() []channels.Route {
	return []channels.Route{{Pattern: "POST " + WebhookPath, Handler: a.WebhookHandler()}}
}

// Receive gets updates by webhook when WebhookURL is set, by long polling
// otherwise, until ctx ends.
func (a *Adapter) Receive(ctx context.Context, h channels.Handler) error {
	if a.cfg.WebhookURL != "" {
		return a.runWebhook(ctx, h)
	}
	return a.poll(ctx, h)
}

// poll long-polls getUpdates. The offset is stored after each update, so
// a restart resumes after the last one handled (the relay deduplicates by
// update id, across modes too).
func (a *Adapter) poll(ctx context.Context, h channels.Handler) error {
	mode, err := a.st.Mode(ctx)
	if err != nil {
		return err
	}
	if mode == "webhook" {
		// Telegram refuses getUpdates while a webhook is set.
		if err := a.api.DeleteWebhook(ctx); err != nil {
			return fmt.Errorf("deleting the telegram webhook: %w", err)
		}
	}
	if mode != "polling" {
		if err := a.st.SetMode(context.WithoutCancel(ctx), "polling"); err != nil {
			return err
		}
	}
	offset, err := a.st.Offset(ctx)
	if err != nil {
		return err
	}
	for ctx.Err() == nil {
		ups, err := a.api.GetUpdates(ctx, offset, a.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ae *APIError
			if errors.As(err, &ae) && ae.Code == http.StatusConflict {
				// A webhook set elsewhere (or by an older run): take over.
				if derr := a.api.DeleteWebhook(ctx); derr == nil {
					continue
				}
			}
			if wait, ok := Flooded(err); ok {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
				continue
			}
			return fmt.Errorf("telegram polling: %w", err)
		}
		for _, u := range ups {
			if u.UpdateID < offset {
				continue
			}
			a.deliver(ctx, h, u)
			offset = u.UpdateID + 1
			// Stored even when shutdown began during the update: it was handled.
			if err := a.st.SetOffset(context.WithoutCancel(ctx), offset); err != nil {
				return err
			}
		}
	}
	return nil
}

// deliver converts one Bot API update for the relay.
func (a *Adapter) deliver(ctx context.Context, h channels.Handler, u Update) {
	id := strconv.FormatInt(u.UpdateID, 10)
	switch {
	case u.CallbackQuery != nil:
		q := u.CallbackQuery
		act := &channels.Action{Ack: func(ctx context.Context, notice string) {
			if err := a.api.AnswerCallbackQuery(ctx, q.ID, notice); err != nil {
				a.log.Warn("answering a telegram button press", "err", err)
			}
		}}
		conv := ""
		if q.Message != nil {
			conv = strconv.FormatInt(q.Message.Chat.ID, 10)
			act.Ref = ref(q.Message.Chat.ID, q.Message.MessageID)
		}
		act.ApprovalID, act.Verb = parseCallback(q.Data)
		h(ctx, channels.Update{ID: id, Conv: conv, Sender: strconv.FormatInt(q.From.ID, 10), SenderName: q.From.Username, Private: true, Action: act})
	case u.Message != nil:
		m := u.Message
		if m.From == nil || m.From.IsBot {
			return
		}
		name := m.From.FirstName
		if name == "" {
			name = m.From.Username
		}
		text := m.Text
		if text == "" {
			text = m.Caption
		}
		up := channels.Update{ID: id, Conv: strconv.FormatInt(m.Chat.ID, 10), Sender: strconv.FormatInt(m.From.ID, 10), SenderName: name,
			Private: m.Chat.Type == "" || m.Chat.Type == "private", Text: text, Attachments: a.attachments(m)}
		if media := m.Voice; media != nil || m.Audio != nil {
			if media == nil {
				media = m.Audio
			}
			mime := media.MimeType
			if mime == "" && m.Voice != nil {
				mime = "audio/ogg" // voice notes are Opus in Ogg
			}
			ext := speech.FormatForMIME(mime)
			up.Voice = &channels.Voice{Size: media.FileSize, Mime: mime, Filename: "voice." + ext, Fetch: a.fetcher(media.FileID)}
		}
		h(ctx, up)
	}
}

// attachments maps a message's files onto the relay's: a document, the
// largest size of a photo, a video, an animation (not again as the
// document Telegram also sends for it), a round video note.
func (a *Adapter) attachments(m *Message) []channels.Attachment {
	var out []channels.Attachment
	add := func(f *Media, name, mime string) {
		if f == nil || f.FileID == "" {
			return
		}
		if f.FileName != "" {
			name = f.FileName
		}
		if f.MimeType != "" {
			mime = f.MimeType
		}
		out = append(out, channels.Attachment{Name: name, Mime: mime, Size: f.FileSize, Fetch: a.fileFetcher(f.FileID)})
	}
	if m.Animation != nil {
		add(m.Animation, "animation", "video/mp4")
	} else {
		add(m.Document, "", "")
	}
	if best := largestPhoto(m.Photo); best != nil {
		add(&Media{FileID: best.FileID, FileSize: best.FileSize}, "photo", "image/jpeg")
	}
	add(m.Video, "video", "video/mp4")
	add(m.VideoNote, "video-note", "video/mp4")
	return out
}

// largestPhoto picks the biggest of a photo's sizes (Telegram lists them
// smallest first, but the order is not promised).
func largestPhoto(sizes []PhotoSize) *PhotoSize {
	var best *PhotoSize
	for i := range sizes {
		s := &sizes[i]
		if s.FileID == "" {
			continue
		}
		if best == nil || s.Width*s.Height > best.Width*best.Height ||
			(s.Width*s.Height == best.Width*best.Height && s.FileSize > best.FileSize) {
			best = s
		}
	}
	return best
}

// botDownloadLimit is the most the Bot API lets a bot download.
const botDownloadLimit = 20 << 20

// fileFetcher downloads an attachment with getFile, within the relay's
// limit.
func (a *Adapter) fileFetcher(fileID string) func(context.Context, int64) ([]byte, error) {
	return func(ctx context.Context, limit int64) ([]byte, error) {
		f, err := a.api.GetFile(ctx, fileID)
		if err != nil {
			var ae *APIError
			if errors.As(err, &ae) && strings.Contains(strings.ToLower(ae.Description), "too big") {
				return nil, &channels.RefusedError{Reason: fmt.Sprintf("Telegram lets bots download files up to %d MB; share a link to it instead", botDownloadLimit>>20), Err: err}
			}
			return nil, err
		}
		if f.FileSize > limit {
			return nil, fmt.Errorf("%w: %d bytes", channels.ErrTooLarge, f.FileSize)
		}
		data, err := a.api.Download(ctx, f.FilePath, limit)
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%w: %w", channels.ErrTooLarge, err)
		}
		return data, err
	}
}

func (a *Adapter) fetcher(fileID string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		f, err := a.api.GetFile(ctx, fileID)
		if err != nil {
			return nil, err
		}
		if f.FileSize > a.cfg.MaxVoiceBytes {
			return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, f.FileSize)
		}
		return a.api.Download(ctx, f.FilePath, a.cfg.MaxVoiceBytes)
	}
}

// ref is the relay's reference of a message: Telegram numbers messages
// per chat.
func ref(chat, msg int64) string { return fmt.Sprintf("%d:%d", chat, msg) }

func parseRef(conv, r string) (int64, int64, error) {
	c, m, ok := strings.Cut(r, ":")
	chat, err1 := strconv.ParseInt(c, 10, 64)
	msg, err2 := strconv.ParseInt(m, 10, 64)
	if !ok || err1 != nil || err2 != nil || c != conv {
		return 0, 0, channels.Permanent(fmt.Errorf("telegram: %q is not a message of chat %s", r, conv))
	}
	return chat, msg, nil
}

// Callback data is "a:<approval id>:<action>"; Telegram allows 64 bytes.
const (
	actApprove = "ok"
	actDeny    = "no"
	actAllow10 = "m10"
)

// parseCallback reads a button's data; a malformed one gives no verb (the
// relay refuses it and audits why).
func parseCallback(data string) (string, channels.Verb) {
	parts := strings.Split(data, ":")
	if len(parts) != 3 || parts[0] != "a" || parts[1] == "" {
		return "", ""
	}
	switch parts[2] {
	case actApprove:
		return parts[1], channels.VerbApprove
	case actDeny:
		return parts[1], channels.VerbDeny
	case actAllow10:
		return parts[1], channels.VerbAllow10m
	}
	return parts[1], channels.Verb("unknown:" + Truncate(parts[2], 10))
}

func chatID(conv string) (int64, error) {
	id, err := strconv.ParseInt(conv, 10, 64)
	if err != nil {
		return 0, channels.Permanent(fmt.Errorf("telegram: conversation %q is not a chat id", conv))
	}
	return id, nil
}

// keyboard renders a prompt's buttons.
func (a *Adapter) keyboard(p *channels.Prompt, conv string) *InlineKeyboard {
	if p == nil || p.Closed {
		return nil
	}
	if p.Question {
		return &InlineKeyboard{Rows: [][]Button{{{Text: "Decline to answer", CallbackData: "a:" + p.ApprovalID + ":" + actDeny}}}}
	}
	rows := [][]Button{
		{{Text: "✅ Approve", CallbackData: "a:" + p.ApprovalID + ":" + actApprove}, {Text: "❌ Deny", CallbackData: "a:" + p.ApprovalID + ":" + actDeny}},
		{{Text: "⏱ Allow 10 min", CallbackData: "a:" + p.ApprovalID + ":" + actAllow10}},
	}
	if a.cfg.PublicURL != "" && p.ChatID != "" {
		rows = append(rows, []Button{{Text: "✏️ Edit in Hestia", URL: strings.TrimSuffix(a.cfg.PublicURL, "/") + "/chats/" + p.ChatID}})
	}
	return &InlineKeyboard{Rows: rows}
}

// Send posts rendered Markdown. Telegram has no idempotency key: the
// relay resends a message left in doubt by a crash.
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	chat, err := chatID(conv)
	if err != nil {
		return "", err
	}
	msg, err := a.api.SendMessage(ctx, chat, Render(Truncate(m.Text, chunkRunes)), a.keyboard(m.Prompt, conv))
	if err != nil {
		return "", classify(err)
	}
	return ref(chat, msg.MessageID), nil
}

// Edit replaces a message's text and buttons; an edit to the same text is
// not an error. Flood control is returned to the caller, not waited out.
func (a *Adapter) Edit(ctx context.Context, conv, r string, m channels.Outgoing) error {
	chat, msg, err := parseRef(conv, r)
	if err != nil {
		return err
	}
	return classify(a.api.TryEditMessageText(ctx, chat, msg, Render(Truncate(m.Text, chunkRunes)), a.keyboard(m.Prompt, conv)))
}

// SendVoice posts audio: Ogg/Opus as a voice note, other formats as an
// audio file.
func (a *Adapter) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	chat, err := chatID(conv)
	if err != nil {
		return err
	}
	format := speech.Sniff(audio)
	asAudio := format != "ogg"
	if format == "" {
		format = "bin"
	}
	_, err = a.api.SendVoice(ctx, chat, audio, "reply."+format, mime, asAudio)
	return classify(err)
}

// classify maps Bot API errors onto the relay's retry rules: flood control
// waits, a request Telegram refuses (400, a bot the user blocked: 403) is
// not retried, anything else is.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if wait, ok := Flooded(err); ok {
		return &channels.RetryAfterError{Err: err, After: wait}
	}
	var ae *APIError
	if errors.As(err, &ae) && (ae.Code == http.StatusBadRequest || ae.Code == http.StatusForbidden) {
		return channels.Permanent(err)
	}
	return err
}
