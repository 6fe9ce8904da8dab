package signal

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// The shapes below are what signal-cli writes in a "receive"
// notification (its JsonMessageEnvelope and friends); only the fields
// the channel reads are declared.

type notification struct {
	Envelope *envelope `json:"envelope"`
	Account  string    `json:"account"`
	// Subscription is set by newer signal-cli on every notification: the
	// subscription (automatic, or one asked for by subscribeReceive) it
	// was delivered under.
	Subscription *int `json:"subscription"`
	// Result wraps the envelope for a subscribeReceive subscription in
	// some versions: {"subscription": 0, "result": {"envelope": …}}.
	Result *struct {
		Envelope *envelope `json:"envelope"`
		Account  string    `json:"account"`
	} `json:"result"`
}

type envelope struct {
	Source       string          `json:"source"` // legacy: the number, else the UUID
	SourceNumber string          `json:"sourceNumber"`
	SourceUUID   string          `json:"sourceUuid"`
	SourceName   string          `json:"sourceName"`
	Timestamp    int64           `json:"timestamp"`
	DataMessage  *dataMessage    `json:"dataMessage"`
	SyncMessage  json.RawMessage `json:"syncMessage"`
	EditMessage  json.RawMessage `json:"editMessage"`
}

type dataMessage struct {
	Timestamp          int64           `json:"timestamp"`
	Message            *string         `json:"message"`
	GroupInfo          *groupInfo      `json:"groupInfo"`
	Attachments        []attachment    `json:"attachments"`
	Reaction           *reaction       `json:"reaction"`
	Sticker            json.RawMessage `json:"sticker"`
	RemoteDelete       json.RawMessage `json:"remoteDelete"`
	IsExpirationUpdate bool            `json:"isExpirationUpdate"`
}

type groupInfo struct {
	GroupID string `json:"groupId"`
	Type    string `json:"type"`
}

type attachment struct {
	ID          string `json:"id"`
	ContentType string `json:"contentType"`
	Filename    string `json:"filename"`
	Size        int64  `json:"size"`
}

type reaction struct {
	Emoji               string `json:"emoji"`
	TargetAuthor        string `json:"targetAuthor"` // legacy identifier
	TargetAuthorNumber  string `json:"targetAuthorNumber"`
	TargetAuthorUUID    string `json:"targetAuthorUuid"`
	TargetSentTimestamp int64  `json:"targetSentTimestamp"`
	IsRemove            bool   `json:"isRemove"`
}

// event is what one notification means: an update for the relay, or a
// reason it is none of the relay's business.
type event struct {
	Skip    string // why it is ignored; empty for an update
	Account string // the account the daemon received it for, when it says
	Sub     *int   // the subscription it came under, when it says
	Update  channels.Update
	// Voice is the audio attachment behind Update.Voice (its Fetch is
	// added by the adapter); GroupID is the group it was posted in.
	Voice   *attachment
	GroupID string
	// Files are the other attachments, in the order of
	// Update.Attachments (whose Fetch the adapter adds too).
	Files []attachment
	// Target is the reacted-to message's timestamp for an Action.
	Target int64
}

// identities tells how configured ids are spelled: a sender whose UUID
// is listed (and whose number is not) is named by that UUID.
type identities map[string]string // lower-case id → as configured

func newIdentities(ids []string) identities {
	m := identities{}
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			m[strings.ToLower(id)] = id
		}
	}
	return m
}

// sender picks the id a person is known by: the number as configured,
// else the UUID as configured, else the number, else the UUID.
func (ids identities) sender(number, uuid string) string {
	if v, ok := ids[strings.ToLower(number)]; ok && number != "" {
		return v
	}
	if v, ok := ids[strings.ToLower(uuid)]; ok && uuid != "" {
		return v
	}
	if number != "" {
		return number
	}
	return strings.ToLower(uuid)
}

var (
	numberRe  = lazyre.New(`^\+[1-9][0-9]{5,18}$`)
	uuidRe    = lazyre.New(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)
	groupIDRe = lazyre.New(`^[A-Za-z0-9+/=_-]{8,128}$`)
)

// groupPrefix marks a group conversation: Conv is "group:" + the base64
// group id, a 1:1 conversation is the other person's id.
const groupPrefix = "group:"

// errNoEnvelope is a notification without the one thing it must carry.
var errNoEnvelope = errors.New("the receive notification has no envelope")

