package telegram

import (
	"html"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/lazyre"
)

// MaxMessage is Telegram's limit on a message's text (characters after
// entity parsing). Replies are split below it.
const MaxMessage = 4096

// chunkRunes is how much Markdown source one message carries; rendering
// never adds visible characters, so the result stays under MaxMessage.
const chunkRunes = 3900

// Render turns the assistant's Markdown into Telegram's HTML subset. Every
// character of the input is escaped first; tags are only added in matched
// pairs around text that contains no tag, so the output is always well
// formed, whatever the model wrote. What the subset cannot show (tables,
// images, raw HTML) stays as literal text.
func Render(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	inFence := false
	var code []string
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if inFence {
				b.WriteString("<pre>" + html.EscapeString(strings.Join(code, "\n")) + "</pre>")
				code = code[:0]
				inFence = false
				if i < len(lines)-1 {
					b.WriteByte('\n')
				}
				continue
			}
			inFence = true
			continue
		}
		if inFence {
			code = append(code, line)
			continue
		}
		b.WriteString(renderLine(line))
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	if inFence {
		// An unclosed fence (a cut-off stream) still shows as code.
		b.WriteString("<pre>" + html.EscapeString(strings.Join(code, "\n")) + "</pre>")
	}
	return b.String()
}

var (
	headingRe = lazyre.New(`^#{1,6}\s+(.+)$`)
	bulletRe  = lazyre.New(`^(\s*)[-*+]\s+`)
	linkRe    = lazyre.New(`\[([^\[\]<>]+)\]\((https?://[^\s()<>"*~]+)\)`)
	boldRe    = lazyre.New(`\*\*([^*<>\n]+?)\*\*`)
	italicRe  = lazyre.New(`(^|[\s(])\*([^*<>\s][^*<>\n]*?)\*`)
	strikeRe  = lazyre.New(`~~([^~<>\n]+?)~~`)
)

func renderLine(line string) string {
	heading := false
	if m := headingRe.FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	line = bulletRe.ReplaceAllString(line, "${1}• ")
	// Code spans are opaque: split on backticks, format only outside.
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
		case i%2 == 1:
			// An unmatched backtick stays literal.
			b.WriteString("`" + inline(p))
		default:
			b.WriteString(inline(p))
		}
	}
	if heading {
		return "<b>" + b.String() + "</b>"
	}
	return b.String()
}

func inline(s string) string {
	s = html.EscapeString(s)
	s = linkRe.ReplaceAllString(s, `<a href="$2">$1</a>`)
	s = boldRe.ReplaceAllString(s, "<b>$1</b>")
	s = strikeRe.ReplaceAllString(s, "<s>$1</s>")
	s = italicRe.ReplaceAllString(s, "$1<i>$2</i>")
	return s
}

// Escape makes plain text safe for an HTML-mode message.
func Escape(s string) string { return html.EscapeString(s) }

// Split cuts Markdown into messages that fit (channels.Split at
// Telegram's limit).
func Split(md string) []string { return channels.Split(md, chunkRunes) }

// Truncate shortens rendered-to-be Markdown for a streaming preview.
func Truncate(md string, n int) string {
	if utf8.RuneCountInString(md) <= n {
		return md
	}
	r := []rune(md)
	return string(r[:n]) + "…"
}
