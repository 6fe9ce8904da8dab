package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Send posts m to a room and returns the event id (the ref Edit and
// reactions use).
func (a *Adapter) Send(ctx context.Context, conv string, m channels.Outgoing) (string, error) {
	if !validID(conv, '!') {
		return "", channels.Permanent(fmt.Errorf("matrix: %q is not a room id", truncate(conv, 80)))
	}
	md := promptText(m)
	content, err := fit(func(body, htm string, _ bool) map[string]any {
		c := textContent(body, htm)
		if validID(m.ReplyTo, '$') {
			// In a thread: answer in it (is_falling_back: clients without
			// threads show it as a plain message).
			c["m.relates_to"] = map[string]any{"rel_type": "m.thread", "event_id": m.ReplyTo,
				"is_falling_back": true, "m.in_reply_to": map[string]any{"event_id": m.ReplyTo}}
		}
		return c
	}, md)
	if err != nil {
		return "", err
	}
	key := m.Key
	if key == "" {
		key = "text:" + conv + ":" + md // unkeyed: same text, same event within the server's window
	}
	id, err := a.sendEvent(ctx, "sending a message", conv, "m.room.message", txnID("msg", conv, key), content)
	if err != nil {
		return "", err
	}
	if p := m.Prompt; p != nil && !p.Closed {
		a.offerReactions(ctx, conv, id, p)
	}
	return id, nil
}

// Edit replaces a message's text with an m.replace event; ref is the
// original's event id (every edit relates to the original, never to an
// earlier edit).
func (a *Adapter) Edit(ctx context.Context, conv, ref string, m channels.Outgoing) error {
	if !validID(conv, '!') {
		return channels.Permanent(fmt.Errorf("matrix: %q is not a room id", truncate(conv, 80)))
	}
	if !validID(ref, '$') {
		return channels.Permanent(fmt.Errorf("matrix: %q is not an event id", truncate(ref, 80)))
	}
	md := promptText(m)
	content, err := fit(func(body, htm string, short bool) map[string]any {
		// The fallback for clients without edits is "* " and the text;
		// when the event would be too large it is cut short first.
		fbBody, fbHTML := body, htm
		if short {
			fbBody, fbHTML = truncate(body, 200), ""
		}
		c := textContent("* "+fbBody, "")
		if fbHTML != "" {
			c["format"], c["formatted_body"] = "org.matrix.custom.html", "* "+fbHTML
		}
		c["m.new_content"] = textContent(body, htm)
		c["m.relates_to"] = map[string]any{"rel_type": "m.replace", "event_id": ref}
		return c
	}, md)
	if err != nil {
		return err
	}
	// Streaming edits of one message share their Key, so the text is part
	// of the transaction id: each new text is a new edit, a retry of the
	// same one is not.
	_, err = a.sendEvent(ctx, "editing a message", conv, "m.room.message", txnID("edit", conv, ref, m.Key, md), content)
	return err
}

// promptText is the Markdown to post: an open prompt says it can be
// answered by reacting (the relay's text already ends with the code line).
func promptText(m channels.Outgoing) string {
	p := m.Prompt
	switch {
	case p == nil || p.Closed:
		return m.Text
	case p.Question:
		return m.Text + "\nOr react with 👎 to decline."
	}
	return m.Text + "\nOr react with 👍 to approve, 👎 to deny."
}

// offerReactions puts the bot's own 👍 and 👎 under an open prompt, so one
// click answers it. Best effort: the prompt is sent, and the request code
// and typed reactions work without them.
func (a *Adapter) offerReactions(ctx context.Context, conv, eventID string, p *channels.Prompt) {
	keys := []string{"👍", "👎"}
	if p.Question {
		keys = keys[1:]
	}
	for _, k := range keys {
		c := map[string]any{"m.relates_to": map[string]any{"rel_type": "m.annotation", "event_id": eventID, "key": k}}
		if _, err := a.sendEvent(ctx, "reacting to a prompt", conv, "m.reaction", txnID("react", conv, eventID, k), c); err != nil {
			a.log.Info("matrix: offering a reaction on a prompt failed", "channel", a.cfg.Name, "err", err)
			return
		}
	}
}

// SendVoice posts audio as a voice message: uploaded to the media
// repository, then an m.audio event flagged as voice (MSC3245, which
// clients show as a voice note).
func (a *Adapter) SendVoice(ctx context.Context, conv string, audio []byte, mime string) error {
	if !validID(conv, '!') {
		return channels.Permanent(fmt.Errorf("matrix: %q is not a room id", truncate(conv, 80)))
	}
	if mime == "" {
		mime = "audio/ogg"
	}
	name := "voice" + audioExt(mime)
	data, _, err := a.call(ctx, request{op: "uploading a voice message", method: http.MethodPost, path: "/_matrix/media/v3/upload",
		query: url.Values{"filename": {name}}, raw: audio, ctype: mime, maxBytes: 64 << 10})
	if err != nil {
		return err
	}
	var up struct {
		ContentURI string `json:"content_uri"`
	}
	if err := json.Unmarshal(data, &up); err != nil {
		return fmt.Errorf("matrix: uploading a voice message: decoding the answer: %w", err)
	}
	if _, _, err := parseMXC(up.ContentURI); err != nil {
		return fmt.Errorf("matrix: uploading a voice message: %w", err)
	}
	sum := sha256.Sum256(audio)
	c := map[string]any{"msgtype": "m.audio", "body": name, "url": up.ContentURI,
		"info": map[string]any{"mimetype": mime, "size": len(audio)}, "m.mentions": map[string]any{},
		"org.matrix.msc3245.voice": map[string]any{}, "org.matrix.msc1767.audio": map[string]any{}}
	_, err = a.sendEvent(ctx, "sending a voice message", conv, "m.room.message", txnID("voice", conv, hex.EncodeToString(sum[:])), c)
	return err
}

func audioExt(mime string) string {
	switch strings.ToLower(strings.TrimSpace(strings.Split(mime, ";")[0])) {
	case "audio/mpeg", "audio/mp3":
		return ".mp3"
	case "audio/wav", "audio/x-wav", "audio/wave":
		return ".wav"
	case "audio/mp4", "audio/m4a", "audio/x-m4a", "audio/aac":
		return ".m4a"
	case "audio/webm":
		return ".webm"
	case "audio/flac":
		return ".flac"
	}
	return ".ogg"
}

// sendEvent PUTs one event (PUT /rooms/{roomId}/send/{eventType}/{txnId})
// and returns its id.
func (a *Adapter) sendEvent(ctx context.Context, op, room, typ, txn string, content map[string]any) (string, error) {
	data, _, err := a.call(ctx, request{op: op, method: http.MethodPut,
		path: "/_matrix/client/v3/rooms/" + pathSeg(room) + "/send/" + pathSeg(typ) + "/" + pathSeg(txn), body: content})
	if err != nil {
		return "", err
	}
	var r struct {
		EventID string `json:"event_id"`
	}
	if err := json.Unmarshal(data, &r); err != nil || !validID(r.EventID, '$') {
		// The homeserver took it but its answer is unusable: retrying
		// under the same transaction id is safe and may give the id.
		return "", fmt.Errorf("matrix: %s: the answer has no event_id", op)
	}
	return r.EventID, nil
}

// textContent is an m.text message's content. m.mentions is empty on
// purpose (intentional mentions, spec v1.7): nothing in the model's text
// notifies @room or a user it names.
func textContent(body, htm string) map[string]any {
	c := map[string]any{"msgtype": "m.text", "body": body, "m.mentions": map[string]any{}}
	if htm != "" {
		c["format"], c["formatted_body"] = "org.matrix.custom.html", htm
	}
	return c
}

// fit builds content for md that the homeserver will take: the full
// rendering first; if the event would be too large, a short edit fallback,
// then no HTML, then the text cut down until it fits. A message is never
// refused for its length.
func fit(build func(body, htm string, short bool) map[string]any, md string) (map[string]any, error) {
	body, htm := md, Render(md)
	if htm == htmlEscapeOnly(md) {
		htm = "" // nothing to format: plain body only, like a typed message
	}
	short := false
	for range 40 {
		c := build(body, htm, short)
		b, err := marshal(c)
		if err != nil {
			return nil, channels.Permanent(fmt.Errorf("matrix: encoding a message: %w", err))
		}
		over := len(b) - maxContent
		switch {
		case over <= 0:
			return c, nil
		case !short:
			short = true
		case htm != "":
			htm = ""
		default:
			// Cut by bytes, at a rune boundary, with room for the mark.
			n := max(len(body)-over-64, 0)
			for n > 0 && !utf8.RuneStart(body[n]) {
				n--
			}
			body = body[:n] + " …"
		}
	}
	return nil, channels.Permanent(errors.New("matrix: the message could not be made small enough to send"))
}

// htmlEscapeOnly is what Render gives for one line without Markdown.
func htmlEscapeOnly(md string) string {
	if strings.Contains(md, "\n") {
		return "\x00" // several lines keep their breaks as HTML
	}
	return html.EscapeString(md)
}
