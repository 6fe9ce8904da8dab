// Package parse turns raw RFC 5322 / MIME messages and the containers they
// arrive in (Maildir files, mbox files, Apple Mail .emlx files) into the
// normalised record the mail mirror stores.
//
// Outside mail is hostile or simply broken: every entry point tolerates
// malformed headers, unknown charsets and encodings, bad boundaries and
// truncated bodies, keeping whatever can be read and naming the problems
// instead of failing the whole message. The body is every inline text part
// of a multipart/mixed in order, one child of each multipart/alternative
// (plain preferred), HTML rendered to text; quoted-printable is decoded
// leniently (walk.go), like mail clients do.
package parse

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"io"
	"mime"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // registers every charset go-message can decode
	gomail "github.com/emersion/go-message/mail"
	"golang.org/x/text/encoding/charmap"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Address is one mailbox from an address header.
type Address struct {
	Name string `json:"name,omitempty"`
	Addr string `json:"addr"`
}

// String renders the address the way a person reads it.
func (a Address) String() string {
	if a.Name == "" {
		return a.Addr
	}
	if a.Addr == "" {
		return a.Name
	}
	return a.Name + " <" + a.Addr + ">"
}

// Attachment is a non-body part. Data is nil when the part exceeded
// Options.MaxAttachmentBytes; SHA256 and Size always describe the full part.
type Attachment struct {
	Filename    string
	ContentType string
	Size        int64
	SHA256      string
	Inline      bool
	Data        []byte
}

// Message is the parsed, normalised form of one message.
type Message struct {
	MessageID     string // without angle brackets; "" when absent or unparseable
	InReplyTo     []string
	References    []string
	Subject       string
	From          []Address
	To            []Address
	Cc            []Address
	Bcc           []Address
	ReplyTo       []Address
	Date          time.Time // zero when absent or unparseable
	Text          string    // the readable body: inline text parts, HTML rendered to text (see bodyParts)
	HTMLOnly      bool      // Text came from HTML parts only
	Attachments   []Attachment
	GmailThreadID string   // X-GM-THRID when present (exported Gmail mail)
	Problems      []string // what was malformed; empty for a clean message
	Size          int
	RawSHA256     string // hash of the raw bytes, used for surrogate identity
}

// Options bound the work done per message.
type Options struct {
	MaxTextBytes       int   // body text kept (default 1 MiB)
	MaxAttachmentBytes int64 // attachment bytes kept in Data (default 25 MiB)
	MaxParts           int   // parts visited (default 500)
}

func (o Options) withDefaults() Options {
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = 1 << 20
	}
	if o.MaxAttachmentBytes <= 0 {
		o.MaxAttachmentBytes = 25 << 20
	}
	if o.MaxParts <= 0 {
		o.MaxParts = 500
	}
	return o
}

// ErrEmpty is returned for input that holds no message at all.
var ErrEmpty = errors.New("empty message")

// Parse parses one raw message. It fails only when nothing usable can be
// recovered; otherwise problems are listed in Message.Problems.
func Parse(raw []byte, opts Options) (*Message, error) {
	return parse(raw, opts.withDefaults(), 0)
}

// maxNesting bounds how deep forwarded messages (message/rfc822 parts) are
// opened; deeper ones stay attachments.
const maxNesting = 3

