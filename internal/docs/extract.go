package docs

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"unicode/utf8"
)

// Extract parses data in this process. The tools never call it directly on
// outside files: the Extractor runs it in a child process. It is exported
// for the child, for tests and for fuzzing.
func Extract(ctx context.Context, data []byte, format Format, lim Limits) (doc *Document, err error) {
	lim = lim.WithDefaults()
	if int64(len(data)) > lim.MaxInputBytes {
		return nil, fmt.Errorf("input is %d bytes, over the %d-byte limit: %w", len(data), lim.MaxInputBytes, ErrTooLarge)
	}
	// Parsers of hostile input panic on malformed structures; a panic is
	// a malformed file, not a crash.
	defer func() {
		if p := recover(); p != nil {
			doc, err = nil, fmt.Errorf("malformed %s file: %v (%s)", format, p, firstFrame(debug.Stack()))
		}
	}()
	b := newBuilder(format, lim.MaxChars)
	switch format {
	case PDF:
		err = extractPDF(ctx, data, b)
	case DOCX:
		err = extractDOCX(data, lim, b)
	case PPTX:
		err = extractPPTX(data, lim, b)
	case XLSX:
		err = extractXLSX(data, lim, b)
	case ODT:
		err = extractODT(data, lim, b)
	case ODS:
		err = extractODS(data, lim, b)
	case EPUB:
		err = extractEPUB(data, lim, b)
	case HTML:
		err = extractHTML(data, b)
	case Article:
		err = extractArticle(ctx, data, b)
	case RTF:
		err = extractRTF(data, b)
	case Markdown, Text:
		err = extractText(data, format, b)
	default:
		return nil, fmt.Errorf("format %q: %w", format, ErrUnsupported)
	}
	if err != nil {
		return nil, err
	}
	return b.done()
}

func firstFrame(stack []byte) string {
	// The panicking frame is the useful line; keep the report short.
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.Contains(l, "panic(") && i+2 < len(lines) {
			return strings.TrimSpace(lines[i+2])
		}
	}
	return "no stack"
}

// builder collects pages and headings, enforcing the character cap.
type builder struct {
	doc      Document
	maxChars int
	chars    int
	cur      strings.Builder
	label    string
	open     bool
	full     bool
}

func newBuilder(f Format, maxChars int) *builder {
	return &builder{doc: Document{Format: f}, maxChars: maxChars}
}

// page starts a new page.
func (b *builder) page(label string) {
	b.flush()
	b.open, b.label = true, label
}

func (b *builder) flush() {
	if !b.open {
		return
	}
	b.doc.Pages = append(b.doc.Pages, Page{Number: len(b.doc.Pages) + 1, Label: b.label, Text: tidy(b.cur.String())})
	b.cur.Reset()
	b.open = false
}

// write appends text to the current page, opening one if needed.
func (b *builder) write(s string) {
	if b.full || s == "" {
		return
	}
	if !b.open {
		b.page("")
	}
	n := utf8.RuneCountInString(s)
	if b.chars+n > b.maxChars {
		r := []rune(s)
		s = string(r[:max(0, b.maxChars-b.chars)])
		n = len([]rune(s))
		b.full = true
		b.warn(fmt.Sprintf("text cut at %d characters (the extraction limit)", b.maxChars))
	}
	b.chars += n
	b.cur.WriteString(s)
}

// heading records a heading at the current position of the current page
// and writes its text.
func (b *builder) heading(title string, level int) {
	title = strings.Join(strings.Fields(title), " ")
	if title == "" {
		return
	}
	if !b.open {
		b.page("")
	}
	if len(b.doc.Headings) < 500 {
		// The offset is fixed up in done() once the page text is tidied.
		b.doc.Headings = append(b.doc.Headings, Heading{Title: title, Level: level, Page: len(b.doc.Pages) + 1, Offset: -1})
	}
	b.write("\n" + title + "\n")
}

func (b *builder) warn(w string) {
	for _, x := range b.doc.Warnings {
		if x == w {
			return
		}
	}
	if len(b.doc.Warnings) < 20 {
		b.doc.Warnings = append(b.doc.Warnings, w)
	}
}

func (b *builder) done() (*Document, error) {
	b.flush()
	// Place headings: the first occurrence of the title on its page at or
	// after the previous heading of that page.
	last := map[int]int{}
	for i := range b.doc.Headings {
		h := &b.doc.Headings[i]
		if h.Page < 1 || h.Page > len(b.doc.Pages) {
			h.Page, h.Offset = 1, 0
			continue
		}
		text := b.doc.Pages[h.Page-1].Text
		from := last[h.Page]
		if j := strings.Index(text[from:], h.Title); j >= 0 {
			h.Offset = from + j
			last[h.Page] = h.Offset + len(h.Title)
		} else {
			h.Offset = from
		}
	}
	if !hasText(b.doc.Pages) {
		return nil, fmt.Errorf("%s document has no extractable text (%d pages)%s: %w", b.doc.Format, len(b.doc.Pages), noTextHint(b.doc.Format), ErrNoText)
	}
	return &b.doc, nil
}

func noTextHint(f Format) string {
	if f == PDF {
		return "; it is probably scanned images without a text layer"
	}
	return ""
}

func hasText(ps []Page) bool {
	for _, p := range ps {
		if strings.TrimSpace(p.Text) != "" {
			return true
		}
	}
	return false
}

func joinPages(ps []Page) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
	}
	return b.String()
}

// tidy normalises extracted text: valid UTF-8, no NULs or other C0 controls
// except tab and newline, \r\n → \n, trailing spaces trimmed, runs of blank
// lines collapsed to one.
func tidy(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	blank := 0
	for line := range strings.SplitSeq(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		line = strings.Map(func(r rune) rune {
			switch {
			case r == '\t':
				return r
			case r == '\r' || r == '\f' || r == '\v':
				return ' '
			case r < 0x20 || r == 0x7f:
				return -1
			}
			return r
		}, line)
		line = strings.TrimRight(line, " \t")
		if line == "" {
			blank++
			continue
		}
		if b.Len() > 0 {
			if blank > 0 {
				b.WriteString("\n\n")
			} else {
				b.WriteByte('\n')
			}
		}
		blank = 0
		b.WriteString(line)
	}
	return b.String()
}

func extractText(data []byte, f Format, b *builder) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return fmt.Errorf("the file holds NUL bytes; it is binary, not %s", f)
	}
	if !utf8.Valid(data) {
		b.warn("the file is not valid UTF-8; invalid bytes were replaced")
	}
	b.page("")
	if f != Markdown {
		b.write(string(data))
		return nil
	}
	inFence := false
	for line := range strings.SplitSeq(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(t, "#") {
			level := len(t) - len(strings.TrimLeft(t, "#"))
			if level <= 6 && (len(t) == level || t[level] == ' ') {
				b.heading(strings.TrimSpace(strings.Trim(t[level:], "# ")), level)
				continue
			}
		}
		b.write(line + "\n")
	}
	return nil
}
