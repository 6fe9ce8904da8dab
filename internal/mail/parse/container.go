package parse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Flags are the per-copy message flags the mirror tracks.
type Flags struct {
	Seen     bool `json:"seen"`
	Answered bool `json:"answered"`
	Flagged  bool `json:"flagged"`
	Draft    bool `json:"draft"`
	Deleted  bool `json:"deleted"`
	Junk     bool `json:"junk,omitempty"`
}

// MaildirFlags reads the flags from a Maildir file name's info suffix
// (":2,FRS"; "!2," on filesystems where ':' is not allowed).
func MaildirFlags(name string) Flags {
	var f Flags
	i := strings.LastIndex(name, ":2,")
	if i < 0 {
		i = strings.LastIndex(name, "!2,")
	}
	if i < 0 {
		return f
	}
	for _, c := range name[i+3:] {
		switch c {
		case 'S':
			f.Seen = true
		case 'R':
			f.Answered = true
		case 'F':
			f.Flagged = true
		case 'D':
			f.Draft = true
		case 'T':
			f.Deleted = true
		}
	}
	return f
}

// MaildirBase strips the info suffix, giving the part of a Maildir file name
// that stays the same when flags change.
func MaildirBase(name string) string {
	if i := strings.LastIndex(name, ":2,"); i >= 0 {
		return name[:i]
	}
	if i := strings.LastIndex(name, "!2,"); i >= 0 {
		return name[:i]
	}
	return name
}

// Emlx is an Apple Mail .emlx file split into its parts.
type Emlx struct {
	Message []byte // the RFC 5322 message
	Flags   Flags
	Partial bool // a .partial.emlx: Mail has not downloaded every part
	// ConversationID is Mail's own thread id from the plist trailer; 0 when absent.
	ConversationID int64
}

// ErrNotEmlx is returned for input without the leading byte count line.
var ErrNotEmlx = errors.New("not an emlx file: missing byte count line")

var plistInt = lazyre.New(`<key>([^<]+)</key>\s*<integer>(-?\d+)</integer>`)

// ParseEmlx splits an .emlx file: a decimal byte count line, that many bytes
// of message, then an XML property list with Mail's flags. A count larger
// than the file (truncated download) keeps what is there.
func ParseEmlx(data []byte, partial bool) (*Emlx, error) {
	nl := bytes.IndexByte(data, '\n')
	if nl <= 0 || nl > 32 {
		return nil, ErrNotEmlx
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data[:nl])))
	if err != nil || n < 0 {
		return nil, ErrNotEmlx
	}
	rest := data[nl+1:]
	e := &Emlx{Partial: partial}
	if n > len(rest) {
		n = len(rest)
	}
	e.Message = rest[:n]
	for _, m := range plistInt.FindAllSubmatch(rest[n:], 20) {
		v, err := strconv.ParseInt(string(m[2]), 10, 64)
		if err != nil {
			continue
		}
		switch string(m[1]) {
		case "flags":
			e.Flags = emlxFlags(v)
		case "conversation-id":
			e.ConversationID = v
		}
	}
	return e, nil
}

// emlxFlags decodes Mail's flag bit field: bit 0 read, 1 deleted, 2
// answered, 4 flagged, 6 draft, 24 junk.
func emlxFlags(v int64) Flags {
	return Flags{
		Seen:     v&(1<<0) != 0,
		Deleted:  v&(1<<1) != 0,
		Answered: v&(1<<2) != 0,
		Flagged:  v&(1<<4) != 0,
		Draft:    v&(1<<6) != 0,
		Junk:     v&(1<<24) != 0,
	}
}

// MboxMessage is one message split out of an mbox file.
type MboxMessage struct {
	Offset int64  // byte offset of its "From " separator line
	Raw    []byte // the message, with mboxrd ">From " quoting removed
}

