package docs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMain(m *testing.M) {
	RunChildIfAsked()
	m.Run()
}

func TestExtractFormats(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file     string
		format   Format
		pages    int
		want     []string // in the text, in order
		not      []string
		headings []string
	}{
		{"contract.pdf", PDF, 3, []string{"SERVICE CONTRACT\nbetween Acme GmbH", "7. Termination\nEither party may terminate"}, nil, []string{"7. Termination"}},
		{"contract.docx", DOCX, 1, []string{"Service Agreement", "2. Termination\nEither party", "Fee | 100 EUR\nTerm | 24 months"}, nil, []string{"Service Agreement", "1. Services", "2. Termination"}},
		{"slides.pptx", PPTX, 3, []string{"Quarterly Review", "Risks", "Roadmap"}, nil, []string{"Quarterly Review", "Risks", "Roadmap"}},
		{"budget.xlsx", XLSX, 1, []string{"Item | Cost\nRent | 1200\nPower |  | 80"}, nil, []string{"Budget"}},
		{"minutes.odt", ODT, 1, []string{"Minutes", "The board met on Monday.  All present.", "Decisions"}, nil, []string{"Minutes", "Decisions"}},
		{"inventory.ods", ODS, 1, []string{"Widget | 42"}, nil, []string{"Inventory"}},
		{"book.epub", EPUB, 2, []string{"Call me Ishmael", "The ship sailed"}, nil, []string{"Chapter One", "Chapter Two"}},
		{"notes.html", HTML, 1, []string{"Release notes", "Version 2.0 adds sync.", "Key | Value\nmode | fast", "Crash on start\nSlow search"}, []string{"alert", "pwned", "hidden", "color:red", "enable js"}, []string{"Release notes", "Fixes"}},
		{"letter.rtf", RTF, 1, []string{"Dear customer,\nyour order no. 7 is ready. Café €5 paid.\nRegards"}, []string{"Times", "Secret title", "Writer"}, nil},
		{"notes.md", Markdown, 1, []string{"Notes", "# not a heading", "Next steps"}, nil, []string{"Notes", "Next steps"}},
		{"plain.txt", Text, 1, nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			doc, err := Extract(context.Background(), fixture(t, c.file), c.format, Limits{})
			if c.file == "plain.txt" {
				if err == nil || !strings.Contains(err.Error(), "NUL") {
					t.Fatalf("a text file with NUL bytes: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(doc.Pages) != c.pages {
				t.Fatalf("%d pages, want %d: %+v", len(doc.Pages), c.pages, doc.Pages)
			}
			all := joinPages(doc.Pages)
			at := 0
			for _, w := range c.want {
				i := strings.Index(all[at:], w)
				if i < 0 {
					t.Fatalf("text lacks %q after offset %d:\n%s", w, at, all)
				}
				at += i
			}
			for _, n := range c.not {
				if strings.Contains(all, n) {
					t.Errorf("text contains %q:\n%s", n, all)
				}
			}
			var hs []string
			for _, h := range doc.Headings {
				hs = append(hs, h.Title)
				p := doc.Pages[h.Page-1].Text
				if h.Offset < 0 || !strings.HasPrefix(p[h.Offset:], h.Title) {
					t.Errorf("heading %q at page %d offset %d does not point at its title", h.Title, h.Page, h.Offset)
				}
			}
			if strings.Join(hs, "|") != strings.Join(c.headings, "|") {
				t.Errorf("headings %q, want %q", hs, c.headings)
			}
		})
	}
}

func TestPDFKeepsPages(t *testing.T) {
	t.Parallel()
	doc, err := Extract(context.Background(), fixture(t, "contract.pdf"), PDF, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Pages[2].Text, "terminate") || strings.Contains(doc.Pages[0].Text, "terminate") || doc.Pages[2].Label != "3" {
		t.Fatalf("pages %+v", doc.Pages)
	}
}

func TestPlainTextTidied(t *testing.T) {
	t.Parallel()
	doc, err := Extract(context.Background(), []byte("line one\r\nline two  \n\n\n\nline three\x07\n"), Text, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Pages[0].Text; got != "line one\nline two\n\nline three" {
		t.Fatalf("%q", got)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		data   []byte
		format Format
		lim    Limits
		want   string
		is     error
	}{
		{"image-only pdf", fixture(t, "scanned.pdf"), PDF, Limits{}, "no extractable text", ErrNoText},
		{"zip bomb", fixture(t, "zipbomb.docx"), DOCX, Limits{}, "declares more than", ErrTooLarge},
		{"too many entries", manyEntries(10_001), DOCX, Limits{}, "10001 entries", ErrTooLarge},
		{"input cap", make([]byte, 2000), Text, Limits{MaxInputBytes: 1000}, "over the 1000-byte limit", ErrTooLarge},
		{"not a zip", []byte("hello, I am not a zip file at all"), DOCX, Limits{}, "not a ZIP", nil},
		{"zip without document", buildZip([2]string{"a.txt", "x"}), DOCX, Limits{}, "not a Word document", nil},
		{"garbage pdf", []byte("%PDF-1.4\ngarbage"), PDF, Limits{}, "PDF", nil},
		{"not rtf", []byte("plain"), RTF, Limits{}, "not an RTF", nil},
		{"unknown format", []byte("x"), Format("exe"), Limits{}, "unsupported", ErrUnsupported},
		{"empty html", []byte("<script>x</script>"), HTML, Limits{}, "no extractable text", ErrNoText},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Extract(context.Background(), c.data, c.format, c.lim)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to mention %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("error %v is not %v", err, c.is)
			}
		})
	}
}

func TestCharCap(t *testing.T) {
	t.Parallel()
	doc, err := Extract(context.Background(), []byte(strings.Repeat("abcdefghij\n", 100)), Text, Limits{MaxChars: 50})
	if err != nil {
		t.Fatal(err)
	}
	if n := doc.Chars(); n > 50 || len(doc.Warnings) == 0 {
		t.Fatalf("%d chars, warnings %v", n, doc.Warnings)
	}
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Format{"/a/B.PDF": PDF, "x.docx": DOCX, "n.md": Markdown, "x.htm": HTML} {
		if f, err := FormatOf(in); err != nil || f != want {
			t.Errorf("%s: %v %v", in, f, err)
		}
	}
	for _, in := range []string{"/a/b.exe", "/a/noext"} {
		if _, err := FormatOf(in); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", in, err)
		}
	}
}
