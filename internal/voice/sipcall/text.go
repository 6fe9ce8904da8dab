package sipcall

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sentencer cuts streamed reply text into sentences, so the first one is
// spoken while the model still writes the rest.
type sentencer struct {
	buf strings.Builder
}

// minSentence keeps very short pieces ("Ok.", "1.") with what follows, so
// each speech request carries enough to sound natural.
const minSentence = 12

// push adds streamed text and returns the sentences it completed.
func (s *sentencer) push(text string) []string {
	s.buf.WriteString(text)
	all := s.buf.String()
	var out []string
	start := 0
	for i := 0; i < len(all); {
		r, n := utf8.DecodeRuneInString(all[i:])
		i += n
		end := false
		switch r {
		case '\n':
			end = true
		case '.', '!', '?', '…', ';':
			// A sentence ends at punctuation followed by white space; a
			// decimal point or "e.g." mid-word does not end one.
			if i < len(all) {
				next, _ := utf8.DecodeRuneInString(all[i:])
				end = unicode.IsSpace(next)
			}
		}
		if end {
			piece := all[start:i]
			if len(strings.TrimSpace(piece)) >= minSentence || r == '\n' && strings.TrimSpace(piece) != "" {
				out = append(out, piece)
				start = i
			}
		}
	}
	rest := all[start:]
	s.buf.Reset()
	s.buf.WriteString(rest)
	return cleanAll(out)
}

// flush returns what is left at the end of the reply.
func (s *sentencer) flush() []string {
	rest := s.buf.String()
	s.buf.Reset()
	return cleanAll([]string{rest})
}

func cleanAll(in []string) []string {
	out := in[:0]
	for _, p := range in {
		if c := speakable(p); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// speakable strips the Markdown a reply is written in, so the voice does
// not read out asterisks, backticks, link targets or table bars.
func speakable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '*', '_', '`', '#', '|', '>', '~':
			// Emphasis, code, headings, tables, quotes: the words stay.
			if r == '_' && i > 0 && i+n < len(s) && isWordByte(s[i-1]) && isWordByte(s[i+n]) {
				b.WriteRune(r) // snake_case is a word
			} else {
				b.WriteByte(' ')
			}
			i += n
			continue
		case '[':
			// [text](url) reads as text.
			if close := strings.Index(s[i:], "]("); close > 0 {
				if end := strings.IndexByte(s[i+close:], ')'); end > 0 {
					b.WriteString(s[i+1 : i+close])
					i += close + end + 1
					continue
				}
			}
		}
		b.WriteRune(r)
		i += n
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