// MboxReader splits an mbox file (RFC 4155; mboxo, mboxrd and mboxcl).
// A message starts at a "From " envelope line: "From " followed by an
// address (or "-") and usually a date, at the start of the file or after a
// blank line, or directly followed by a header field. Other lines starting
// "From " are body text. A Content-Length header (mboxcl) is honoured when
// the declared end really is the end of the message, so unquoted "From "
// lines inside such a body do not split it.
type MboxReader struct {
	r       *bufio.Reader
	off     int64 // offset of the next byte read from r
	back    []mboxLine
	pending *mboxLine // the separator line already read for the next message
	started bool
	maxSize int
}

type mboxLine struct {
	b   []byte
	off int64
}

// NewMboxReader reads messages from r; messages larger than maxSize bytes
// (default 64 MiB) are truncated rather than exhausting memory.
func NewMboxReader(r io.Reader, maxSize int) *MboxReader {
	if maxSize <= 0 {
		maxSize = 64 << 20
	}
	return &MboxReader{r: bufio.NewReaderSize(r, 64*1024), maxSize: maxSize}
}

// ErrNotMbox is returned when the input does not start with a "From " line.
var ErrNotMbox = errors.New("not an mbox file: first line does not start with \"From \"")

// Next returns the next message or io.EOF.
func (m *MboxReader) Next() (*MboxMessage, error) {
	if !m.started {
		m.started = true
		l, err := m.line()
		if len(l.b) == 0 && err != nil {
			return nil, io.EOF
		}
		// Files saved by Windows editors and some exporters begin with a
		// UTF-8 byte order mark; it is not part of the first message.
		if bom := []byte("\xef\xbb\xbf"); bytes.HasPrefix(l.b, bom) {
			l.b, l.off = l.b[len(bom):], l.off+int64(len(bom))
		}
		if !bytes.HasPrefix(l.b, []byte("From ")) {
			return nil, ErrNotMbox
		}
		m.pending = &l
	}
	if m.pending == nil {
		return nil, io.EOF
	}
	msg := &MboxMessage{Offset: m.pending.off}
	m.pending = nil
	var (
		lines      []mboxLine // the message's lines, kept for a Content-Length retry
		size       int
		inHeader   = true
		clen       = -1 // declared body length, -1 when absent or distrusted
		bodyStart  = -1 // index in lines of the first body line
		bodyBytes  = 0
		prevBlank  = false
		distrusted = false
	)
	// distrust drops a Content-Length that does not end at a message
	// boundary and rereads the body by separator lines.
	distrust := func() {
		for i := len(lines) - 1; i >= bodyStart; i-- {
			m.back = append(m.back, lines[i])
		}
		lines = lines[:bodyStart]
		size = 0
		for _, x := range lines {
			size += len(x.b)
		}
		clen, bodyBytes, distrusted = -1, 0, true
		prevBlank = true // the header/body separator
	}
	for {
		l, err := m.line()
		if len(l.b) > 0 {
			protected := !inHeader && clen >= 0 && bodyBytes < clen
			if !protected && isEnvelope(l.b) {
				next, _ := m.peek()
				if prevBlank || looksLikeField(next.b) {
					m.pending = &l
					break
				}
			}
			if inHeader {
				if isBlank(l.b) {
					inHeader = false
					bodyStart = len(lines) + 1
				} else if v, ok := headerValue(l.b, "content-length"); ok && !distrusted {
					if n, err := strconv.Atoi(v); err == nil && n >= 0 && n <= m.maxSize {
						clen = n
					}
				}
			} else {
				bodyBytes += len(l.b)
			}
			// Past maxSize the rest is dropped (the message is truncated),
			// unless it may have to be reread for a Content-Length retry.
			if size += len(l.b); size <= m.maxSize || clen >= 0 {
				lines = append(lines, l)
			}
			prevBlank = isBlank(l.b)
			if !inHeader && clen >= 0 && bodyBytes >= clen && !m.endsHere(bodyBytes == clen) {
				distrust()
				continue
			}
			if !inHeader && clen >= 0 && bodyBytes == clen {
				clen = -1 // satisfied: what follows is the next separator
			}
		}
		if err == io.EOF {
			if !inHeader && clen >= 0 && bodyBytes < clen {
				distrust() // the input ended inside the declared body
				continue
			}
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading mbox at byte %d: %w", m.off, err)
		}
	}
	var buf bytes.Buffer
	for _, l := range lines {
		if q := unquoteFrom(l.b); buf.Len()+len(q) <= m.maxSize {
			buf.Write(q)
		}
	}
	raw := buf.Bytes()
	// The blank line before the next separator belongs to the mbox format,
	// not the message.
	raw = bytes.TrimSuffix(raw, []byte("\n"))
	raw = bytes.TrimSuffix(raw, []byte("\r"))
	msg.Raw = raw
	return msg, nil
}

