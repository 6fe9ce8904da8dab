package whatsapp

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the raw
// body keyed by the app secret.
const SignatureHeader = "X-Hub-Signature-256"

// maxDelivery bounds one delivery; Meta batches at most a few hundred
// kilobytes of changes.
const maxDelivery = 4 << 20

// maxAge drops messages older than Meta ever redelivers (it retries a
// failed delivery for up to seven days): a replayed old delivery does not
// become a new turn even where the relay's dedupe has forgotten its id.
const maxAge = 7*24*time.Hour + time.Hour

var challengeRe = lazyre.New(`^[A-Za-z0-9_.\-]{1,256}$`)

// serveVerify answers Meta's subscription handshake: GET with hub.mode
// "subscribe", the verify token the owner typed into the app's webhook
// settings, and a challenge to echo.
func (a *Adapter) serveVerify(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	// Hashing first makes the comparison's time independent of lengths.
	got, want := sha256.Sum256([]byte(q.Get("hub.verify_token"))), sha256.Sum256([]byte(a.cfg.VerifyToken))
	if q.Get("hub.mode") != "subscribe" || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		a.log.Warn("whatsapp webhook handshake with a wrong verify token refused", "remote", r.RemoteAddr)
		httpjson.Error(w, http.StatusForbidden, "forbidden", "the verify token does not match")
		return
	}
	ch := q.Get("hub.challenge")
	if !challengeRe.MatchString(ch) {
		// Echoed as the body: never reflect arbitrary text.
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "hub.challenge is missing or not a plain token")
		return
	}
	a.log.Info("whatsapp webhook subscription verified")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, ch)
}

// validSignature checks header against the HMAC-SHA256 of body in
// constant time.
func validSignature(secret, header string, body []byte) bool {
	hexSig, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil || len(sig) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil))
}

// serveDelivery authenticates a delivery, parses it and hands its
// messages to the relay. The answer comes once they are handled, or after
// AckWait at the latest (Meta retries deliveries not answered in time;
// the relay deduplicates them by message id).
func (a *Adapter) serveDelivery(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDelivery))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpjson.Error(w, http.StatusRequestEntityTooLarge, "too_large", "the delivery is larger than 4 MB")
			return
		}
		httpjson.Error(w, http.StatusBadRequest, "bad_request", "the delivery could not be read")
		return
	}
	if !validSignature(a.cfg.AppSecret, r.Header.Get(SignatureHeader), body) {
		a.log.Warn("whatsapp delivery with a missing or wrong signature refused", "remote", r.RemoteAddr, "bytes", len(body))
		httpjson.Error(w, http.StatusUnauthorized, "unauthorized", "a valid "+SignatureHeader+" is required")
		return
	}
	d, err := parseDelivery(body, a.cfg.PhoneNumberID)
	if err != nil {
		a.log.Warn("whatsapp delivery malformed", "err", err)
		httpjson.Error(w, http.StatusBadRequest, "bad_request", err.Error())
		return
	}
	for _, s := range d.skipped {
		a.log.Info("whatsapp message skipped", "reason", s)
	}
	for _, e := range d.errors {
		a.log.Warn("whatsapp delivery reports an error", "code", e.Code, "title", e.Title, "details", e.Details())
	}
	a.noteStatuses(d.statuses)
	now := a.cfg.Now()
	var ups []channels.Update
	for _, m := range d.messages {
		if !m.at.IsZero() && now.Sub(m.at) > maxAge {
			a.log.Warn("whatsapp message older than Meta redelivers dropped", "id", m.id, "sent", m.at)
			continue
		}
		if m.reaction && !a.prompts.has(m.action.ref) {
			// 👍 is also how people thank on WhatsApp: only a reaction to
			// a prompt sent since start is an approval (buttons and codes
			// work on older ones).
			a.log.Debug("whatsapp reaction to a message that is not an open prompt ignored", "id", m.id)
			continue
		}
		if m.opensWindow {
			at := m.at
			if at.IsZero() || at.After(now) {
				at = now
			}
			a.peers.inbound(m.from, at)
		}
		ups = append(ups, a.update(m))
	}
	if len(ups) == 0 {
		httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
		return
	}
	a.mu.Lock()
	rcv := a.recv
	if rcv != nil {
		a.inflight.Add(1)
	}
	a.mu.Unlock()
	if rcv == nil || rcv.ctx.Err() != nil {
		if rcv != nil {
			a.inflight.Done()
		}
		// Meta keeps the delivery and retries it later.
		httpjson.Error(w, http.StatusServiceUnavailable, "not_receiving", "the WhatsApp channel is not receiving")
		return
	}
	done := make(chan struct{})
	go func() {
		defer a.inflight.Done()
		defer close(done)
		a.handle(rcv, ups)
	}()
	t := time.NewTimer(a.cfg.AckWait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		a.log.Info("whatsapp delivery answered before the relay finished with it", "messages", len(ups))
	case <-r.Context().Done():
	}
	httpjson.Write(w, http.StatusOK, map[string]bool{"ok": true})
}

