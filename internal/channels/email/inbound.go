package email

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// unverifiedPrefix marks a sender whose address is not proven; no owner
// or contact id can match it.
const unverifiedPrefix = "unverified:"

// disposition is what the receiver does with a message in the mailbox.
type disposition int

const (
	// ignore: not addressed to the channel; left untouched.
	ignore disposition = iota
	// drop: for the channel but no turn (Hestia's own, automatic, stale,
	// unreadable): marked handled without reaching the relay.
	drop
	// deliver: handed to the relay.
	deliver
)

// inbound is one message classified.
type inbound struct {
	disp   disposition
	why    string // for the log: why dropped, or what proved the sender
	update channels.Update
	// voice describes an audio attachment offered as a voice note; the
	// receiver adds its Fetch.
	voice *channels.Voice
	// audioIndex is the voice note's index among parse's attachments.
	audioIndex int
}

// replyData is Update.ReplyTo: what a reply to the message needs.
type replyData struct {
	MessageID  string   `json:"id,omitempty"`
	References []string `json:"refs,omitempty"`
	Subject    string   `json:"subj,omitempty"`
}

// Bounds on what one message can make us hold or do.
const (
	maxHeaderBytes = 256 << 10
	maxHeaderLines = 2000
	maxInboundText = 100_000 // bytes of new text handed to the relay
	maxRefs        = 20
)

// header is a message's header block, names lower-cased, values unfolded.
type header map[string][]string

func (h header) get(k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// readHeader reads the header block leniently: a line that is no field
// is skipped rather than losing the rest (outside mail is often broken).
func readHeader(raw []byte) header {
	raw = parse.StripEnvelope(raw)
	if len(raw) > maxHeaderBytes {
		raw = raw[:maxHeaderBytes]
	}
	h := header{}
	var name string
	var val strings.Builder
	flush := func() {
		if name != "" {
			h[name] = append(h[name], strings.TrimSpace(val.String()))
		}
		name = ""
		val.Reset()
	}
	lines := 0
	for len(raw) > 0 && lines < maxHeaderLines {
		lines++
		var line []byte
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			line, raw = raw, nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if name != "" {
				val.WriteByte(' ')
				val.Write(bytes.TrimSpace(line))
			}
			continue
		}
		flush()
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok || len(bytes.TrimSpace(k)) == 0 || bytes.ContainsAny(k, " \t") {
			continue
		}
		name = strings.ToLower(string(k))
		val.Write(bytes.TrimSpace(v))
	}
	flush()
	return h
}

// bareAddresses reads addresses from a header like Delivered-To, which
// holds a bare address, possibly in angle brackets.
func bareAddresses(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if i := strings.LastIndex(p, "<"); i >= 0 {
				p = strings.TrimSuffix(p[i+1:], ">")
			}
			if p != "" {
				out = append(out, strings.ToLower(p))
			}
		}
	}
	return out
}

// automatic names why a message was sent by a machine (a vacation
// responder, a bounce, a list), "" for a person's mail. Answering such
// mail starts mail loops (RFC 3834 §2).
func automatic(h header, from string) string {
	if v := strings.ToLower(h.get("auto-submitted")); v != "" && v != "no" {
		return "Auto-Submitted: " + v
	}
	switch strings.ToLower(h.get("precedence")) {
	case "bulk", "junk", "list", "auto_reply":
		return "Precedence: " + h.get("precedence")
	}
	for _, k := range []string{"x-autoreply", "x-autorespond", "list-id", "list-unsubscribe", "x-auto-response-suppress-sender"} {
		if _, ok := h[k]; ok {
			return k + " header"
		}
	}
	if rp, ok := h["return-path"]; ok && len(rp) > 0 && strings.TrimSpace(rp[0]) == "<>" {
		return "null return path (a delivery report)"
	}
	if mt, _, err := mime.ParseMediaType(h.get("content-type")); err == nil && mt == "multipart/report" {
		return "delivery or disposition report"
	}
	if l, _, ok := splitAddr(from); ok && (l == "mailer-daemon" || l == "postmaster") {
		return "from " + l
	}
	return ""
}

