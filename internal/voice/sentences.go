package voice

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Splitter cuts a streamed reply into pieces to speak one by one, so the
// first sentence is spoken while the model is still writing the rest. The
// pieces partition the text exactly (joined they give it back), and where
// the text is cut does not depend on how it arrived in deltas: a cut is
// decided only once the character after it is known.
//
// A piece ends after ., !, ?, … or ; (and any closing quotes or brackets)
// followed by white space, at a line break, or, in a long run without
// either, at the last space before MaxLen runes. Not cut: abbreviations
// ("e.g. ", "Dr. "), single initials ("J. Smith"), a list number at the
// start of a line ("2. "), and decimals ("3.5", no space follows). A code
// block (``` … ```) is one piece of its own, which the speaker skips.
type Splitter struct {
	// MaxLen bounds a piece without a sentence end (default 240 runes).
	MaxLen int
	// MinLen keeps a sentence shorter than this many runes (white space
	// aside) with the next one, so that each speech request carries
	// enough to sound natural ("Ok." alone is a request of its own); a
	// line break still ends a piece. Zero cuts at every sentence end.
	MinLen int
	buf    string
}

// Push adds a delta and returns the pieces it completed.
func (s *Splitter) Push(text string) []string {
	s.buf += text
	var out []string
	for {
		n := s.cut()
		if n <= 0 {
			return out
		}
		out = append(out, s.buf[:n])
		s.buf = s.buf[n:]
	}
}

// Flush returns what is left (the reply ended).
func (s *Splitter) Flush() string {
	rest := s.buf
	s.buf = ""
	return rest
}

func (s *Splitter) maxLen() int {
	if s.MaxLen <= 0 {
		return 240
	}
	return s.MaxLen
}

// cut returns the byte length of the first complete piece of s.buf, or 0.
func (s *Splitter) cut() int {
	b := s.buf
	if atFence(b, 0) {
		// A code block runs to the end of its closing fence line.
		nl := strings.IndexByte(b, '\n')
		if nl < 0 {
			return 0
		}
		for i := nl + 1; i < len(b); {
			nl := strings.IndexByte(b[i:], '\n')
			if nl < 0 {
				return 0
			}
			if atFence(b, i) {
				return i + nl + 1
			}
			i += nl + 1
		}
		return 0
	}
	runes := 0
	lastSpace := -1
	for i, r := range b {
		if runes == s.maxLen() && lastSpace > 0 {
			return lastSpace
		}
		runes++
		switch {
		case r == '\n':
			// A fence starting on the next line closes this piece too.
			return i + 1
		case unicode.IsSpace(r):
			lastSpace = i + utf8.RuneLen(r)
		case strings.ContainsRune(".!?…;", r):
			end := i + utf8.RuneLen(r)
			for end < len(b) && strings.ContainsRune(`"'”’)]»`, rune(b[end])) {
				end++
			}
			if end >= len(b) {
				return 0 // the next character decides
			}
			next, _ := utf8.DecodeRuneInString(b[end:])
			if !unicode.IsSpace(next) || (r == '.' && noStop(b[:i])) {
				continue
			}
			// The cut takes the white space after it (up to a line
			// break, which ends a piece of its own) into the piece.
			for end < len(b) && b[end] != '\n' {
				c, w := utf8.DecodeRuneInString(b[end:])
				if !unicode.IsSpace(c) {
					break
				}
				end += w
			}
			if end >= len(b) {
				return 0 // more white space may follow
			}
			if s.MinLen > 0 && utf8.RuneCountInString(strings.TrimSpace(b[:end])) < s.MinLen {
				continue // too short alone: it goes with the next sentence
			}
			return end
		}
	}
	return 0
}

// atFence reports whether a line starting at i opens or closes a code
// block.
func atFence(b string, i int) bool {
	return strings.HasPrefix(strings.TrimLeft(b[i:min(len(b), i+8)], " "), "```")
}

var abbreviations = map[string]bool{
	"e.g": true, "i.e": true, "mr": true, "mrs": true, "ms": true, "dr": true, "st": true,
	"vs": true, "prof": true, "approx": true, "no": true, "fig": true, "cf": true, "jr": true, "sr": true,
}

// noStop reports whether the full stop ending before points at an
// abbreviation, an initial or a list number rather than a sentence end.
func noStop(before string) bool {
	start := strings.LastIndexFunc(before, unicode.IsSpace) + 1
	word := before[start:]
	if abbreviations[strings.ToLower(word)] {
		return true
	}
	if r, n := utf8.DecodeRuneInString(word); n == len(word) && unicode.IsUpper(r) {
		return true // an initial
	}
	if len(word) <= 2 && word != "" && strings.Trim(word, "0123456789") == "" {
		// "2. " at the start of a line is a list item, not an end.
		line := strings.LastIndexByte(before, '\n') + 1
		return strings.TrimSpace(before[line:start]) == ""
	}
	return false
}

var (
	mdLink     = lazyre.New(`\[([^\]]*)\]\([^)]*\)`)
	mdURL      = lazyre.New(`https?://\S+`)
	mdHeading  = lazyre.New(`^\s*#{1,6}\s+`)
	mdListItem = lazyre.New(`^\s*(?:[-*+]|\d{1,2}[.)])\s+`)
	mdTable    = lazyre.New(`^\s*\|.*\|\s*$`)
	mdMarks    = strings.NewReplacer("**", "", "__", "", "`", "", "~~", "", "> ", "")
	// Single emphasis: *word* anywhere, _word_ only outside a word, so
	// snake_case and "2 * 3" stay as written.
	mdEmphasis = lazyre.New(`\*([^*\s](?:[^*]*[^*\s])?)\*|\b_([^_\s](?:[^_]*[^_\s])?)_\b`)
)

// Speakable turns one piece into what is read aloud: Markdown marks,
// list bullets and headings go, links keep their text, bare URLs become
// "a link", tables and code blocks are skipped (they are in the chat).
// It returns "" when nothing is worth saying.
func Speakable(piece string) string {
	p := strings.TrimSpace(piece)
	if strings.HasPrefix(p, "```") || mdTable.MatchString(p) {
		return ""
	}
	p = mdLink.ReplaceAllString(p, "$1")
	p = mdURL.ReplaceAllString(p, "a link")
	p = mdHeading.ReplaceAllString(p, "")
	p = mdListItem.ReplaceAllString(p, "")
	p = mdMarks.Replace(p)
	p = mdEmphasis.ReplaceAllString(p, "$1$2")
	p = strings.Join(strings.Fields(p), " ")
	if !strings.ContainsFunc(p, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return ""
	}
	return p
}
