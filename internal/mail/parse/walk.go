package parse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/textproto"
)

// readEntity reads a message the way message.Read does, but decodes
// quoted-printable leniently (see newEntity).
func readEntity(r io.Reader) (*message.Entity, error) {
	br := bufio.NewReader(r)
	h, err := textproto.ReadHeader(br)
	if err != nil {
		return nil, err
	}
	return newEntity(message.Header{Header: h}, br)
}

// newEntity is message.New with a lenient quoted-printable decoder: the
// standard one stops the whole part at the first escape it cannot read (a
// line of "=====" is enough), where mail clients keep the '=' and go on.
func newEntity(h message.Header, body io.Reader) (*message.Entity, error) {
	mt, _, _ := h.ContentType()
	if strings.HasPrefix(mt, "multipart/") || !strings.EqualFold(strings.TrimSpace(h.Get("Content-Transfer-Encoding")), "quoted-printable") {
		return message.New(h, body)
	}
	plain := h.Copy()
	plain.Del("Content-Transfer-Encoding")
	e, err := message.New(plain, newLenientQP(body))
	if e != nil {
		e.Header = h
	}
	return e, err
}

// walkFunc is called for each part; parents holds the media types of the
// multipart containers above it, outermost first.
type walkFunc func(path []int, parents []string, part *message.Entity, err error) error

// walk visits e's MIME tree depth first like message.Entity.Walk, building
// parts with newEntity and telling each part which containers hold it.
func walk(e *message.Entity, fn walkFunc) error {
	type level struct {
		mr *textproto.MultipartReader
		mt string
	}
	var stack []level
	var path []int
	var parents []string
	part := e
	for {
		var err error
		if part == nil {
			if len(stack) == 0 {
				return nil
			}
			p, nerr := stack[len(stack)-1].mr.NextPart()
			if nerr == io.EOF {
				stack = stack[:len(stack)-1]
				path = path[:len(path)-1]
				parents = parents[:len(parents)-1]
				continue
			}
			if nerr != nil {
				return nerr
			}
			path[len(path)-1]++
			part, err = newEntity(message.Header{Header: p.Header}, p)
			if part == nil {
				return err
			}
			if err != nil && !message.IsUnknownEncoding(err) && !message.IsUnknownCharset(err) {
				return err
			}
		}
		if err := fn(append([]int(nil), path...), append([]string(nil), parents...), part, err); err != nil {
			return err
		}
		if mt, params, _ := part.Header.ContentType(); strings.HasPrefix(mt, "multipart/") {
			stack = append(stack, level{textproto.NewMultipartReader(part.Body, params["boundary"]), mt})
			path = append(path, -1)
			parents = append(parents, mt)
		}
		part = nil
	}
}

// lenientQP decodes quoted-printable (RFC 2045 §6.7) the way mail clients
// do: an '=' not followed by two hex digits is kept literally, other bytes
// pass through, and trailing whitespace and soft line breaks are removed.
type lenientQP struct {
	br      *bufio.Reader
	pending []byte
	err     error
}

func newLenientQP(r io.Reader) io.Reader { return &lenientQP{br: bufio.NewReader(r)} }

func (q *lenientQP) Read(p []byte) (int, error) {
	for len(q.pending) == 0 {
		if q.err != nil {
			return 0, q.err
		}
		line, err := q.br.ReadBytes('\n')
		if err != nil {
			q.err = err
		}
		q.pending = decodeQPLine(line, q.pending[:0])
	}
	n := copy(p, q.pending)
	q.pending = q.pending[n:]
	return n, nil
}

// decodeQPLine appends the decoded form of one line (with its line ending,
// if any) to out.
func decodeQPLine(line, out []byte) []byte {
	content := line
	eol := []byte(nil)
	switch {
	case bytes.HasSuffix(content, []byte("\r\n")):
		content, eol = content[:len(content)-2], line[len(line)-2:]
	case bytes.HasSuffix(content, []byte("\n")):
		content, eol = content[:len(content)-1], line[len(line)-1:]
	}
	content = bytes.TrimRight(content, " \t")
	if bytes.HasSuffix(content, []byte("=")) {
		content, eol = content[:len(content)-1], nil // soft line break
	}
	for i := 0; i < len(content); i++ {
		c := content[i]
		if c == '=' && i+2 < len(content) && isHex(content[i+1]) && isHex(content[i+2]) {
			out = append(out, unhex(content[i+1])<<4|unhex(content[i+2]))
			i += 2
			continue
		}
		out = append(out, c)
	}
	return append(out, eol...)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// bodyParts collects the inline text parts of a message in order, so the
// body can be assembled by MIME's rules: the parts of a multipart/mixed (or
// related) are all shown one after another, while the children of a
// multipart/alternative are the same content and only one is taken.
type bodyParts struct {
	parts []textPart
}

type textPart struct {
	group string // the enclosing multipart/alternative, "" when none
	alt   int    // which of that alternative's children holds the part
	html  bool
	text  string
}

func (b *bodyParts) add(path []int, parents []string, html bool, text string) {
	p := textPart{html: html, text: text}
	for k := len(parents) - 1; k >= 0; k-- {
		if parents[k] == "multipart/alternative" && k < len(path) {
			p.group = fmt.Sprint(path[:k])
			p.alt = path[k]
			break
		}
	}
	b.parts = append(b.parts, p)
}

// text assembles the body. Of an alternative's children the first with
// plain text is preferred (it is what the sender wrote as text; HTML is
// rendered lossily), else the first with HTML. htmlOnly reports that no
// plain text was used.
func (b *bodyParts) text() (text string, htmlOnly bool) {
	var out []string
	usedPlain, usedHTML := false, false
	emit := func(p textPart) {
		s := p.text
		if p.html {
			s = HTMLToText(s)
		}
		s = strings.TrimLeft(strings.TrimRight(s, " \t\r\n"), "\r\n")
		if strings.TrimSpace(s) == "" {
			return
		}
		out = append(out, s)
		if p.html {
			usedHTML = true
		} else {
			usedPlain = true
		}
	}
	done := map[string]bool{}
	for _, p := range b.parts {
		if p.group == "" {
			emit(p)
			continue
		}
		if done[p.group] {
			continue
		}
		done[p.group] = true
		chosen := b.chooseAlternative(p.group)
		for _, q := range b.parts {
			if q.group == p.group && q.alt == chosen {
				emit(q)
			}
		}
	}
	return strings.Join(out, "\n"), usedHTML && !usedPlain
}

func (b *bodyParts) chooseAlternative(group string) int {
	chosen, found := -1, false
	for _, wantHTML := range []bool{false, true} {
		for _, q := range b.parts {
			if q.group == group && q.html == wantHTML && strings.TrimSpace(q.text) != "" {
				return q.alt
			}
			if q.group == group && !found {
				chosen, found = q.alt, true
			}
		}
	}
	return chosen
}