// endsHere reports whether the input after a Content-Length body is a
// message boundary: the end of input, or (after at most one blank line)
// an envelope line. exact is false when the body overshot the length
// mid-line, which is never a boundary.
func (m *MboxReader) endsHere(exact bool) bool {
	if !exact {
		return false
	}
	a, err := m.peek()
	if len(a.b) == 0 && err != nil {
		return true
	}
	if isEnvelope(a.b) {
		return true
	}
	if !isBlank(a.b) {
		return false
	}
	// Look one line further without losing either line.
	first, _ := m.line()
	b, err := m.peek()
	m.back = append(m.back, first)
	return (len(b.b) == 0 && err != nil) || isEnvelope(b.b)
}

func (m *MboxReader) line() (mboxLine, error) {
	if n := len(m.back); n > 0 {
		l := m.back[n-1]
		m.back = m.back[:n-1]
		return l, nil
	}
	off := m.off
	b, err := m.r.ReadBytes('\n')
	m.off += int64(len(b))
	return mboxLine{b: b, off: off}, err
}

// peek returns the next line without consuming it.
func (m *MboxReader) peek() (mboxLine, error) {
	l, err := m.line()
	if len(l.b) > 0 {
		m.back = append(m.back, l)
	}
	return l, err
}

var envelopeDate = lazyre.New(`\d{1,2}:\d{2}.*\d{4}|\d{4}.*\d{1,2}:\d{2}`)

// isEnvelope reports whether line is shaped like an mbox envelope line:
// "From " and then an address, "-" (Netscape, Mozilla) or a date.
func isEnvelope(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("From ")) {
		return false
	}
	rest := bytes.TrimSpace(line[5:])
	f := bytes.Fields(rest)
	if len(f) == 0 {
		return true
	}
	return bytes.Equal(f[0], []byte("-")) || bytes.IndexByte(f[0], '@') > 0 || bytes.Equal(f[0], []byte("MAILER-DAEMON")) || envelopeDate.Match(rest)
}

func isBlank(line []byte) bool { return len(bytes.TrimRight(line, "\r\n")) == 0 }

// looksLikeField reports whether line is a header field ("Name: value").
func looksLikeField(line []byte) bool {
	c := bytes.IndexByte(line, ':')
	return c > 0 && validFieldName(string(line[:c]))
}

// headerValue returns the value of header line l when its name is key.
func headerValue(l []byte, key string) (string, bool) {
	c := bytes.IndexByte(l, ':')
	if c <= 0 || !strings.EqualFold(string(l[:c]), key) {
		return "", false
	}
	return strings.TrimSpace(string(l[c+1:])), true
}

// unquoteFrom undoes mboxrd quoting: ">From " → "From ", ">>From " → ">From ".
func unquoteFrom(line []byte) []byte {
	i := 0
	for i < len(line) && line[i] == '>' {
		i++
	}
	if i > 0 && bytes.HasPrefix(line[i:], []byte("From ")) {
		return line[1:]
	}
	return line
}

// LooksLikeMbox reports whether data starts like an mbox file.
func LooksLikeMbox(head []byte) bool { return bytes.HasPrefix(head, []byte("From ")) }

// LooksLikeMessage reports whether data starts with something shaped like a
// header field, so stray non-mail files in a tree are skipped.
func LooksLikeMessage(head []byte) bool {
	head = StripEnvelope(head)
	line := head
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		line = head[:i]
	}
	c := bytes.IndexByte(line, ':')
	return c > 0 && validFieldName(string(line[:c]))
}
