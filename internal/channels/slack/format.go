package slack

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Slack's limits on what one message may carry
// (https://api.slack.com/reference/block-kit/blocks).
const (
	// maxMessageText is chat.postMessage's limit on text; longer is
	// refused as msg_too_long.
	maxMessageText = 40000
	// maxSectionText is a section block's limit on its text.
	maxSectionText = 3000
	// maxBlocks is the most blocks one message may hold.
	maxBlocks = 50
)

// Render turns the assistant's Markdown into Slack mrkdwn. Every &, < and
// > of the input is escaped first, so nothing the model writes can become
// a mention (<!channel>, <@U…>) or a link Slack did not see written as
// one; links are only made from Markdown's [text](http…) form. What mrkdwn
// cannot show (tables, images) stays as literal text.
func Render(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	// The private-use marks the conversion uses are never real text.
	md = strings.NewReplacer(boldMark, "", linkMark, "").Replace(md)
	lines := strings.Split(md, "\n")
	var b strings.Builder
	inFence := false
	var code []string
	flush := func() {
		b.WriteString("```\n" + escape(strings.Join(code, "\n")) + "\n```")
		code = code[:0]
	}
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inFence {
				flush()
				inFence = false
				if i < len(lines)-1 {
					b.WriteByte('\n')
				}
			} else {
				// The language tag is dropped: mrkdwn has no highlighting
				// and would show it as the first line of code.
				inFence = true
			}
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
		// An unclosed fence (a stream cut off mid-block) still shows as code.
		flush()
	}
	return b.String()
}

// boldMark stands for a bold asterisk while italics are converted, so the
// single * of *bold* is not read again as Markdown italics.
const boldMark = "\uE000"

// linkMark brackets the index of a link set aside during conversion.
const linkMark = "\uE001"

var linkMarkRe = lazyre.New("\uE001([0-9]+)\uE001")

var (
	headingRe = lazyre.New(`^#{1,6}\s+(.+?)\s*#*$`)
	bulletRe  = lazyre.New(`^(\s*)[-*+]\s+`)
	quoteRe   = lazyre.New(`^>\s?`)
	linkRe    = lazyre.New(`\[([^\[\]|\n]+)\]\((https?://[^\s()|]+)\)`)
	boldRe    = lazyre.New(`\*\*([^*\n]+?)\*\*|__([^_\n]+?)__`)
	italicRe  = lazyre.New(`(^|[^\w*])\*([^*\s][^*\n]*?)\*`)
	strikeRe  = lazyre.New(`~~([^~\n]+?)~~`)
)

func renderLine(line string) string {
	heading := false
	if m := headingRe.FindStringSubmatch(line); m != nil {
		line, heading = m[1], true
	}
	quote := ""
	if quoteRe.MatchString(line) {
		// A quote is the one place a raw > is written: at the start of a
		// line it can only quote, never open a control sequence (those
		// start with <, which is always escaped).
		quote, line = ">", quoteRe.ReplaceAllString(line, "")
	}
	line = bulletRe.ReplaceAllString(line, "${1}• ")
	// Code spans are opaque: split on backticks, format only outside.
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			if p == "" {
				b.WriteString("``")
				continue
			}
			b.WriteString("`" + escape(p) + "`")
		case i%2 == 1:
			// An unmatched backtick stays literal.
			b.WriteString("`" + inline(p))
		default:
			b.WriteString(inline(p))
		}
	}
	out := b.String()
	if heading {
		// Bold inside a heading would close the heading's own bold.
		out = "*" + strings.ReplaceAll(out, boldMark, "") + "*"
	}
	out = strings.ReplaceAll(out, boldMark, "*")
	if quote != "" {
		out = quote + " " + out
	}
	return out
}

