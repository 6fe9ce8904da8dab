package matrix

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
)

// What a homeserver sends, reduced to the fields the adapter reads
// (client-server API v3: GET /sync, GET /rooms/{roomId}/messages).

type syncResponse struct {
	NextBatch string `json:"next_batch"`
	Rooms     struct {
		Join   map[string]joinedRoom      `json:"join"`
		Invite map[string]invitedRoom     `json:"invite"`
		Leave  map[string]json.RawMessage `json:"leave"`
	} `json:"rooms"`
}

type joinedRoom struct {
	State struct {
		Events []event `json:"events"`
	} `json:"state"`
	Timeline struct {
		Events    []event `json:"events"`
		Limited   bool    `json:"limited"`
		PrevBatch string  `json:"prev_batch"`
	} `json:"timeline"`
}

type invitedRoom struct {
	InviteState struct {
		Events []event `json:"events"`
	} `json:"invite_state"`
}

// event is a client event; invite_state's stripped events have only type,
// state_key, sender and content.
type event struct {
	Type     string          `json:"type"`
	EventID  string          `json:"event_id"`
	Sender   string          `json:"sender"`
	TS       int64           `json:"origin_server_ts"`
	StateKey *string         `json:"state_key"`
	Content  json.RawMessage `json:"content"`
	Unsigned struct {
		PrevContent json.RawMessage `json:"prev_content"`
	} `json:"unsigned"`
}

type messagesResponse struct {
	Chunk []event `json:"chunk"`
	End   string  `json:"end"`
}

// maxSyncBytes bounds one response read into memory; with the filter's
// timeline limit a real one is far smaller.
const maxSyncBytes = 32 << 20

// parseSync decodes a /sync response. A response without next_batch is
// refused: the position could not advance, and the batch would be read
// again forever.
func parseSync(data []byte) (*syncResponse, error) {
	var r syncResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decoding the sync response: %w", err)
	}
	if r.NextBatch == "" {
		return nil, errors.New("the sync response has no next_batch")
	}
	return &r, nil
}

// validID reports whether s is an identifier of the given sigil (@ user,
// ! room, $ event) that is safe to use as a path segment and a key:
// printable, no spaces, not absurdly long.
func validID(s string, sigil byte) bool {
	if len(s) < 2 || len(s) > 255 || s[0] != sigil || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == '/' {
			return false
		}
	}
	// Users and rooms are "@local:server" / "!opaque:server"; event ids of
	// room versions 3 and later have no server part.
	return sigil == '$' || strings.Contains(s[1:], ":")
}

// relation is m.relates_to as messages and reactions carry it.
type relation struct {
	RelType   string `json:"rel_type"`
	EventID   string `json:"event_id"`
	Key       string `json:"key"`
	InReplyTo *struct {
		EventID string `json:"event_id"`
	} `json:"m.in_reply_to"`
}

type messageContent struct {
	MsgType  string `json:"msgtype"`
	Body     string `json:"body"`
	URL      string `json:"url"`
	Filename string `json:"filename"`
	Info     struct {
		MimeType string `json:"mimetype"`
		Size     int64  `json:"size"`
	} `json:"info"`
	RelatesTo *relation `json:"m.relates_to"`
}

// message is an m.room.message as the relay needs it.
type message struct {
	Text   string
	Audio  *audio // a voice note or audio file
	File   *audio // an image, a video or any other file
	Thread string // the thread root when the message is in a thread
	// Skip: not something to answer (an edit of an earlier message, a
	// notice, which bots send and must not answer, an empty redaction).
	Skip bool
}

// audio is a file in the media repository (a voice note, or any file).
type audio struct {
	URL      string // mxc://server/media
	Mime     string
	Size     int64
	Filename string
}