// parseNotification reads one "receive" notification's params. self is
// the assistant's own number. An error means the payload is malformed
// (not merely uninteresting, which is a Skip).
func parseNotification(params []byte, self string, ids identities) (event, error) {
	var n notification
	if err := json.Unmarshal(params, &n); err != nil {
		return event{}, fmt.Errorf("reading a receive notification: %w", err)
	}
	env, account := n.Envelope, n.Account
	if env == nil && n.Result != nil {
		env, account = n.Result.Envelope, n.Result.Account
	}
	ev := event{Account: account, Sub: n.Subscription}
	if env == nil {
		return ev, errNoEnvelope
	}
	number, uuid := env.SourceNumber, strings.ToLower(env.SourceUUID)
	if number == "" && numberRe.MatchString(env.Source) {
		number = env.Source
	}
	if uuid == "" && uuidRe.MatchString(env.Source) {
		uuid = strings.ToLower(env.Source)
	}
	if number != "" && !numberRe.MatchString(number) {
		return ev, fmt.Errorf("the envelope's sourceNumber %.40q is not a phone number", number)
	}
	if uuid != "" && !uuidRe.MatchString(uuid) {
		return ev, fmt.Errorf("the envelope's sourceUuid %.40q is not a UUID", uuid)
	}
	switch {
	case number == "" && uuid == "":
		ev.Skip = "no sender (an undecryptable or server message)"
		return ev, nil
	case number == self && self != "":
		ev.Skip = "sent by the assistant's own account"
		return ev, nil
	case len(env.SyncMessage) > 0 && string(env.SyncMessage) != "null":
		ev.Skip = "a sync message from a linked device"
		return ev, nil
	case env.DataMessage == nil && len(env.EditMessage) > 0 && string(env.EditMessage) != "null":
		ev.Skip = "an edit of an earlier message"
		return ev, nil
	case env.DataMessage == nil:
		ev.Skip = "no message (a receipt, typing indicator, call or story)"
		return ev, nil
	}
	dm := env.DataMessage
	ts := dm.Timestamp
	if ts == 0 {
		ts = env.Timestamp
	}
	if ts <= 0 {
		return ev, errors.New("the message has no timestamp")
	}
	sender := ids.sender(number, uuid)
	author := uuid
	if author == "" {
		author = number
	}
	u := channels.Update{
		// A Signal message is identified by its author and the
		// timestamp the author's client gave it; the ACI is the
		// author's stable identity (a number can change hands).
		ID:         author + ":" + strconv.FormatInt(ts, 10),
		Sender:     sender,
		SenderName: strings.TrimSpace(env.SourceName),
		Private:    true,
		Conv:       sender,
	}
	if g := dm.GroupInfo; g != nil {
		if !groupIDRe.MatchString(g.GroupID) {
			return ev, fmt.Errorf("the message's groupId %.40q is not a group id", g.GroupID)
		}
		u.Private = false
		u.Conv = groupPrefix + g.GroupID
		ev.GroupID = g.GroupID
	}
	switch {
	case len(dm.RemoteDelete) > 0 && string(dm.RemoteDelete) != "null":
		ev.Skip = "a remote delete"
		return ev, nil
	case dm.IsExpirationUpdate:
		ev.Skip = "a disappearing-messages timer change"
		return ev, nil
	case dm.Reaction != nil:
		return parseReaction(ev, u, dm.Reaction, self)
	}
	if dm.Message != nil {
		u.Text = *dm.Message
	}
	for i := range dm.Attachments {
		a := dm.Attachments[i]
		audio := strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.ContentType)), "audio/")
		switch {
		case audio && a.ID == "":
			return ev, errors.New("an audio attachment has no id")
		case a.ID == "":
			// Nothing signal-cli could hand over (a download that failed
			// on its side): the relay cannot fetch it either.
		case audio && ev.Voice == nil:
			ev.Voice = &a
			u.Voice = &channels.Voice{Size: max(a.Size, 0), Mime: strings.TrimSpace(a.ContentType), Filename: a.Filename}
		default:
			ev.Files = append(ev.Files, a)
			u.Attachments = append(u.Attachments, channels.Attachment{Name: a.Filename, Mime: strings.TrimSpace(a.ContentType), Size: max(a.Size, 0)})
		}
	}
	hasSticker := len(dm.Sticker) > 0 && string(dm.Sticker) != "null"
	if strings.TrimSpace(u.Text) == "" && u.Voice == nil && len(dm.Attachments) == 0 && !hasSticker {
		// Profile-key updates, group changes and the like carry no body.
		ev.Skip = "no text, voice note or attachment"
		return ev, nil
	}
	ev.Update = u
	return ev, nil
}

// parseReaction turns a reaction on one of the assistant's messages into
// an approval Action: 👍 approves, 👎 denies; other emoji, removals and
// reactions to other people's messages are not decisions.
func parseReaction(ev event, u channels.Update, r *reaction, self string) (event, error) {
	if r.IsRemove {
		ev.Skip = "a reaction removed"
		return ev, nil
	}
	// The target's author is the assistant when its number says so; a
	// target named only by UUID is left to the relay, which matches the
	// timestamp against the prompts it sent in this conversation.
	if t := r.TargetAuthorNumber; t != "" && t != self {
		ev.Skip = "a reaction to someone else's message"
		return ev, nil
	}
	if t := r.TargetAuthor; r.TargetAuthorNumber == "" && numberRe.MatchString(t) && t != self {
		ev.Skip = "a reaction to someone else's message"
		return ev, nil
	}
	if r.TargetSentTimestamp <= 0 {
		return ev, errors.New("the reaction has no target timestamp")
	}
	verb, ok := reactionVerb(r.Emoji)
	if !ok {
		ev.Skip = "a reaction that is not an approval"
		return ev, nil
	}
	u.Action = &channels.Action{Ref: strconv.FormatInt(r.TargetSentTimestamp, 10), Verb: verb}
	ev.Target = r.TargetSentTimestamp
	ev.Update = u
	return ev, nil
}

// reactionVerb maps an emoji to a decision, ignoring skin tones and
// variation selectors: 👍 ✅ approve, 👎 ❌ deny.
func reactionVerb(emoji string) (channels.Verb, bool) {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 0x1F3FB && r <= 0x1F3FF, r == 0xFE0F, r == 0xFE0E:
			return -1
		}
		return r
	}, strings.TrimSpace(emoji))
	switch base {
	case "👍", "✅", "✔":
		return channels.VerbApprove, true
	case "👎", "❌":
		return channels.VerbDeny, true
	}
	return "", false
}
