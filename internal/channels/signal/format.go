package signal

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Signal's own limits on what one message may hold.
const (
	// splitAt is the Limits.MaxText given to the relay. signal-cli sends
	// a body over 2,000 characters as a "long text" attachment, which
	// every current client shows, but an inline body is quicker and is
	// what a linked device that missed the attachment still has.
	splitAt = 2000
	// maxBody truncates defensively: far below the 64 KiB Signal clients
	// accept as long text, never reached by the relay's pieces.
	maxBody = 4096
)

// Text styles signal-cli accepts in "start:length:STYLE".
const (
	styleBold      = "BOLD"
	styleItalic    = "ITALIC"
	styleMono      = "MONOSPACE"
	styleStrike    = "STRIKETHROUGH"
	styleSpoilered = "SPOILER"
)

// span styles part of a rendered message; start and length count UTF-16
// code units, as Signal's BodyRange does.
type span struct {
	Start, Length int
	Style         string
}

func (s span) String() string {
	return strconv.Itoa(s.Start) + ":" + strconv.Itoa(s.Length) + ":" + s.Style
}

// rendered is a message's plain text and the styles over it.
type rendered struct {
	Text  string
	Spans []span
}

// Styles are the spans as signal-cli's textStyle parameter takes them.
func (r rendered) Styles() []string {
	out := make([]string, len(r.Spans))
	for i, s := range r.Spans {
		out[i] = s.String()
	}
	return out
}

// styler writes plain text and records styled ranges over it.
type styler struct {
	b     strings.Builder
	n     int // UTF-16 code units written
	spans []span
}

func (s *styler) write(t string) {
	s.b.WriteString(t)
	s.n += utf16Len(t)
}

// wrap records style over what f writes (nothing when it writes nothing).
func (s *styler) wrap(style string, f func()) {
	start := s.n
	f()
	if s.n > start {
		s.spans = append(s.spans, span{Start: start, Length: s.n - start, Style: style})
	}
}

func utf16Len(t string) int {
	n := 0
	for _, r := range t { // an invalid byte reads (and is sent) as U+FFFD
		n += max(utf16.RuneLen(r), 1)
	}
	return n
}

// Render turns the assistant's Markdown into Signal's plain text plus
// style ranges: **bold** and headings BOLD, *italic* and _italic_ ITALIC,
// ~~strike~~ STRIKETHROUGH, ||spoiler|| SPOILER, `code` and fenced blocks
// MONOSPACE. The markers go; bullets become "•", links "text (url)".
// What Signal cannot show (tables, images, HTML) stays literal text.
// Code is opaque: nothing inside it is read as formatting.
func Render(md string) rendered {
	var s styler
	// Invalid bytes become U+FFFD first (as JSON would send them), so no
	// two fragments join into a character the offsets did not count.
	md = strings.ToValidUTF8(md, "\uFFFD")
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	inFence := false
	var code []string
	flush := func(last bool) {
		s.wrap(styleMono, func() { s.write(strings.Join(code, "\n")) })
		code = code[:0]
		if !last {
			s.write("\n")
		}
	}
	for i, line := range lines {
		last := i == len(lines)-1
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inFence {
				flush(last)
			}
			inFence = !inFence
			continue
		}
		if inFence {
			code = append(code, line)
			continue
		}
		renderLine(&s, line)
		if !last {
			s.write("\n")
		}
	}
	if inFence {
		flush(true) // an unclosed fence (a cut-off stream) still shows as code
	}
	return rendered{Text: s.b.String(), Spans: s.spans}
}

var (
	headingRe = lazyre.New(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	bulletRe  = lazyre.New(`^(\s*)[-*+]\s+`)
	// inlineRe finds the leftmost inline form: a code span, a link,
	// bold, strike, spoiler, italic with * (the character before must
	// not be a word character or another *), italic with _ (the same,
	// and the one after is checked in code: RE2 has no lookahead).
	inlineRe = lazyre.New("`([^`\\n]+)`" +
		`|\[([^\[\]\n]+)\]\((https?://[^\s()]+)\)` +
		`|\*\*([^*\n]+?)\*\*|__([^_\n]+?)__` +
		`|~~([^~\n]+?)~~` +
		`|\|\|([^|\n]+?)\|\|` +
		`|(^|[^\w*])\*([^*\s][^*\n]*?)\*` +
		`|(^|[^\w_])_([^_\s][^_\n]*?)_`)
)

func renderLine(s *styler, line string) {
	if m := headingRe.FindStringSubmatch(line); m != nil {
		s.wrap(styleBold, func() { inline(s, m[1]) })
		return
	}
	line = bulletRe.ReplaceAllString(line, "${1}• ")
	inline(s, line)
}

// inline renders one line's inline forms; emphasis nests (bold around
// italic), code and links do not.
func inline(s *styler, t string) {
	for t != "" {
		m := inlineRe.FindStringSubmatchIndex(t)
		if m == nil {
			s.write(t)
			return
		}
		group := func(g int) string {
			if m[2*g] < 0 {
				return ""
			}
			return t[m[2*g]:m[2*g+1]]
		}
		has := func(g int) bool { return m[2*g] >= 0 }
		// _x_ must end at a word boundary ("snake_case_name" is a name).
		if has(11) {
			if r, _ := utf8.DecodeRuneInString(t[m[1]:]); m[1] < len(t) && (r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				cut := m[0] + len(group(10)) + 1 // past the leading boundary and the '_'
				s.write(t[:cut])
				t = t[cut:]
				continue
			}
		}
		s.write(t[:m[0]])
		switch {
		case has(1):
			s.wrap(styleMono, func() { s.write(group(1)) })
		case has(2):
			text, url := group(2), group(3)
			if text == url || strings.TrimPrefix(strings.TrimPrefix(url, "https://"), "http://") == text {
				s.write(url)
			} else {
				s.write(text + " (" + url + ")")
			}
		case has(4):
			s.wrap(styleBold, func() { inline(s, group(4)) })
		case has(5):
			s.wrap(styleBold, func() { inline(s, group(5)) })
		case has(6):
			s.wrap(styleStrike, func() { inline(s, group(6)) })
		case has(7):
			s.wrap(styleSpoilered, func() { inline(s, group(7)) })
		case has(9):
			s.write(group(8))
			s.wrap(styleItalic, func() { inline(s, group(9)) })
		case has(11):
			s.write(group(10))
			s.wrap(styleItalic, func() { inline(s, group(11)) })
		}
		t = t[m[1]:]
	}
}

// truncate shortens a rendered message to at most n runes (ending in
// "…") and clips its spans to what is left.
func (r rendered) truncate(n int) rendered {
	if utf8.RuneCountInString(r.Text) <= n {
		return r
	}
	runes := []rune(r.Text)
	text := string(runes[:n-1])
	limit := utf16Len(text)
	out := rendered{Text: text + "…"}
	for _, sp := range r.Spans {
		if sp.Start >= limit {
			continue
		}
		if sp.Start+sp.Length > limit {
			sp.Length = limit - sp.Start
		}
		out.Spans = append(out.Spans, sp)
	}
	return out
}
