package whatsapp

import (
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// WhatsApp's own limits on what one message may hold.
const (
	// MaxText is the most characters a text message's body may hold.
	MaxText = 4096
	// maxButtonBody bounds an interactive message's body text.
	maxButtonBody = 1024
	// maxButtonID bounds a reply button's id (its payload).
	maxButtonID = 256
	// maxTemplateParam is how much of a message a template's {{1}}
	// carries; the whole template body must stay under 1,024 characters.
	maxTemplateParam = 700
)

// splitAt is the Limits.MaxText given to the relay: rendering can add a
// few characters (inline code gains four backticks), so pieces are cut
// below MaxText and the rendered text is still truncated defensively.
const splitAt = 3900

// Render turns the assistant's Markdown into WhatsApp's formatting:
// *bold*, _italic_, ~strike~ and ```monospace```. WhatsApp has no escape
// character and no links with text, so what it cannot show (tables,
// images, HTML) stays literal, links become "text (url)", headings become
// bold lines and bullets "•". Code (fenced or inline) is copied verbatim
// inside ``` so nothing in it is read as formatting.
func Render(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var b strings.Builder
	inFence := false
	for i, line := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			// A language tag after the opening fence would show as code.
			b.WriteString("```")
			inFence = !inFence
			continue
		}
		if inFence {
			b.WriteString(line)
			continue
		}
		b.WriteString(renderLine(line))
	}
	if inFence {
		// An unclosed fence (a cut-off reply) still closes.
		b.WriteString("\n```")
	}
	return b.String()
}

var (
	headingRe = lazyre.New(`^#{1,6}\s+(.+?)\s*#*\s*$`)
	bulletRe  = lazyre.New(`^(\s*)[-*+]\s+`)
	linkRe    = lazyre.New(`\[([^\[\]\n]+)\]\((https?://[^\s()]+)\)`)
	// One pass over the emphasis forms, leftmost first, so "**a**" is
	// never read as two italics: bold, bold, strike, italic (the rune
	// before a single * must not be a word character or another *).
	emphasisRe = lazyre.New(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__|~~([^~\n]+?)~~|(^|[^\w*])\*([^*\s][^*\n]*?)\*`)
)

func renderLine(line string) string {
	heading := false
	if m := headingRe.FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	line = bulletRe.ReplaceAllString(line, "${1}• ")
	// Inline code is opaque: split on backticks, format only outside.
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1 && p != "":
			b.WriteString("```" + p + "```")
		case i%2 == 1:
			// An unmatched or empty pair of backticks stays literal.
			b.WriteString("`" + inline(p))
			if i < len(parts)-1 {
				b.WriteString("`")
			}
		default:
			b.WriteString(inline(p))
		}
	}
	out := b.String()
	if heading && !strings.Contains(out, "*") && strings.TrimSpace(out) != "" {
		return "*" + out + "*"
	}
	return out
}

func inline(s string) string {
	s = linkRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := linkRe.FindStringSubmatch(m)
		if sub[1] == sub[2] {
			return sub[2]
		}
		return sub[1] + " (" + sub[2] + ")"
	})
	re := emphasisRe.Get()
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		switch {
		case m[2] >= 0:
			b.WriteString("*" + s[m[2]:m[3]] + "*")
		case m[4] >= 0:
			b.WriteString("*" + s[m[4]:m[5]] + "*")
		case m[6] >= 0:
			b.WriteString("~" + s[m[6]:m[7]] + "~")
		default:
			b.WriteString(s[m[8]:m[9]] + "_" + s[m[10]:m[11]] + "_")
		}
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Truncate shortens s to at most n characters, ending in "…" when cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// oneLine flattens text for a template parameter, which may hold no
// newline or tab and no more than four spaces in a row: lines are joined
// with " · " and runs of white space become one space.
func oneLine(s string) string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return strings.Join(out, " · ")
}
