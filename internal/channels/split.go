package channels

import (
	"strings"
	"unicode/utf8"
)

// Split cuts Markdown into pieces of at most limit runes at paragraph,
// line or word boundaries, closing and reopening a code fence cut in two,
// so each piece renders on its own. Platforms whose rendering grows the
// text should set Limits.MaxText with room to spare.
func Split(md string, limit int) []string {
	if limit < 64 {
		limit = 64
	}
	md = strings.ReplaceAll(md, "\r\n", "\n")
	var out []string
	for utf8.RuneCountInString(md) > limit {
		cut := cutPoint(md, limit)
		piece, rest := md[:cut], strings.TrimLeft(md[cut:], "\n")
		if strings.Count(piece, "```")%2 == 1 {
			piece += "\n```"
			rest = "```\n" + rest
		}
		out = append(out, piece)
		md = rest
	}
	if strings.TrimSpace(md) != "" || len(out) == 0 {
		out = append(out, md)
	}
	return out
}

// cutPoint returns a byte offset at most limit runes (minus room for a
// closing fence) into s: the last paragraph break, else line break, else
// space, else the rune boundary itself.
func cutPoint(s string, limit int) int {
	limit -= 8
	end := 0
	for i := 0; i < limit && end < len(s); i++ {
		_, size := utf8.DecodeRuneInString(s[end:])
		end += size
	}
	window := s[:end]
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(window, sep); i > end/2 {
			return i + len(sep)
		}
	}
	return end
}