// decodeMessage reads an m.room.message's content. Audio is a voice note;
// images, videos and other files are attachments, with their caption as
// the text (spec v1.10: a body that differs from the filename is a
// caption). Unknown message types (locations) and encrypted files come
// back with nothing: the relay says what it can read.
func decodeMessage(content json.RawMessage) (message, error) {
	if len(content) == 0 || string(content) == "{}" || string(content) == "null" {
		return message{Skip: true}, nil // redacted
	}
	var c messageContent
	if err := json.Unmarshal(content, &c); err != nil {
		return message{}, fmt.Errorf("decoding a message's content: %w", err)
	}
	var m message
	if rel := c.RelatesTo; rel != nil {
		switch rel.RelType {
		case "m.replace":
			return message{Skip: true}, nil // an edit: the original was answered
		case "m.thread":
			if validID(rel.EventID, '$') {
				m.Thread = rel.EventID
			}
		}
	}
	switch c.MsgType {
	case "m.text", "m.emote":
		m.Text = c.Body
		if c.RelatesTo != nil && c.RelatesTo.InReplyTo != nil {
			m.Text = stripReplyFallback(m.Text)
		}
	case "m.notice", "":
		m.Skip = true
	case "m.audio", "m.file", "m.image", "m.video":
		if _, _, err := parseMXC(c.URL); err != nil {
			break // an encrypted file or a broken url: not something to fetch
		}
		name := c.Filename
		if name == "" {
			name = c.Body
		}
		f := &audio{URL: c.URL, Mime: c.Info.MimeType, Size: max(c.Info.Size, 0), Filename: name}
		if c.MsgType == "m.audio" || (c.MsgType == "m.file" && strings.HasPrefix(strings.ToLower(c.Info.MimeType), "audio/")) {
			m.Audio = f
			break
		}
		m.File = f
		if c.Filename != "" && c.Body != c.Filename {
			m.Text = c.Body
		}
	}
	return m, nil
}

// stripReplyFallback removes the quoted lines older clients put before a
// reply's text ("> <@anna:example.org> original\n\nreply").
func stripReplyFallback(s string) string {
	if !strings.HasPrefix(s, "> ") {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, ">") {
			return strings.TrimLeft(strings.Join(lines[i:], "\n"), "\n")
		}
	}
	return s
}

// decodeReaction reads an m.reaction: the message reacted to and the
// approval choice its key stands for; ok is false for other reactions.
func decodeReaction(content json.RawMessage) (target string, verb channels.Verb, ok bool) {
	var c struct {
		RelatesTo *relation `json:"m.relates_to"`
	}
	if json.Unmarshal(content, &c) != nil || c.RelatesTo == nil || c.RelatesTo.RelType != "m.annotation" || !validID(c.RelatesTo.EventID, '$') {
		return "", "", false
	}
	verb = reactionVerb(c.RelatesTo.Key)
	return c.RelatesTo.EventID, verb, verb != ""
}

// reactionVerb maps a reaction key to a choice. Clients differ in whether
// they append the emoji variation selector (U+FE0F) and a skin tone, so
// both are ignored.
func reactionVerb(key string) channels.Verb {
	k := strings.Map(func(r rune) rune {
		if r == 0xFE0F || (r >= 0x1F3FB && r <= 0x1F3FF) {
			return -1
		}
		return r
	}, strings.TrimSpace(key))
	switch k {
	case "👍", "✅", "✔", "☑":
		return channels.VerbApprove
	case "👎", "❌", "✖", "🚫":
		return channels.VerbDeny
	}
	return ""
}

// membership reads an m.room.member's membership ("join", "invite", …).
func membership(content json.RawMessage) string {
	var c struct {
		Membership string `json:"membership"`
	}
	if json.Unmarshal(content, &c) != nil {
		return ""
	}
	return c.Membership
}

// parseMXC splits "mxc://server/media" (content URIs, spec "Matrix Content
// URIs"). Both parts become path segments of the download URL, so they
// are held to the spec's character sets.
func parseMXC(uri string) (server, media string, err error) {
	rest, ok := strings.CutPrefix(uri, "mxc://")
	if !ok {
		return "", "", fmt.Errorf("%q is not an mxc:// URI", truncate(uri, 80))
	}
	server, media, ok = strings.Cut(rest, "/")
	if !ok || server == "" || media == "" || len(server) > 255 || len(media) > 255 {
		return "", "", fmt.Errorf("%q is not an mxc://server/media URI", truncate(uri, 80))
	}
	for _, r := range server {
		if !(r == '.' || r == '-' || r == ':' || r == '[' || r == ']' || isAlnum(r)) {
			return "", "", fmt.Errorf("%q has an invalid server name", truncate(uri, 80))
		}
	}
	for _, r := range media {
		if !(r == '_' || r == '-' || isAlnum(r)) {
			return "", "", fmt.Errorf("%q has an invalid media id", truncate(uri, 80))
		}
	}
	return server, media, nil
}

func isAlnum(r rune) bool {
	return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

// apiError is the body of a homeserver's error response.
type apiError struct {
	ErrCode      string `json:"errcode"`
	Error        string `json:"error"`
	RetryAfterMS int64  `json:"retry_after_ms"`
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