// handle gives ups to the handler one at a time, under Receive's context
// (the delivery's request ends before a slow turn does).
func (a *Adapter) handle(rcv *receiver, ups []channels.Update) {
	a.handleMu.Lock()
	defer a.handleMu.Unlock()
	for _, u := range ups {
		if rcv.ctx.Err() != nil {
			return
		}
		func() {
			defer func() {
				if p := recover(); p != nil {
					a.log.Error("whatsapp update handler panicked", "id", u.ID, "panic", fmt.Sprint(p))
				}
			}()
			rcv.h(rcv.ctx, u)
		}()
	}
}

// noteStatuses logs delivery reports and remembers a window they show
// closed (the API often accepts a message and fails it afterwards).
func (a *Adapter) noteStatuses(sts []status) {
	for _, s := range sts {
		if s.Status != "failed" {
			a.log.Debug("whatsapp message status", "id", s.ID, "status", s.Status)
			continue
		}
		for _, e := range s.Errors {
			if e.Code == codeReengagement && s.RecipientID != "" {
				a.peers.markClosed(s.RecipientID)
			}
			a.log.Warn("whatsapp message failed after it was accepted", "id", s.ID, "recipient", s.RecipientID, "code", e.Code, "title", e.Title, "details", e.Details())
		}
		if len(s.Errors) == 0 {
			a.log.Warn("whatsapp message failed after it was accepted", "id", s.ID, "recipient", s.RecipientID)
		}
	}
}

// update turns a parsed message into the relay's Update.
func (a *Adapter) update(m inbound) channels.Update {
	u := channels.Update{ID: m.id, Conv: m.from, Sender: m.from, SenderName: m.name, Private: true, Text: m.text}
	if m.voice != nil {
		id, mime := m.voice.ID, m.voice.MimeType
		u.Voice = &channels.Voice{
			Size:     m.voice.FileSize,
			Mime:     mime,
			Filename: "voice." + audioExt(mime),
			Fetch: func(ctx context.Context) ([]byte, error) {
				return a.api.fetchMedia(ctx, "fetching a voice note", id, a.cfg.MaxVoiceBytes)
			},
		}
	}
	if f := m.file; f != nil {
		// Images and videos come without a name; the relay names them by
		// their content.
		id, op := f.ID, "fetching a"+map[bool]string{true: "n", false: ""}[m.fileKind == "image"]+" "+m.fileKind
		u.Attachments = []channels.Attachment{{Name: f.Filename, Mime: f.MimeType, Size: f.FileSize,
			Fetch: func(ctx context.Context, limit int64) ([]byte, error) { return a.api.fetchMedia(ctx, op, id, limit) }}}
	}
	if m.action != nil {
		act := *m.action
		to := m.from
		u.Action = &channels.Action{
			Ref:        act.ref,
			ApprovalID: act.approvalID,
			Verb:       act.verb,
			Ack: func(ctx context.Context, notice string) {
				a.ack(ctx, to, act.replyTo, notice)
			},
		}
	}
	return u
}