func parse(raw []byte, opts Options, depth int) (*Message, error) {
	raw = StripEnvelope(raw)
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, ErrEmpty
	}
	sum := sha256.Sum256(raw)
	m := &Message{Size: len(raw), RawSHA256: hex.EncodeToString(sum[:])}

	ent, err := readEntity(bytes.NewReader(raw))
	if ent == nil {
		// The header block itself is malformed (a line without a colon,
		// binary junk). Keep the lines that look like fields and retry, so
		// one bad line does not lose Subject/From/Date.
		m.problem("header: %v", err)
		cleaned := cleanHeader(raw)
		ent, err = readEntity(bytes.NewReader(cleaned))
		if ent == nil {
			m.problem("header unrecoverable: %v", err)
			m.Text = clampText(toUTF8(raw), opts.MaxTextBytes)
			return m, nil
		}
	}
	if err != nil {
		m.problem("top-level part: %v", err)
	}
	fixHeaderBytes(ent.Header, declaredCharset(raw))
	h := gomail.Header{Header: ent.Header}
	m.readHeader(h)

	var texts bodyParts
	var forwarded []string
	parts := 0
	walkErr := walk(ent, func(path []int, parents []string, part *message.Entity, perr error) error {
		parts++
		if parts > opts.MaxParts {
			return errTooManyParts
		}
		if perr != nil {
			m.problem("part %v: %v", path, perr)
		}
		if part == nil {
			return nil
		}
		mt, params, cterr := part.Header.ContentType()
		if cterr != nil {
			// An unparseable header (an unquoted file name with a space) is
			// salvaged, not read as text: RFC 2045's text/plain default is
			// for a missing type, not for a broken attachment.
			mt, params = salvageParams(part.Header.Get("Content-Type"))
			m.problem("part %v content-type: %v", path, cterr)
		}
		if mt == "" {
			mt = "text/plain"
		}
		if strings.HasPrefix(mt, "multipart/") {
			return nil
		}
		disp, dparams, derr := part.Header.ContentDisposition()
		if derr != nil && part.Header.Get("Content-Disposition") != "" {
			disp, dparams = salvageParams(part.Header.Get("Content-Disposition"))
		}
		filename := dparams["filename"]
		if filename == "" {
			filename = params["name"]
		}
		filename = fixBytes(decodeWord(filename), "")
		isAttachment := strings.EqualFold(disp, "attachment") || (filename != "" && !strings.HasPrefix(mt, "text/"))
		if (mt == "message/rfc822" || mt == "message/global") && depth < maxNesting {
			// Forwarded mail, inline or as an attachment: its text is
			// indexed and shown with the outer message.
			body, rerr := io.ReadAll(io.LimitReader(part.Body, opts.MaxAttachmentBytes))
			if rerr != nil {
				m.problem("reading part %v: %v", path, rerr)
			}
			m.addAttachment(Attachment{Filename: filename, ContentType: mt, Inline: !strings.EqualFold(disp, "attachment")}, bytes.NewReader(body), opts)
			if inner, err := parse(body, opts, depth+1); err == nil {
				forwarded = append(forwarded, inner.forwardedText())
				for _, a := range inner.Attachments {
					if len(m.Attachments) < opts.MaxParts {
						m.Attachments = append(m.Attachments, a)
					}
				}
				for _, p := range inner.Problems {
					m.problem("forwarded message: %s", p)
				}
			}
			return nil
		}
		if (mt == "text/plain" || mt == "text/html") && !isAttachment {
			body, rerr := io.ReadAll(io.LimitReader(part.Body, int64(opts.MaxTextBytes)+1))
			if rerr != nil {
				m.problem("reading part %v: %v", path, rerr)
			}
			if looksBinary(body) {
				// Binary bytes labelled as text are never indexed as text.
				m.addAttachment(Attachment{Filename: filename, ContentType: "application/octet-stream"}, io.MultiReader(bytes.NewReader(body), part.Body), opts)
				return nil
			}
			texts.add(path, parents, mt == "text/html", toUTF8(body))
			return nil
		}
		m.addAttachment(Attachment{Filename: filename, ContentType: mt, Inline: strings.EqualFold(disp, "inline")}, part.Body, opts)
		return nil
	})
	if walkErr != nil {
		m.problem("mime structure: %v", walkErr)
	}
	m.Text, m.HTMLOnly = texts.text()
	switch {
	case m.Text != "":
	case walkErr != nil && len(m.Attachments) == 0:
		// Broken structure with nothing extracted: index the raw body so
		// the message can still be found.
		if i := bytes.Index(raw, []byte("\n\n")); i >= 0 {
			m.Text = toUTF8(raw[i+2:])
		}
	}
	for _, f := range forwarded {
		m.Text = strings.TrimSpace(m.Text + "\n\n" + f)
	}
	m.Text = clampText(strings.TrimSpace(normalizeNewlines(m.Text)), opts.MaxTextBytes)
	return m, nil
}

// addAttachment hashes (and, within the size limit, keeps) one part.
func (m *Message) addAttachment(a Attachment, body io.Reader, opts Options) {
	hasher := sha256.New()
	var buf bytes.Buffer
	n, err := io.Copy(io.MultiWriter(hasher, &limitedBuffer{b: &buf, max: opts.MaxAttachmentBytes}), body)
	if err != nil {
		m.problem("reading attachment %d: %v", len(m.Attachments), err)
	}
	a.Size = n
	a.SHA256 = hex.EncodeToString(hasher.Sum(nil))
	if n <= opts.MaxAttachmentBytes {
		a.Data = buf.Bytes()
	}
	m.Attachments = append(m.Attachments, a)
}

