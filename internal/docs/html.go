package docs

import (
	"bytes"
	"strings"

	"golang.org/x/net/html"
)

func extractHTML(data []byte, b *builder) error {
	b.page("")
	htmlText(data, b)
	return nil
}

// blockTags end a line in the extracted text.
var blockTags = map[string]bool{
	"p": true, "div": true, "br": true, "li": true, "tr": true, "section": true, "article": true,
	"header": true, "footer": true, "blockquote": true, "pre": true, "table": true, "ul": true, "ol": true,
	"dt": true, "dd": true, "hr": true, "main": true, "nav": true, "aside": true, "figcaption": true,
}

// skipTags hold no readable text (or code that must never be run or shown).
var skipTags = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true, "math": true,
	"iframe": true, "object": true, "embed": true, "head": true, "title": false,
}

// htmlText writes the visible text of an HTML document: scripts, styles
// and other non-text elements are dropped, block elements end lines,
// h1–h6 become headings and table cells are joined with " | ".
func htmlText(data []byte, b *builder) {
	z := html.NewTokenizer(bytes.NewReader(data))
	z.SetMaxBuf(16 << 20)
	skip := 0
	heading := 0
	var hbuf strings.Builder
	var line strings.Builder
	var cells []string
	inCell := false
	flush := func() {
		if s := strings.TrimSpace(line.String()); s != "" {
			b.write(s + "\n")
		}
		line.Reset()
	}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			flush()
			return
		case html.StartTagToken, html.SelfClosingTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if skipTags[tag] && tt == html.StartTagToken {
				skip++
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case len(tag) == 2 && tag[0] == 'h' && tag[1] >= '1' && tag[1] <= '6':
				flush()
				heading = int(tag[1] - '0')
				hbuf.Reset()
			case tag == "td" || tag == "th":
				inCell = true
				cells = append(cells, "")
			case tag == "tr":
				flush()
				cells = cells[:0]
			case blockTags[tag]:
				flush()
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			if skipTags[tag] {
				if skip > 0 {
					skip--
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch {
			case heading > 0 && len(tag) == 2 && tag[0] == 'h':
				b.heading(hbuf.String(), heading)
				heading = 0
			case tag == "td" || tag == "th":
				inCell = false
			case tag == "tr":
				writeRow(b, cells)
				cells = cells[:0]
			case blockTags[tag]:
				flush()
			}
		case html.TextToken:
			if skip > 0 {
				continue
			}
			text := string(z.Text())
			switch {
			case heading > 0:
				hbuf.WriteString(text)
			case inCell && len(cells) > 0:
				cells[len(cells)-1] += text
			default:
				if line.Len() > 0 && len(text) > 0 && (text[0] == ' ' || text[0] == '\n' || text[0] == '\t') && !strings.HasSuffix(line.String(), " ") {
					line.WriteByte(' ')
				}
				line.WriteString(strings.Join(strings.Fields(text), " "))
				if strings.HasSuffix(text, " ") || strings.HasSuffix(text, "\n") {
					line.WriteByte(' ')
				}
			}
		}
		if b.full {
			return
		}
	}
}