// classify decides what one raw message from the mailbox is. arrived is
// its INTERNALDATE (zero when unknown); fallbackID names it when it has no
// Message-ID.
func (a *Adapter) classify(raw []byte, arrived time.Time, fallbackID string) inbound {
	h := readHeader(raw)
	m, err := parse.Parse(raw, parse.Options{MaxTextBytes: 4 * maxInboundText, MaxAttachmentBytes: 1})
	if err != nil {
		return inbound{disp: drop, why: "unreadable message: " + err.Error()}
	}
	var rcpts []string
	for _, list := range [][]parse.Address{m.To, m.Cc} {
		for _, ad := range list {
			rcpts = append(rcpts, strings.ToLower(ad.Addr))
		}
	}
	rcpts = append(rcpts, bareAddresses(h["delivered-to"])...)
	rcpts = append(rcpts, bareAddresses(h["x-original-to"])...)
	addressed := false
	for _, r := range rcpts {
		if a.ours(r) {
			addressed = true
			break
		}
	}
	if !addressed {
		return inbound{disp: ignore, why: "not addressed to the channel"}
	}
	if len(m.From) == 0 || m.From[0].Addr == "" {
		return inbound{disp: drop, why: "no From address"}
	}
	from := strings.ToLower(strings.TrimSpace(m.From[0].Addr))
	if a.ours(from) || a.ownMessageID(m.MessageID) {
		return inbound{disp: drop, why: "Hestia's own message"}
	}
	if why := automatic(h, from); why != "" {
		return inbound{disp: drop, why: "automatic mail (" + why + ")"}
	}
	if a.cfg.MaxAge > 0 && !arrived.IsZero() && a.cfg.Clock().Sub(arrived) > a.cfg.MaxAge {
		return inbound{disp: drop, why: fmt.Sprintf("arrived %s ago, more than max_age %s", a.cfg.Clock().Sub(arrived).Round(time.Minute), a.cfg.MaxAge)}
	}

	verified, proof := a.verify(h, m, rcpts, from)
	sender := from
	if !verified {
		sender = unverifiedPrefix + from
	}

	id := fallbackID
	if m.MessageID != "" {
		id = "<" + m.MessageID + ">"
	}
	root := id
	switch {
	case len(m.References) > 0:
		root = "<" + m.References[0] + ">"
	case len(m.InReplyTo) > 0:
		root = "<" + m.InReplyTo[0] + ">"
	}

	private := true
	for _, list := range [][]parse.Address{m.To, m.Cc} {
		for _, ad := range list {
			if r := strings.ToLower(ad.Addr); !a.ours(r) && r != from {
				private = false
			}
		}
	}

	reply := len(m.References) > 0 || len(m.InReplyTo) > 0
	// An undeclared charset can leave raw bytes in an HTML part.
	text := clip(strings.ToValidUTF8(bodyText(raw, m, reply), "\uFFFD"), maxInboundText)
	var voice *channels.Voice
	audioIndex := -1
	if text == "" {
		for i, att := range m.Attachments {
			if isAudio(att.ContentType, att.Filename) {
				voice = &channels.Voice{Mime: att.ContentType, Filename: att.Filename, Size: att.Size}
				audioIndex = i
				break
			}
		}
	}
	if text == "" && voice == nil && !reply {
		// A new message with everything in the subject line.
		text = clip(strings.TrimSpace(m.Subject), maxInboundText)
	}

	refs := append(append([]string(nil), m.References...), m.MessageID)
	if m.MessageID == "" {
		refs = refs[:len(refs)-1]
	}
	rd, _ := json.Marshal(replyData{MessageID: m.MessageID, References: trimRefs(refs), Subject: m.Subject})

	in := inbound{
		disp: deliver,
		why:  proof,
		update: channels.Update{
			ID:         id,
			Conv:       convOf(sender, root),
			Sender:     sender,
			SenderName: m.From[0].Name,
			Unverified: !verified,
			Private:    private,
			Text:       text,
			ReplyTo:    string(rd),
		},
		voice:      voice,
		audioIndex: audioIndex,
	}
	return in
}

