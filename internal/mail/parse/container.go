package parse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
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

var plistInt = regexp.MustCompile(`<key>([^<]+)</key>\s*<integer>(-?\d+)</integer>`)

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

// MboxReader splits an mbox file (mboxo/mboxrd: messages start at a line
// beginning with "From " at the file start or after a blank line).
type MboxReader struct {
	r       *bufio.Reader
	off     int64
	pending []byte // the separator line already read for the next message
	pendOff int64
	started bool
	maxSize int
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
		line, err := m.readLine()
		if len(line) == 0 && err != nil {
			return nil, io.EOF
		}
		if !bytes.HasPrefix(line, []byte("From ")) {
			return nil, ErrNotMbox
		}
		m.pending, m.pendOff = line, 0
	}
	if m.pending == nil {
		return nil, io.EOF
	}
	msg := &MboxMessage{Offset: m.pendOff}
	m.pending = nil
	var buf bytes.Buffer
	for {
		lineOff := m.off
		line, err := m.readLine()
		if len(line) > 0 {
			// Any line starting "From " separates messages: mboxo/mboxrd
			// writers quote such body lines as ">From ".
			if bytes.HasPrefix(line, []byte("From ")) {
				m.pending, m.pendOff = line, lineOff
				break
			}
			if q := unquoteFrom(line); buf.Len()+len(q) <= m.maxSize {
				buf.Write(q)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading mbox at byte %d: %w", m.off, err)
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

func (m *MboxReader) readLine() ([]byte, error) {
	line, err := m.r.ReadBytes('\n')
	m.off += int64(len(line))
	return line, err
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
