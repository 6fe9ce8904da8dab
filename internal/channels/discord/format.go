package discord

import (
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// MaxMessage is Discord's limit on a message's content, in characters
// (code points).
const MaxMessage = 2000

// maxSource is what Limits.MaxText promises the relay: Render may add a
// few characters (a table's fence, a heading's stars), so the relay
// splits below the hard limit and Render's defensive cut stays a rarity.
const maxSource = 1900

// Render turns the assistant's Markdown into Discord's dialect. Discord
// already shows most of CommonMark (bold, italic, strike, code, fences,
// quotes, lists, # to ### headings, [masked](links)); what differs is
// rewritten: deeper headings become bold lines, tables (which Discord
// does not draw) go into a code block so their columns line up, images
// become links, thematic breaks become a line, and "||" outside code is
// escaped so prose like "a || b" does not turn into a spoiler. Code is
// never touched. The result never exceeds MaxMessage characters.
func Render(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	inFence := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inFence = !inFence
			out = append(out, line)
			continue
		}
		if inFence {
			out = append(out, line)
			continue
		}
		if isTableRow(trimmed) && i+1 < len(lines) && tableSepRe.MatchString(strings.TrimSpace(lines[i+1])) {
			j := i
			for j < len(lines) && isTableRow(strings.TrimSpace(lines[j])) {
				j++
			}
			out = append(out, "```")
			out = append(out, lines[i:j]...)
			out = append(out, "```")
			i = j - 1
			continue
		}
		out = append(out, renderLine(line))
	}
	return Truncate(strings.Join(out, "\n"), MaxMessage)
}

var (
	deepHeadingRe = lazyre.New(`^\s{0,3}#{4,6}\s+(.+?)\s*#*\s*$`)
	tableSepRe    = lazyre.New(`^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$`)
	imageRe       = lazyre.New(`!\[([^\[\]]*)\]\(([^()\s]+)\)`)
)

func isTableRow(s string) bool { return strings.HasPrefix(s, "|") && strings.Count(s, "|") >= 2 }

func renderLine(line string) string {
	if m := deepHeadingRe.FindStringSubmatch(line); m != nil {
		line = "**" + m[1] + "**"
	} else if isBreak(line) {
		return "──────────"
	}
	// Code spans are opaque: only the text between them is rewritten.
	parts := strings.Split(line, "`")
	for i := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			continue
		}
		p := imageRe.ReplaceAllStringFunc(parts[i], func(s string) string {
			m := imageRe.FindStringSubmatch(s)
			if strings.TrimSpace(m[1]) == "" {
				return m[2]
			}
			return "[" + m[1] + "](" + m[2] + ")"
		})
		parts[i] = strings.ReplaceAll(p, "||", `\|\|`)
	}
	return strings.Join(parts, "`")
}

// isBreak reports a thematic break: three or more of one of - * _ and
// nothing else but spaces ("---", "* * *"); "- item" is a list item.
func isBreak(line string) bool {
	t := strings.ReplaceAll(strings.TrimSpace(line), " ", "")
	if len(t) < 3 || !strings.Contains("-*_", t[:1]) {
		return false
	}
	return strings.Count(t, t[:1]) == len(t)
}

// Truncate cuts text to at most n characters, ending with "…" and closing
// a code block left open by the cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	const fence = len("\n```")
	r := []rune(s)
	if n <= fence+1 {
		return string(r[:max(n, 0)])
	}
	if cut := string(r[:n-1]); strings.Count(cut, "```")%2 == 0 {
		return cut + "…"
	}
	// The cut is inside a code block: leave room to close it (unless the
	// shorter cut drops the block's opening fence).
	cut := string(r[:n-1-fence])
	if strings.Count(cut, "```")%2 == 0 {
		return cut + "…"
	}
	return cut + "…\n```"
}
