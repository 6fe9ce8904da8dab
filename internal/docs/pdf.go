package docs

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ledongthuc/pdf"
)

// The page tree walk is bounded: a tree that loops or fans out without
// end is cut, never followed.
const (
	maxPDFPages = 10_000
	maxPDFNodes = 2 * maxPDFPages
	maxPDFDepth = 32
)

// pageList walks the page tree once, in order. The library's Page(i)
// restarts from the root and re-reads every kid for each page (quadratic
// in the page count) and follows a tree that contains itself forever.
func pageList(r *pdf.Reader) (pages []pdf.Page, truncated bool) {
	visits := 0
	var walk func(node pdf.Value, depth int)
	walk = func(node pdf.Value, depth int) {
		if truncated {
			return
		}
		visits++
		if depth > maxPDFDepth || visits > maxPDFNodes || len(pages) >= maxPDFPages {
			truncated = true
			return
		}
		switch node.Key("Type").Name() {
		case "Pages":
			kids := node.Key("Kids")
			for i := 0; i < kids.Len(); i++ {
				walk(kids.Index(i), depth+1)
			}
		case "Page":
			pages = append(pages, pdf.Page{V: node})
		default:
			if node.Key("Kids").Kind() == pdf.Array {
				kids := node.Key("Kids")
				for i := 0; i < kids.Len(); i++ {
					walk(kids.Index(i), depth+1)
				}
			} else if node.Key("Contents").Kind() != pdf.Null {
				pages = append(pages, pdf.Page{V: node})
			}
		}
	}
	walk(r.Trailer().Key("Root").Key("Pages"), 0)
	return pages, truncated
}

// extractPDF reads the text layer page by page, keeping page numbers. The
// content-stream walk is ours (the library's plain-text helper runs lines
// together): a text move starts a new line, a wide TJ gap is a space.
func extractPDF(ctx context.Context, data []byte, b *builder) error {
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return fmt.Errorf("reading PDF structure: %w", err)
	}
	pages, truncated := pageList(r)
	n := len(pages)
	if n == 0 {
		return fmt.Errorf("the PDF has no readable pages")
	}
	if truncated {
		b.warn(fmt.Sprintf("the PDF's page tree is larger than %d nodes or deeper than %d levels (or loops); only the first %d pages were read", maxPDFNodes, maxPDFDepth, n))
	}
	failed := 0
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		b.page(fmt.Sprint(i))
		text, err := pageText(pages[i-1])
		if err != nil {
			failed++
			continue
		}
		b.write(text)
		if b.full {
			break
		}
	}
	if failed > 0 {
		b.warn(fmt.Sprintf("%d of %d pages could not be read and are empty", failed, n))
	}
	outlineHeadings(r, b)
	return nil
}

func pageText(p pdf.Page) (text string, err error) {
	defer func() {
		if x := recover(); x != nil {
			text, err = "", fmt.Errorf("page content: %v", x)
		}
	}()
	if p.V.IsNull() || p.V.Key("Contents").Kind() == pdf.Null {
		return "", nil
	}
	fonts := map[string]*pdf.Font{}
	for _, name := range p.Fonts() {
		f := p.Font(name)
		fonts[name] = &f
	}
	var out strings.Builder
	var enc pdf.TextEncoding
	show := func(s string) {
		if enc == nil {
			out.WriteString(s)
			return
		}
		out.WriteString(enc.Decode(s))
	}
	newline := func() {
		if out.Len() > 0 && !strings.HasSuffix(out.String(), "\n") {
			out.WriteByte('\n')
		}
	}
	space := func() {
		s := out.String()
		if s != "" && !strings.HasSuffix(s, " ") && !strings.HasSuffix(s, "\n") {
			out.WriteByte(' ')
		}
	}
	ops := 0
	pdf.Interpret(p.V.Key("Contents"), func(stk *pdf.Stack, op string) {
		ops++
		if ops > 2_000_000 {
			panic("more than two million content operators on one page")
		}
		n := stk.Len()
		args := make([]pdf.Value, n)
		for i := n - 1; i >= 0; i-- {
			args[i] = stk.Pop()
		}
		switch op {
		case "BT":
			newline()
		case "Tf":
			enc = nil
			if len(args) == 2 {
				if f, ok := fonts[args[0].Name()]; ok {
					enc = f.Encoder()
				}
			}
		case "Td", "TD":
			if len(args) == 2 && math.Abs(args[1].Float64()) > 0.01 {
				newline()
			} else {
				space()
			}
		case "Tm", "T*":
			newline()
		case "Tj", "'", "\"":
			if op != "Tj" {
				newline()
			}
			if len(args) > 0 {
				show(args[len(args)-1].RawString())
			}
		case "TJ":
			if len(args) != 1 {
				return
			}
			v := args[0]
			for i := 0; i < v.Len(); i++ {
				x := v.Index(i)
				switch x.Kind() {
				case pdf.String:
					show(x.RawString())
				case pdf.Integer, pdf.Real:
					// Kerning is in thousandths of an em; a large negative
					// adjustment is a word gap.
					if x.Float64() < -200 {
						space()
					}
				}
			}
		}
	})
	return out.String(), nil
}

// outlineHeadings turns the PDF outline (bookmarks) into headings, placed
// on the first page whose text contains the title.
func outlineHeadings(r *pdf.Reader, b *builder) {
	defer func() { _ = recover() }() // a broken outline only loses headings
	var walk func(o pdf.Outline, level, depth int)
	seen := 0
	walk = func(o pdf.Outline, level, depth int) {
		if depth > 8 || seen > 200 {
			return
		}
		seen++
		if t := strings.Join(strings.Fields(o.Title), " "); t != "" && len(b.doc.Headings) < 500 {
			b.doc.Headings = append(b.doc.Headings, Heading{Title: t, Level: level, Page: findPage(b.doc.Pages, t), Offset: -1})
		}
		for _, c := range o.Child {
			walk(c, level+1, depth+1)
		}
	}
	b.flush()
	walk(r.Outline(), 0, 0)
}

func findPage(pages []Page, title string) int {
	for _, p := range pages {
		if strings.Contains(p.Text, title) {
			return p.Number
		}
	}
	for _, p := range pages {
		if strings.Contains(strings.ToLower(tidy(p.Text)), strings.ToLower(title)) {
			return p.Number
		}
	}
	return 1
}
