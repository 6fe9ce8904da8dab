// Package channels is the layer every messaging channel (Slack, Discord,
// WhatsApp, Matrix, Signal, e-mail, …) plugs into. A channel package only
// adapts one platform to the small Platform interface: receive updates,
// send and edit text, render an approval prompt natively. Everything that
// must behave the same in every app lives here, once:
//
//   - who may talk to Hestia: the owner's identities, trusted contacts with
//     narrower scopes (their messages start tainted turns), everyone else
//     refused once with a reply and audited every time;
//   - one Hestia chat per platform conversation (`/new` starts another);
//   - inbound updates handled once, deduplicated by the platform's id
//     across restarts;
//   - a durable outbox: every outbound message and approval prompt is
//     written before it is sent and retried with backoff until the
//     platform confirms, across restarts; a send cut off between the
//     platform's acceptance and our record of it is resent under the same
//     idempotency key where the platform honours one, looked up where the
//     platform can search its history, and resent otherwise (a possible
//     duplicate is preferred to a lost reply, and logged);
//   - voice notes transcribed through the stt tier, and every other file
//     (a photo, a PDF, a document) checked against the size limits,
//     fetched, sniffed and saved owner-only in the channel's inbox
//     (DATA/inbox/CHANNEL/YYYY-MM-DD/NNN-name.ext), named in the turn as
//     "[attached: PATH — TYPE, SIZE]" for the assistant's read tools; the
//     inbox is readable to those tools and refused to every write
//     (internal/pathpolicy), so a received file is never a place where
//     written files run code. Received files are the user's data: kept,
//     and their total reported by hestia doctor;
//   - streaming by edits where the platform allows them;
//   - approvals: native buttons or reactions where the platform has them,
//     and on every platform a short request code answered as
//     "CODE approve" / "CODE deny"; the first decision wins across every
//     surface because all of them decide through the one approval broker.
//
// Tools are never called here: a message becomes an agent turn, and the
// agent calls tools through authority.Invoke with the channel origin.
package channels

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Platform adapts one messaging service. Implementations live in their
// own packages (internal/channels/slack, …) and hold no Hestia state: the
// relay owns mapping, identity, deduplication, the outbox and approvals.
type Platform interface {
	// Name is the channel's configured name ("slack", "work-slack"); it
	// keys every stored row, so it must stay stable.
	Name() string
	// Kind is the platform ("slack", "discord", "whatsapp", "matrix",
	// "signal", "email", "telegram").
	Kind() string
	// Limits describes what the platform can do.
	Limits() Limits
	// Receive delivers updates to h until ctx ends (polling, a gateway
	// connection, a socket); webhook-only platforms deliver from their
	// Routes and just wait for ctx here. An error is logged and Receive
	// is called again after a backoff; it returns nil at shutdown.
	Receive(ctx context.Context, h Handler) error
	// Send posts m to a conversation and returns the platform's reference
	// to the posted message (used to edit it and to match reactions and
	// button presses against it). m.Key is stable across retries: a
	// platform with idempotent sends (Limits.Idempotent) must pass it so a
	// repeat posts nothing new.
	Send(ctx context.Context, conv string, m Outgoing) (ref string, err error)
	// Edit replaces the text (and prompt) of a message sent before;
	// ErrUnsupported when the platform cannot edit.
	Edit(ctx context.Context, conv, ref string, m Outgoing) error
}

// Handler receives one update. It returns after the update is handled
// (a turn submitted, an approval decided, a refusal queued); a platform
// that must acknowledge deliveries does so after it returns.
type Handler func(ctx context.Context, u Update)

// Router is implemented by platforms that receive over HTTP (webhooks):
// the daemon serves these routes publicly (no Hestia token), so each
// handler must authenticate the platform itself (a signature, a verify
// token) before calling the Handler it was given by Receive.
type Router interface {
	Routes() []Route
}

// Route is one public HTTP route, e.g. "POST /channels/whatsapp/webhook".
type Route struct {
	Pattern string
	Handler http.Handler
}

// Finder is implemented by platforms whose history can be searched for a
// message carrying a key (Slack message metadata): after a crash between
// sending and recording, the relay asks before sending again.
type Finder interface {
	Find(ctx context.Context, conv, key string) (ref string, found bool, err error)
}

// Checker is implemented by platforms that can prove their credentials
// work without sending anything (the Settings connection test and the
// doctor): it returns who the bot is there ("@hestia_bot", "U0BOT in
// workspace Acme").
type Checker interface {
	Check(ctx context.Context) (string, error)
}

// VoiceSender is implemented by platforms that can post audio (spoken
// replies through the tts tier).
type VoiceSender interface {
	SendVoice(ctx context.Context, conv string, audio []byte, mime string) error
}