// forwardedText renders a forwarded message for the outer message's text,
// the way mail clients quote one, so its words and headers are searchable.
func (m *Message) forwardedText() string {
	var b strings.Builder
	b.WriteString("---------- Forwarded message ----------\n")
	line := func(k, v string) {
		if v != "" {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	addrs := func(l []Address) string {
		out := make([]string, len(l))
		for i, a := range l {
			out[i] = a.String()
		}
		return strings.Join(out, ", ")
	}
	line("From", addrs(m.From))
	if !m.Date.IsZero() {
		line("Date", m.Date.Format(time.RFC1123Z))
	}
	line("Subject", m.Subject)
	line("To", addrs(m.To))
	line("Cc", addrs(m.Cc))
	b.WriteString("\n")
	b.WriteString(m.Text)
	return b.String()
}

// looksBinary reports whether decoded "text" is really binary data: a NUL
// byte, or many control characters, in its first 4 KiB.
func looksBinary(b []byte) bool {
	head := b[:min(len(b), 4096)]
	ctl := 0
	for _, c := range head {
		switch {
		case c == 0:
			return true
		case c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b:
			ctl++
		}
	}
	return ctl > 8 && ctl*20 > len(head)
}

var (
	mediaTypePattern = lazyre.New(`^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+$`)
	paramPattern     = lazyre.New(`(?i);\s*([a-z0-9*_-]+)\s*=\s*("[^"]*"?|[^;]*)`)
)

// salvageParams reads a Content-Type or Content-Disposition value that
// mime.ParseMediaType refused: the leading token, and name=value pairs
// where a value may be unquoted and hold spaces.
func salvageParams(v string) (string, map[string]string) {
	v = strings.TrimSpace(v)
	head, _, _ := strings.Cut(v, ";")
	head = strings.ToLower(strings.TrimSpace(head))
	if strings.Contains(head, "/") && !mediaTypePattern.MatchString(head) {
		head = "application/octet-stream"
	}
	params := map[string]string{}
	for _, p := range paramPattern.FindAllStringSubmatch(v, 20) {
		k := strings.TrimSuffix(strings.ToLower(p[1]), "*")
		val := strings.TrimSpace(strings.Trim(strings.TrimSpace(p[2]), `"`))
		if _, ok := params[k]; !ok && val != "" {
			params[k] = val
		}
	}
	return head, params
}

var charsetPattern = lazyre.New(`(?i)charset\s*=\s*"?([a-z0-9_.:-]+)`)

// declaredCharset is the first charset a message declares anywhere (its
// own Content-Type or a body part's): the best guess for raw 8-bit header
// bytes, which RFC 5322 forbids but real mail sends in that charset.
func declaredCharset(raw []byte) string {
	head := raw[:min(len(raw), 256<<10)]
	if m := charsetPattern.FindSubmatch(head); m != nil {
		return string(m[1])
	}
	return ""
}

// fixHeaderBytes rewrites the address and subject fields holding raw
// non-UTF-8 bytes into UTF-8 before they are parsed, so invalid UTF-8 is
// never stored and address parsing does not fail on it.
func fixHeaderBytes(h message.Header, charset string) {
	for _, k := range []string{"Subject", "From", "To", "Cc", "Bcc", "Reply-To"} {
		if v := h.Get(k); v != "" && !utf8.ValidString(v) {
			h.Set(k, fixBytes(v, charset))
		}
	}
}

// fixBytes returns s as valid UTF-8: unchanged when it already is, else
// decoded from charset when that yields valid text, else as Windows-1252
// (like bodies without a usable charset).
func fixBytes(s, charset string) string {
	if utf8.ValidString(s) {
		return s
	}
	if cs := strings.ToLower(charset); cs != "" && cs != "utf-8" && cs != "utf8" && cs != "us-ascii" {
		if r, err := message.CharsetReader(cs, strings.NewReader(s)); err == nil {
			if b, err := io.ReadAll(r); err == nil && utf8.Valid(b) && !bytes.ContainsRune(b, utf8.RuneError) {
				return string(b)
			}
		}
	}
	return toUTF8([]byte(s))
}

// lowerDomain lower-cases an address's domain (case-insensitive by RFC
// 5321) and keeps its local part as written: people read and reply to the
// address they were given.
func lowerDomain(a string) string {
	a = strings.TrimSpace(a)
	if i := strings.LastIndexByte(a, '@'); i >= 0 {
		return a[:i] + strings.ToLower(a[i:])
	}
	return a
}

// StripEnvelope drops a leading mbox envelope line ("From addr date"),
// which mail tools leave at the top of single-message files (Maildir files
// copied out of mbox, the SpamAssassin corpus, procmail deliveries). It is
// not a header field: parsed as one it would hide every real header.
func StripEnvelope(raw []byte) []byte {
	if !bytes.HasPrefix(raw, []byte("From ")) {
		return raw
	}
	if i := bytes.IndexByte(raw, '\n'); i >= 0 {
		return raw[i+1:]
	}
	return nil
}

var errTooManyParts = errors.New("too many MIME parts")

func (m *Message) problem(format string, args ...any) {
	if len(m.Problems) < 20 {
		m.Problems = append(m.Problems, fmt.Sprintf(format, args...))
	}
}

func (m *Message) readHeader(h gomail.Header) {
	if id, err := h.MessageID(); err == nil {
		m.MessageID = id
	} else if v := strings.TrimSpace(h.Get("Message-Id")); v != "" {
		m.problem("message-id: %v", err)
		m.MessageID = strings.Trim(strings.Fields(v)[0], "<>")
	}
	m.InReplyTo = msgIDs(h, "In-Reply-To")
	m.References = msgIDs(h, "References")
	subj, err := h.Subject()
	if err != nil {
		m.problem("subject: %v", err)
		subj = toUTF8([]byte(h.Get("Subject")))
	}
	m.Subject = strings.TrimSpace(collapseSpace(fixBytes(subj, "")))
	m.From = m.addresses(h, "From")
	m.To = m.addresses(h, "To")
	m.Cc = m.addresses(h, "Cc")
	m.Bcc = m.addresses(h, "Bcc")
	m.ReplyTo = m.addresses(h, "Reply-To")
	m.Date = parseDate(h.Get("Date"))
	if m.Date.IsZero() && h.Get("Date") != "" {
		m.problem("date: cannot parse %q", truncate(h.Get("Date"), 60))
	}
	m.GmailThreadID = strings.TrimSpace(h.Get("X-GM-THRID"))
}

// msgIDs reads In-Reply-To/References leniently: the strict parser stops at
// the first bad id, so fall back to anything between angle brackets.
func msgIDs(h gomail.Header, key string) []string {
	ids, err := h.MsgIDList(key)
	if err == nil {
		return ids
	}
	var out []string
	for _, m := range anglePattern.FindAllStringSubmatch(h.Get(key), 50) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

var anglePattern = lazyre.New(`<([^<>\s]+)>`)

func (m *Message) addresses(h gomail.Header, key string) []Address {
	v := h.Get(key)
	if strings.TrimSpace(v) == "" {
		return nil
	}
	list, err := h.AddressList(key)
	if err == nil {
		out := make([]Address, 0, len(list))
		for _, a := range list {
			name := strings.TrimSpace(a.Name)
			if strings.Contains(name, "=?") {
				// RFC 2047 forbids encoded words inside quoted strings,
				// but common mailers put them there and every reader decodes them.
				name = decodeWord(name)
			}
			out = append(out, Address{Name: fixBytes(name, ""), Addr: fixBytes(lowerDomain(a.Address), "")})
		}
		return out
	}
	m.problem("%s: %v", strings.ToLower(key), err)
	return lenientAddresses(decodeWord(v))
}

var addrPattern = lazyre.New(`[^\s<>,;:"()\[\]]+@[^\s<>,;:"()\[\]]+`)

// lenientAddresses salvages addresses from a header the RFC 5322 parser
// rejected (unquoted commas, missing brackets, stray junk).
func lenientAddresses(v string) []Address {
	var out []Address
	for _, piece := range strings.Split(v, ",") {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			continue
		}
		if a, err := mail.ParseAddress(piece); err == nil {
			out = append(out, Address{Name: fixBytes(decodeWord(a.Name), ""), Addr: fixBytes(lowerDomain(a.Address), "")})
			continue
		}
		addr := addrPattern.FindString(piece)
		name := strings.TrimSpace(strings.Trim(strings.Replace(piece, "<"+addr+">", "", 1), `" `))
		if name == addr {
			name = ""
		}
		out = append(out, Address{Name: fixBytes(name, ""), Addr: fixBytes(lowerDomain(addr), "")})
		if len(out) >= 200 {
			break
		}
	}
	return out
}

var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"2 Jan 2006 15:04:05 -0700",
	"Mon, 2 Jan 2006 15:04 -0700",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006",
	"Mon, 2 Jan 2006 15:04:05",
	time.RFC3339,
}

func parseDate(v string) time.Time {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}
	}
	if t, err := mail.ParseDate(v); err == nil {
		return t
	}
	// Drop trailing comments like "(PST)" and retry with looser layouts.
	if i := strings.Index(v, "("); i > 0 {
		v = strings.TrimSpace(v[:i])
	}
	v = collapseSpace(v)
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// toUTF8 returns valid UTF-8. go-message already decoded the transfer
// encoding and any known charset; for an unknown or absent charset invalid
// UTF-8 is read as Windows-1252, which keeps ASCII words searchable.
func toUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	if s, err := charmap.Windows1252.NewDecoder().Bytes(b); err == nil {
		return string(s)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

var wordDecoder = mime.WordDecoder{CharsetReader: func(cs string, r io.Reader) (io.Reader, error) {
	return message.CharsetReader(cs, r)
}}

// decodeWord decodes RFC 2047 encoded words, keeping the input on failure.
func decodeWord(s string) string {
	if !strings.Contains(s, "=?") {
		return s
	}
	if d, err := wordDecoder.DecodeHeader(s); err == nil {
		return d
	}
	return s
}

// cleanHeader keeps only well-formed header lines (and their folded
// continuations) of raw's header block, followed by the untouched body.
func cleanHeader(raw []byte) []byte {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	inBody := false
	keep := false
	fields := 0
	for sc.Scan() {
		line := sc.Text()
		if inBody {
			out.WriteString(line)
			out.WriteByte('\n')
			continue
		}
		trimmed := strings.TrimRight(line, "\r")
		if trimmed == "" {
			inBody = true
			out.WriteString("\n")
			continue
		}
		if trimmed[0] == ' ' || trimmed[0] == '\t' {
			if keep {
				out.WriteString(trimmed)
				out.WriteByte('\n')
			}
			continue
		}
		i := strings.IndexByte(trimmed, ':')
		keep = i > 0 && validFieldName(trimmed[:i])
		if !keep && fields == 0 {
			// No header at all: the text starts right away.
			inBody = true
			out.WriteString("\n" + line + "\n")
			continue
		}
		if keep {
			fields++
			out.WriteString(toUTF8([]byte(trimmed)))
			out.WriteByte('\n')
		}
	}
	if !inBody {
		out.WriteString("\n")
	}
	return out.Bytes()
}

func validFieldName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 32 || c >= 127 {
			return false
		}
	}
	return true
}