func inline(s string) string {
	s = escape(s)
	// Links are set aside while emphasis is converted, so a URL's
	// underscores or asterisks stay as written.
	var links []string
	s = linkRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := linkRe.FindStringSubmatch(m)
		links = append(links, "<"+sub[2]+"|"+sub[1]+">")
		return linkMark + strconv.Itoa(len(links)-1) + linkMark
	})
	s = boldRe.ReplaceAllStringFunc(s, func(m string) string {
		sub := boldRe.FindStringSubmatch(m)
		return boldMark + sub[1] + sub[2] + boldMark
	})
	s = strikeRe.ReplaceAllString(s, "~$1~")
	s = italicRe.ReplaceAllString(s, "${1}_${2}_")
	if len(links) > 0 {
		s = linkMarkRe.ReplaceAllStringFunc(s, func(m string) string {
			i, _ := strconv.Atoi(strings.Trim(m, linkMark))
			return links[i]
		})
	}
	return s
}

// escape replaces the three characters mrkdwn reserves for control
// sequences (https://api.slack.com/reference/surfaces/formatting#escaping).
func escape(s string) string {
	return mrkdwnEscaper.Replace(s)
}

var mrkdwnEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

var incomingUnescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")

// controlRe matches one of Slack's <…> control sequences in message text.
var controlRe = lazyre.New(`<([^<>]*)>`)

// PlainText turns the text of a Slack message into what the person typed:
// the bot's own mention (how a channel message addresses it) removed,
// other mentions and channel links as @name / #name, links as their URL
// (with the label when it differs), and &amp; &lt; &gt; unescaped.
func PlainText(text, botUser string) string {
	out := controlRe.ReplaceAllStringFunc(text, func(m string) string {
		inner := m[1 : len(m)-1]
		target, label, hasLabel := strings.Cut(inner, "|")
		switch {
		case strings.HasPrefix(target, "@"):
			if botUser != "" && target[1:] == botUser {
				return ""
			}
			if hasLabel && label != "" {
				return "@" + strings.TrimPrefix(label, "@")
			}
			return target
		case strings.HasPrefix(target, "#"):
			if hasLabel && label != "" {
				return "#" + label
			}
			return target
		case strings.HasPrefix(target, "!"):
			// <!here>, <!channel>, <!subteam^ID|@team>, <!date^…|fallback>.
			if hasLabel && label != "" {
				return label
			}
			name, _, _ := strings.Cut(target[1:], "^")
			return "@" + name
		default:
			if !hasLabel || label == "" || label == target || "mailto:"+label == target || strings.TrimPrefix(strings.TrimPrefix(target, "https://"), "http://") == label {
				return strings.TrimPrefix(target, "mailto:")
			}
			return label + " (" + target + ")"
		}
	})
	return strings.TrimSpace(incomingUnescaper.Replace(out))
}

// truncate shortens mrkdwn to at most n runes, ending with "…" and
// closing a code block the cut left open.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)[:n-5] // room for "…" and a closing fence
	out := string(r)
	// A cut inside an escape (&am) would show as text: back up to before it.
	if i := strings.LastIndexByte(out, '&'); i >= 0 && !strings.Contains(out[i:], ";") && len(out)-i < 5 {
		out = out[:i]
	}
	out += "…"
	if strings.Count(out, "```")%2 == 1 {
		out += "```"
	}
	return out
}

// sections cuts mrkdwn into pieces of at most n runes for section blocks,
// at a line break where there is one; a code block cut in two is closed at
// the end of one piece and reopened at the start of the next.
func sections(s string, n int) []string {
	var out []string
	for utf8.RuneCountInString(s) > n {
		cut := cutPoint(s, n-8) // room for a fence closed and reopened
		piece, rest := s[:cut], strings.TrimLeft(s[cut:], "\n")
		if strings.Count(piece, "```")%2 == 1 {
			piece += "\n```"
			rest = "```\n" + rest
		}
		out = append(out, piece)
		s = rest
	}
	if strings.TrimSpace(s) != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

// cutPoint returns a byte offset at most limit runes into s: after the
// last line break in the second half of that window, else the last space,
// else the limit itself, never inside a character or an &…; escape.
func cutPoint(s string, limit int) int {
	end := 0
	for i := 0; i < limit && end < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	window := s[:end]
	for _, sep := range []string{"\n", " "} {
		if i := strings.LastIndex(window, sep); i > end/2 {
			return i + len(sep)
		}
	}
	if i := strings.LastIndexByte(window, '&'); i > 0 && !strings.Contains(window[i:], ";") {
		return i
	}
	return end
}