// Limits says what a platform supports.
type Limits struct {
	// MaxText is the most characters (runes) one message may hold after
	// formatting; the relay splits longer replies below it.
	MaxText int
	// Edit: sent messages can be edited (streaming by edits, withdrawing
	// an approval's buttons).
	Edit bool
	// EditInterval is the least time between two edits of one streaming
	// message (rate limits); zero uses DefaultEditInterval.
	EditInterval time.Duration
	// Buttons: approval prompts carry native buttons whose presses arrive
	// as Update.Action.
	Buttons bool
	// Reactions: approvals can be answered by reacting to the prompt
	// (👍 approve, 👎 deny), arriving as Update.Action.
	Reactions bool
	// Idempotent: Send with an Outgoing.Key already used posts nothing new
	// (Matrix transaction ids, Discord nonces).
	Idempotent bool
}

// Update is one inbound event from the platform.
type Update struct {
	// ID is the platform's unique id for this delivery (message id, event
	// id, update id); updates already handled are skipped. Required.
	ID string
	// Conv is the conversation to answer in (a DM channel, a room, a
	// thread "channel/thread_ts", an e-mail thread).
	Conv string
	// Sender is the platform's stable id of the person (user id, phone
	// number, MXID, address), matched against the channel's allow-list.
	Sender string
	// SenderName is a display name for chat titles and the devices list.
	SenderName string
	// Unverified says the platform could not prove the sender is who the
	// message claims (an e-mail without a DKIM/DMARC pass): the message is
	// refused and audited like a stranger's but never answered, since the
	// answer would go to whoever was impersonated.
	Unverified bool
	// Private says nobody but the sender and the bot can read the
	// conversation; the relay answers elsewhere only with a refusal.
	Private bool
	// Text is the message text (empty for a pure action or voice note;
	// a file's caption).
	Text string
	// Voice is a voice note or audio attachment, transcribed by the relay.
	Voice *Voice
	// Attachments are the other files of the message (photos, PDFs,
	// documents, videos): the relay saves each in the channel's inbox
	// and names it in the turn, so the assistant reads it with its file
	// and document tools.
	Attachments []Attachment
	// Action is a button press or reaction on a message the relay sent.
	Action *Action
	// ReplyTo carries platform data the reply needs (an e-mail's
	// Message-ID and subject); the relay passes it back in
	// Outgoing.ReplyTo of the turn's replies. Opaque to the relay.
	ReplyTo string
}

// Voice is an audio attachment, fetched only if the relay accepts it.
type Voice struct {
	Size     int64 // bytes; 0 when unknown
	Mime     string
	Filename string
	Fetch    func(ctx context.Context) ([]byte, error)
}

// Action is a press of an approval button or a reaction to a prompt.
type Action struct {
	// Ref is the platform reference of the message acted on (as Send
	// returned it). Required.
	Ref string
	// ApprovalID is the approval the button carried in its payload, when
	// the platform round-trips one; it must match the prompt sent as Ref.
	ApprovalID string
	// Verb is what the person chose.
	Verb Verb
	// Ack, when set, answers the press on the platform (a toast, an
	// ephemeral reply); the relay calls it once with a short notice.
	Ack func(ctx context.Context, notice string)
}

// Verb is an approval choice.
type Verb string

// Approval choices. Platforms map their buttons and reactions onto these.
const (
	VerbApprove  Verb = "approve"
	VerbDeny     Verb = "deny"
	VerbAllow10m Verb = "allow_10m"
)

// Outgoing is one message to post.
type Outgoing struct {
	// Key is unique per outbound message and stable across retries.
	Key string
	// Text is Markdown; the platform renders it in its own format.
	Text string
	// Prompt, when set, makes the message an approval or question prompt:
	// the platform adds its buttons (Limits.Buttons) or leaves the text,
	// which already ends with the request code instructions.
	Prompt *Prompt
	// ReplyTo is the Update.ReplyTo of the message being answered.
	ReplyTo string
}

// Prompt is what a platform needs to render approval buttons.
type Prompt struct {
	ApprovalID string
	// ChatID is the Hestia chat, for an "open in Hestia" button.
	ChatID string
	// Code is the short request code shown in the text ("K7QF").
	Code string
	// Question: a question card (Deny is "decline to answer"; the answer
	// is the next message) rather than an approval.
	Question bool
	// Closed: the prompt was decided; render it without buttons.
	Closed bool
}

// ErrUnsupported is returned by Edit on platforms that cannot edit.
var ErrUnsupported = errors.New("not supported by this platform")

// PermanentError marks a send that must not be retried (a message the
// platform rejects as invalid, a recipient that does not exist, a window
// that has closed). The relay records it as failed and tells the user
// where it can.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// RetryAfterError asks the relay to wait before the next attempt (HTTP 429
// Retry-After, Telegram retry_after, Slack rate limits).
type RetryAfterError struct {
	Err   error
	After time.Duration
}

func (e *RetryAfterError) Error() string { return e.Err.Error() }
func (e *RetryAfterError) Unwrap() error { return e.Err }

// DefaultEditInterval spaces streaming edits when a platform sets none.
const DefaultEditInterval = 1500 * time.Millisecond