var (
	// One pattern per element: Go's regexp has no backreferences, and a
	// shared one let "<head>" end at a later "</script>", eating the body.
	scriptBlock = lazyre.New(`(?is)<script\b.*?</script\s*>`)
	styleBlock  = lazyre.New(`(?is)<style\b.*?</style\s*>`)
	titleBlock  = lazyre.New(`(?is)<title\b.*?</title\s*>`)
	headBlock   = lazyre.New(`(?is)<head\b.*?</head\s*>`)
	headOpen    = lazyre.New(`(?i)<head\b`)
	bodyOpen    = lazyre.New(`(?i)<body\b`)
	blockTag    = lazyre.New(`(?i)<\s*(br|/p|/div|/tr|/li|/h[1-6]|/table|hr)\b[^>]*>`)
	anyTag      = lazyre.New(`(?s)<[^>]*>`)
	comment     = lazyre.New(`(?s)<!--.*?-->`)
	spaces      = lazyre.New(`[ \t\x{00a0}]+`)
	blankLines  = lazyre.New(`\n\s*\n\s*\n+`)
)

// HTMLToText renders an HTML body to readable text: head, scripts and
// styles dropped, block ends turned into newlines, entities decoded. Broken
// markup (an unclosed <head>, a </head> after the body) never costs the
// body text.
func HTMLToText(s string) string {
	s = comment.ReplaceAllString(s, "")
	s = dropHead(s)
	s = scriptBlock.ReplaceAllString(s, "")
	s = styleBlock.ReplaceAllString(s, "")
	s = titleBlock.ReplaceAllString(s, "")
	s = blockTag.ReplaceAllString(s, "\n")
	s = anyTag.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = spaces.ReplaceAllString(s, " ")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankLines.ReplaceAllString(s, "\n\n"))
}

// dropHead removes the document head. The head ends where the body starts
// whether or not </head> was written (HTML's own rule); without a <body>
// tag only a properly closed head is removed.
func dropHead(s string) string {
	h := headOpen.FindStringIndex(s)
	if h == nil {
		return s
	}
	if b := bodyOpen.FindStringIndex(s[h[0]:]); b != nil {
		return s[:h[0]] + s[h[0]+b[0]:]
	}
	return headBlock.ReplaceAllString(s, "")
}

func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func clampText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// limitedBuffer writes at most max bytes to b and silently drops the rest,
// so a huge attachment is still hashed in full without being held.
type limitedBuffer struct {
	b   *bytes.Buffer
	max int64
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	room := l.max - int64(l.b.Len())
	if room > 0 {
		if int64(len(p)) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}