// audioExt names a file extension for an audio MIME type.
func audioExt(mime string) string {
	base, _, _ := strings.Cut(strings.ToLower(mime), ";")
	switch strings.TrimSpace(base) {
	case "audio/ogg", "audio/opus":
		return "ogg"
	case "audio/mpeg", "audio/mp3":
		return "mp3"
	case "audio/mp4", "audio/m4a", "audio/x-m4a":
		return "m4a"
	case "audio/aac":
		return "aac"
	case "audio/amr":
		return "amr"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return "wav"
	case "audio/webm":
		return "webm"
	}
	return "bin"
}

// The wire shapes of a delivery (the "messages" webhook field).

type delivery struct {
	Object string `json:"object"`
	Entry  []struct {
		ID      string `json:"id"`
		Changes []struct {
			Field string      `json:"field"`
			Value changeValue `json:"value"`
		} `json:"changes"`
	} `json:"entry"`
}

type changeValue struct {
	MessagingProduct string `json:"messaging_product"`
	Metadata         struct {
		DisplayPhoneNumber string `json:"display_phone_number"`
		PhoneNumberID      string `json:"phone_number_id"`
	} `json:"metadata"`
	Contacts []struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WaID string `json:"wa_id"`
	} `json:"contacts"`
	Messages []message   `json:"messages"`
	Statuses []status    `json:"statuses"`
	Errors   []hookError `json:"errors"`
}

type message struct {
	From      string     `json:"from"`
	ID        string     `json:"id"`
	Timestamp flexString `json:"timestamp"`
	Type      string     `json:"type"`
	Context   *struct {
		From string `json:"from"`
		ID   string `json:"id"`
	} `json:"context"`
	Text *struct {
		Body string `json:"body"`
	} `json:"text"`
	Interactive *struct {
		Type        string `json:"type"`
		ButtonReply *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"button_reply"`
		ListReply *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"list_reply"`
	} `json:"interactive"`
	Button *struct {
		Payload string `json:"payload"`
		Text    string `json:"text"`
	} `json:"button"`
	Reaction *struct {
		MessageID string `json:"message_id"`
		Emoji     string `json:"emoji"`
	} `json:"reaction"`
	Audio    *media      `json:"audio"`
	Image    *media      `json:"image"`
	Video    *media      `json:"video"`
	Document *media      `json:"document"`
	Sticker  *media      `json:"sticker"`
	Errors   []hookError `json:"errors"`
}

