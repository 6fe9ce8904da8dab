package matrix

import (
	"html"
	"strings"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Render turns the assistant's Markdown into Matrix's HTML subset
// (org.matrix.custom.html, client-server spec "m.room.message msgtypes").
// Every character of the input is escaped first and tags are only added in
// matched pairs around escaped text, so the output is well formed whatever
// the model wrote: raw HTML in the input shows as text, never as markup.
// Links are made only from [text](http…) and carry only http(s) targets.
// Supported: paragraphs, line breaks, headings, bullet and numbered lists
// (flat), block quotes, rules, fenced code, pipe tables, and inline code,
// bold, italics, strike-through and links.
func Render(md string) string {
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var blocks []string
	var para []string // lines of the open paragraph
	var list []string // items of the open list
	listTag := ""
	var quote []string
	closeOpen := func() {
		if len(para) > 0 {
			blocks = append(blocks, "<p>"+strings.Join(para, "<br>")+"</p>")
			para = nil
		}
		if len(list) > 0 {
			blocks = append(blocks, "<"+listTag+">"+strings.Join(list, "")+"</"+listTag+">")
			list, listTag = nil, ""
		}
		if len(quote) > 0 {
			blocks = append(blocks, "<blockquote>"+strings.Join(quote, "<br>")+"</blockquote>")
			quote = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if fence, ok := strings.CutPrefix(trimmed, "```"); ok {
			closeOpen()
			lang := strings.TrimSpace(fence)
			var code []string
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				code = append(code, lines[i])
			}
			// An unclosed fence (a streamed reply cut short) still shows
			// as code.
			open := "<pre><code>"
			if langRe.MatchString(lang) {
				open = `<pre><code class="language-` + lang + `">`
			}
			blocks = append(blocks, open+html.EscapeString(strings.Join(code, "\n"))+"</code></pre>")
			continue
		}
		if trimmed == "" {
			closeOpen()
			continue
		}
		if m := headingRe.FindStringSubmatch(trimmed); m != nil {
			closeOpen()
			n := string(rune('0' + len(m[1])))
			blocks = append(blocks, "<h"+n+">"+renderInline(m[2])+"</h"+n+">")
			continue
		}
		if ruleRe.MatchString(trimmed) {
			closeOpen()
			blocks = append(blocks, "<hr>")
			continue
		}
		if i+1 < len(lines) && isTableRow(trimmed) && tableSepRe.MatchString(strings.TrimSpace(lines[i+1])) {
			closeOpen()
			var rows []string
			rows = append(rows, "<thead><tr>"+tableCells(trimmed, "th")+"</tr></thead>")
			var body []string
			for i += 2; i < len(lines) && isTableRow(strings.TrimSpace(lines[i])); i++ {
				body = append(body, "<tr>"+tableCells(strings.TrimSpace(lines[i]), "td")+"</tr>")
			}
			i--
			if len(body) > 0 {
				rows = append(rows, "<tbody>"+strings.Join(body, "")+"</tbody>")
			}
			blocks = append(blocks, "<table>"+strings.Join(rows, "")+"</table>")
			continue
		}
		if q, ok := strings.CutPrefix(trimmed, ">"); ok {
			if len(para) > 0 || len(list) > 0 {
				closeOpen()
			}
			quote = append(quote, renderInline(strings.TrimPrefix(q, " ")))
			continue
		}
		tag, item := "", ""
		if m := bulletRe.FindStringSubmatch(line); m != nil {
			tag, item = "ul", m[1]
		} else if m := orderedRe.FindStringSubmatch(line); m != nil {
			tag, item = "ol", m[1]
		}
		if tag != "" {
			if listTag != tag || len(para) > 0 || len(quote) > 0 {
				closeOpen()
			}
			listTag = tag
			list = append(list, "<li>"+renderInline(item)+"</li>")
			continue
		}
		if len(list) > 0 || len(quote) > 0 {
			closeOpen()
		}
		para = append(para, renderInline(line))
	}
	closeOpen()
	// One plain paragraph needs no <p> around it (clients then show it
	// exactly like a message typed by hand).
	if len(blocks) == 1 && strings.HasPrefix(blocks[0], "<p>") {
		return strings.TrimSuffix(strings.TrimPrefix(blocks[0], "<p>"), "</p>")
	}
	return strings.Join(blocks, "")
}

var (
	langRe     = lazyre.New(`^[A-Za-z0-9_+-]{1,20}$`)
	headingRe  = lazyre.New(`^(#{1,6})\s+(.+)$`)
	ruleRe     = lazyre.New(`^(?:-{3,}|\*{3,}|_{3,})$`)
	bulletRe   = lazyre.New(`^\s*[-*+]\s+(.*)$`)
	orderedRe  = lazyre.New(`^\s*\d{1,9}[.)]\s+(.*)$`)
	tableSepRe = lazyre.New(`^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$`)
	linkRe     = lazyre.New(`\[([^\[\]<>]+)\]\((https?://[^\s()<>*~]+)\)`)
	boldRe     = lazyre.New(`\*\*([^*<>\n]+?)\*\*`)
	boldUndRe  = lazyre.New(`(^|[\s(])__([^_<>\n]+?)__`)
	italicRe   = lazyre.New(`(^|[\s(])\*([^*<>\s][^*<>\n]*?)\*`)
	italUndRe  = lazyre.New(`(^|[\s(])_([^_<>\s][^_<>\n]*?)_($|[\s).,!?:;])`)
	strikeRe   = lazyre.New(`~~([^~<>\n]+?)~~`)
)

func isTableRow(s string) bool { return strings.HasPrefix(s, "|") && strings.Count(s, "|") >= 2 }

func tableCells(row, tag string) string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var b strings.Builder
	for _, c := range strings.Split(row, "|") {
		b.WriteString("<" + tag + ">" + renderInline(strings.TrimSpace(c)) + "</" + tag + ">")
	}
	return b.String()
}

// renderInline formats one line. Code spans are opaque: the line is split
// on backticks and only the parts outside them are formatted.
func renderInline(line string) string {
	parts := strings.Split(line, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 1 && i < len(parts)-1:
			b.WriteString("<code>" + html.EscapeString(p) + "</code>")
		case i%2 == 1:
			b.WriteString("`" + inline(p)) // an unmatched backtick stays literal
		default:
			b.WriteString(inline(p))
		}
	}
	return b.String()
}

// inline escapes s and then adds tags. The patterns match only text
// without < or >, which escaped text no longer has outside the tags just
// added, so every tag is closed where it was opened.
func inline(s string) string {
	s = html.EscapeString(s)
	s = linkRe.ReplaceAllString(s, `<a href="$2">$1</a>`)
	s = boldRe.ReplaceAllString(s, "<strong>$1</strong>")
	s = boldUndRe.ReplaceAllString(s, "$1<strong>$2</strong>")
	s = strikeRe.ReplaceAllString(s, "<del>$1</del>")
	s = italicRe.ReplaceAllString(s, "$1<em>$2</em>")
	s = italUndRe.ReplaceAllString(s, "$1<em>$2</em>$3")
	return s
}