// verify applies the configured proofs; proof says what passed or what
// failed.
func (a *Adapter) verify(h header, m *parse.Message, rcpts []string, from string) (bool, string) {
	var passed, failed []string
	if a.cfg.SecretTag != "" {
		ok := false
		for _, r := range rcpts {
			if tagMatches(r, a.local, a.domain, a.cfg.SecretTag) {
				ok = true
				break
			}
		}
		if ok {
			passed = append(passed, "secret tag")
		} else {
			failed = append(failed, "not sent to the secret-tagged address")
		}
	}
	if a.cfg.AuthservID != "" {
		_, domain, _ := splitAddr(from)
		ok, why := AuthVerdict(h["authentication-results"], a.cfg.AuthservID, a.cfg.AuthMethods, domain)
		if ok {
			passed = append(passed, why)
		} else {
			failed = append(failed, why)
		}
	}
	if len(m.From) > 1 {
		// Several authors: whose address would the proof be for?
		return false, "more than one From address"
	}
	if a.cfg.RequireAll && len(failed) > 0 || len(passed) == 0 {
		return false, strings.Join(failed, "; ")
	}
	return true, strings.Join(passed, "; ")
}

// ownMessageID reports whether id is one Send made.
func (a *Adapter) ownMessageID(id string) bool {
	l, d, ok := splitAddr(id)
	return ok && d == strings.ToLower(a.cfg.MessageIDDomain) && strings.HasPrefix(l, msgIDPrefix)
}

// bodyText is the new text a person wrote: text/plain preferred, else the
// HTML part rendered; in replies without the quoted history.
func bodyText(raw []byte, m *parse.Message, reply bool) string {
	if !m.HTMLOnly {
		if reply {
			return StripQuotes(m.Text)
		}
		return StripSignature(m.Text)
	}
	if reply {
		if h, ok := firstHTML(raw); ok {
			return HTMLReplyText(h)
		}
	}
	return StripSignature(m.Text)
}

// firstHTML returns the first inline text/html part, decoded to UTF-8.
func firstHTML(raw []byte) (string, bool) {
	e, err := message.Read(bytes.NewReader(parse.StripEnvelope(raw)))
	if e == nil {
		return "", false
	}
	_ = err // unknown charsets still give a readable entity
	var out string
	found := false
	parts := 0
	e.Walk(func(_ []int, p *message.Entity, err error) error {
		parts++
		if found || err != nil || parts > 200 {
			return nil
		}
		mt, _, _ := p.Header.ContentType()
		disp, _, _ := p.Header.ContentDisposition()
		if mt != "text/html" || disp == "attachment" {
			return nil
		}
		b, rerr := io.ReadAll(io.LimitReader(p.Body, 4*maxInboundText))
		if rerr != nil && len(b) == 0 {
			return nil
		}
		out, found = string(b), true
		return nil
	})
	return out, found
}

func isAudio(contentType, filename string) bool {
	if strings.HasPrefix(strings.ToLower(contentType), "audio/") {
		return true
	}
	switch strings.ToLower(filename[strings.LastIndex(filename, ".")+1:]) {
	case "m4a", "mp3", "ogg", "oga", "opus", "wav", "aac", "amr", "flac", "webm":
		return strings.Contains(filename, ".")
	}
	return false
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "\n[…]"
}

// trimRefs keeps the first reference (the thread's root, which Conv is
// built from) and the latest ones, as RFC 5322 §3.6.4 suggests for long
// threads.
func trimRefs(refs []string) []string {
	if len(refs) <= maxRefs {
		return refs
	}
	return append([]string{refs[0]}, refs[len(refs)-maxRefs+1:]...)
}

// convOf builds a Conv: the sender and the thread's root Message-ID. The
// sender is part of it so Send knows whom to answer even without ReplyTo,
// and so nobody joins another person's conversation by citing its root.
func convOf(sender, root string) string { return sender + " " + root }

// parseConv splits a Conv into the peer address and the root Message-ID.
func parseConv(conv string) (peer, root string, err error) {
	i := strings.Index(conv, " <")
	if i <= 0 || !strings.HasSuffix(conv, ">") {
		return "", "", fmt.Errorf("email conversation %q is not \"ADDRESS <ROOT-MESSAGE-ID>\"", conv)
	}
	return conv[:i], conv[i+1:], nil
}