type media struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type"`
	SHA256   string `json:"sha256"`
	FileSize int64  `json:"file_size"`
	Voice    bool   `json:"voice"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
}

type status struct {
	ID          string      `json:"id"`
	Status      string      `json:"status"`
	Timestamp   flexString  `json:"timestamp"`
	RecipientID string      `json:"recipient_id"`
	Errors      []hookError `json:"errors"`
}

type hookError struct {
	Code      int    `json:"code"`
	Title     string `json:"title"`
	Message   string `json:"message"`
	ErrorData struct {
		Details string `json:"details"`
	} `json:"error_data"`
}

// Details is the most specific text the error carries.
func (e hookError) Details() string {
	if e.ErrorData.Details != "" {
		return e.ErrorData.Details
	}
	return e.Message
}

// flexString accepts a JSON string or number (Meta's timestamps are
// strings; some examples and proxies send numbers).
type flexString string

func (f *flexString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("not a string or number: %w", err)
	}
	*f = flexString(n.String())
	return nil
}

// parsed is what a delivery holds for this number.
type parsed struct {
	messages []inbound
	statuses []status
	errors   []hookError
	skipped  []string // why a message was left out, for the log
}

// inbound is one message, checked and ready to become an Update.
type inbound struct {
	id, from, name string
	at             time.Time // Meta's timestamp; zero when absent
	text           string
	voice          *media
	file           *media // an image, video or document
	fileKind       string // its message type, to name a file without a name
	action         *pressed
	// opensWindow: the message (re)opens the 24-hour window.
	opensWindow bool
	// reaction: the action is an emoji reaction, not a button press.
	reaction bool
}

// pressed is a button press or reaction on a message Hestia sent.
type pressed struct {
	ref        string // the message acted on (Send's ref)
	approvalID string
	verb       channels.Verb
	replyTo    string // the message an acknowledgement quotes
}

// Codes of the Cloud API that this package acts on.
const (
	codeReengagement  = 131047 // more than 24 hours since the person wrote
	codeUndeliverable = 131026
)

// parseDelivery decodes a delivery and keeps the messages and statuses of
// phoneID. It fails only when the body is not a WhatsApp delivery at all;
// a message it cannot use is skipped with a reason.
func parseDelivery(body []byte, phoneID string) (parsed, error) {
	var p parsed
	var d delivery
	if err := json.Unmarshal(body, &d); err != nil {
		return p, fmt.Errorf("the delivery is not a JSON webhook payload: %s", jsonProblem(err))
	}
	if d.Object != "whatsapp_business_account" {
		return p, fmt.Errorf("the delivery's object is %q, not whatsapp_business_account", Truncate(d.Object, 40))
	}
	for _, e := range d.Entry {
		for _, c := range e.Changes {
			// Other fields (message echoes of the business app, template
			// and account updates) carry nothing for the relay; echoes
			// are the business's own messages.
			if c.Field != "messages" {
				continue
			}
			v := c.Value
			if v.Metadata.PhoneNumberID != phoneID {
				if len(v.Messages) > 0 {
					p.skipped = append(p.skipped, fmt.Sprintf("%d message(s) for another phone number id", len(v.Messages)))
				}
				continue
			}
			p.statuses = append(p.statuses, v.Statuses...)
			p.errors = append(p.errors, v.Errors...)
			names := map[string]string{}
			for _, ct := range v.Contacts {
				names[ct.WaID] = ct.Profile.Name
			}
			own := digits(v.Metadata.DisplayPhoneNumber)
			for _, m := range v.Messages {
				in, why := parseMessage(m, own)
				if why != "" {
					p.skipped = append(p.skipped, why)
					continue
				}
				in.name = names[in.from]
				p.messages = append(p.messages, in)
			}
		}
	}
	return p, nil
}

// jsonProblem says what is wrong with JSON without quoting the input.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	case errors.As(err, &te):
		return fmt.Sprintf("%s is a JSON %s", te.Field, te.Value)
	}
	return "unreadable JSON"
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// maxID bounds ids taken from a delivery (wamids are about 60 bytes).
const maxID = 256

func parseMessage(m message, own string) (inbound, string) {
	if m.ID == "" || len(m.ID) > maxID || m.From == "" || len(m.From) > 64 {
		return inbound{}, "a message without a usable id or sender"
	}
	if own != "" && digits(m.From) == own {
		return inbound{}, "the business number's own message " + m.ID
	}
	in := inbound{id: m.ID, from: m.From, opensWindow: true}
	if ts, err := strconv.ParseInt(string(m.Timestamp), 10, 64); err == nil && ts > 0 {
		in.at = time.Unix(ts, 0)
	}
	ctxID := ""
	if m.Context != nil && len(m.Context.ID) <= maxID {
		ctxID = m.Context.ID
	}
	switch m.Type {
	case "text":
		if m.Text == nil || strings.TrimSpace(m.Text.Body) == "" {
			return inbound{}, "an empty text message " + m.ID
		}
		in.text = m.Text.Body
	case "interactive":
		if m.Interactive == nil {
			return inbound{}, "an interactive message without its reply " + m.ID
		}
		var id, title string
		switch {
		case m.Interactive.ButtonReply != nil:
			id, title = m.Interactive.ButtonReply.ID, m.Interactive.ButtonReply.Title
		case m.Interactive.ListReply != nil:
			id, title = m.Interactive.ListReply.ID, m.Interactive.ListReply.Title
		default:
			return inbound{}, "an interactive reply of type " + Truncate(m.Interactive.Type, 30) + " " + m.ID
		}
		if approvalID, verb, ok := parseButtonID(id); ok {
			if ctxID == "" {
				return inbound{}, "a button press that names no message " + m.ID
			}
			in.action = &pressed{ref: ctxID, approvalID: approvalID, verb: verb, replyTo: m.ID}
		} else if strings.TrimSpace(title) != "" {
			in.text = title
		} else {
			return inbound{}, "a button press without a payload or title " + m.ID
		}
	case "button":
		// A quick-reply button of a template: its payload was set when
		// the template was sent, which Hestia does without payloads.
		if m.Button == nil {
			return inbound{}, "a template button press without its button " + m.ID
		}
		if approvalID, verb, ok := parseButtonID(m.Button.Payload); ok && ctxID != "" {
			in.action = &pressed{ref: ctxID, approvalID: approvalID, verb: verb, replyTo: m.ID}
		} else if strings.TrimSpace(m.Button.Text) != "" {
			in.text = m.Button.Text
		} else {
			return inbound{}, "a template button press without text " + m.ID
		}
	case "reaction":
		if m.Reaction == nil || m.Reaction.MessageID == "" || len(m.Reaction.MessageID) > maxID {
			return inbound{}, "a reaction to no message " + m.ID
		}
		verb, ok := reactionVerb(m.Reaction.Emoji)
		if !ok {
			return inbound{}, "a reaction that is not 👍 or 👎 (or was removed) " + m.ID
		}
		in.action = &pressed{ref: m.Reaction.MessageID, verb: verb, replyTo: m.Reaction.MessageID}
		in.reaction = true
		// Whether a reaction opens the window is not documented: leave
		// the window as it was and let the API decide.
		in.opensWindow = false
	case "audio":
		if m.Audio == nil || m.Audio.ID == "" || len(m.Audio.ID) > maxID {
			return inbound{}, "an audio message without a media id " + m.ID
		}
		in.voice = m.Audio
	case "image", "video", "document":
		md := map[string]*media{"image": m.Image, "video": m.Video, "document": m.Document}[m.Type]
		if md == nil || md.ID == "" || len(md.ID) > maxID {
			return inbound{}, "a" + map[bool]string{true: "n", false: ""}[m.Type == "image"] + " " + m.Type + " message without a media id " + m.ID
		}
		in.file, in.fileKind, in.text = md, m.Type, md.Caption
	case "sticker", "location", "contacts":
		// Not files the assistant can read: say so in the turn rather
		// than drop it, so the assistant can answer that it cannot see it.
		in.text = "[" + m.Type + " attachment: not supported on WhatsApp]"
	default:
		// "unsupported", "unknown", "system" (a number change) and
		// request_welcome carry no text for a turn.
		why := "a message of type " + Truncate(m.Type, 30) + " " + m.ID
		for _, e := range m.Errors {
			why += fmt.Sprintf(" (error %d: %s)", e.Code, Truncate(e.Details(), 200))
		}
		return inbound{}, why
	}
	return in, ""
}

// parseButtonID reads "a:<approval id>:<verb>".
func parseButtonID(id string) (string, channels.Verb, bool) {
	rest, ok := strings.CutPrefix(id, "a:")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	switch v := channels.Verb(rest[i+1:]); v {
	case channels.VerbApprove, channels.VerbDeny, channels.VerbAllow10m:
		return rest[:i], v, true
	}
	return "", "", false
}

// reactionVerb maps 👍 and 👎 (any skin tone) to approve and deny.
func reactionVerb(emoji string) (channels.Verb, bool) {
	base := strings.Map(func(r rune) rune {
		if (r >= 0x1F3FB && r <= 0x1F3FF) || r == 0xFE0F {
			return -1 // skin tone modifiers, emoji presentation selector
		}
		return r
	}, emoji)
	switch base {
	case "👍":
		return channels.VerbApprove, true
	case "👎":
		return channels.VerbDeny, true
	}
	return "", false
}
