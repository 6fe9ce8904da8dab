package signal

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, md, text string
		styles         []string
	}{
		{"plain", "hello there", "hello there", nil},
		{"bold", "a **bold** word", "a bold word", []string{"2:4:BOLD"}},
		{"bold underscores", "__x__", "x", []string{"0:1:BOLD"}},
		{"italic star", "an *italic* word", "an italic word", []string{"3:6:ITALIC"}},
		{"italic underscore", "an _italic_ word", "an italic word", []string{"3:6:ITALIC"}},
		{"snake case stays", "call my_func_name now", "call my_func_name now", nil},
		{"star in math stays", "2*3*4 = 24", "2*3*4 = 24", nil},
		{"strike", "~~gone~~", "gone", []string{"0:4:STRIKETHROUGH"}},
		{"spoiler", "the end: ||he lives||", "the end: he lives", []string{"9:8:SPOILER"}},
		{"code span opaque", "run `rm **x**` now", "run rm **x** now", []string{"4:8:MONOSPACE"}},
		{"nested", "**bold _and italic_**", "bold and italic", []string{"5:10:ITALIC", "0:15:BOLD"}},
		{"heading", "## Plan for today", "Plan for today", []string{"0:14:BOLD"}},
		{"heading with emphasis", "# The *big* one", "The big one", []string{"4:3:ITALIC", "0:11:BOLD"}},
		{"bullets", "- one\n* two\n  + three", "• one\n• two\n  • three", nil},
		{"link", "see [the docs](https://example.org/a)", "see the docs (https://example.org/a)", nil},
		{"bare link", "[https://example.org](https://example.org)", "https://example.org", nil},
		{"link text is host", "[example.org](https://example.org)", "https://example.org", nil},
		{"fence", "before\n```go\nx := **1**\n```\nafter", "before\nx := **1**\nafter", []string{"7:10:MONOSPACE"}},
		{"unclosed fence", "```\ncode", "code", []string{"0:4:MONOSPACE"}},
		{"empty fence", "```\n```\nx", "\nx", nil},
		// Offsets count UTF-16 units: the emoji is two.
		{"utf16", "😀 **b**", "😀 b", []string{"3:1:BOLD"}},
		{"accents", "é **ü**", "é ü", []string{"2:1:BOLD"}},
		{"unmatched", "a ** b and `c", "a ** b and `c", nil},
		{"table literal", "| a | b |\n|---|---|", "| a | b |\n|---|---|", nil},
		{"crlf", "a\r\n**b**", "a\nb", []string{"2:1:BOLD"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := Render(c.md)
			if r.Text != c.text {
				t.Errorf("text = %q, want %q", r.Text, c.text)
			}
			if got := r.Styles(); !slices.Equal(got, c.styles) && (len(got) > 0 || len(c.styles) > 0) {
				t.Errorf("styles = %q, want %q", got, c.styles)
			}
			checkSpans(t, r)
		})
	}
}

// checkSpans asserts every span lies inside the text and is not empty:
// signal-cli and Signal's clients reject or misdraw anything else.
func checkSpans(t *testing.T, r rendered) {
	t.Helper()
	units := len(utf16.Encode([]rune(r.Text)))
	for _, s := range r.Spans {
		if s.Start < 0 || s.Length <= 0 || s.Start+s.Length > units {
			t.Fatalf("span %v outside the text (%d units): %q", s, units, r.Text)
		}
	}
}

func TestRenderNeverGrows(t *testing.T) {
	t.Parallel()
	// The relay splits Markdown at Limits.MaxText runes; the rendered
	// text must fit too.
	for _, md := range []string{"- x", "[a](https://b.c)", "# h", "**b** _i_ `c`", "```\nx\n```", strings.Repeat("* item\n", 50)} {
		if n, m := utf8.RuneCountInString(Render(md).Text), utf8.RuneCountInString(md); n > m {
			t.Errorf("%q rendered to %d runes, from %d", md, n, m)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	r := Render(strings.Repeat("é", 10) + "**" + strings.Repeat("😀", 20) + "**")
	tr := r.truncate(15)
	if n := utf8.RuneCountInString(tr.Text); n != 15 || !strings.HasSuffix(tr.Text, "…") {
		t.Fatalf("truncated to %d runes: %q", n, tr.Text)
	}
	// 10 é (10 units) + 4 emoji (8 units) remain before the ellipsis.
	if got := tr.Styles(); !slices.Equal(got, []string{"10:8:BOLD"}) {
		t.Errorf("styles = %q", got)
	}
	checkSpans(t, tr)
	short := Render("**a**")
	if got := short.truncate(10); got.Text != "a" || len(got.Spans) != 1 {
		t.Errorf("short text changed: %+v", got)
	}
	// A span wholly past the cut goes.
	if got := Render("abcdef **g**").truncate(4); len(got.Spans) != 0 || got.Text != "abc…" {
		t.Errorf("got %+v", got)
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a** _b_ `c` ~~d~~ ||e||", "# h\n- x\n```\ny\n```", "😀**😀**", "[a](https://b)", "_a_b_", "***x***", "\xff**\xfe**"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		r := Render(md)
		checkSpans(t, r)
		checkSpans(t, r.truncate(20))
		if utf8.ValidString(md) && utf8.RuneCountInString(r.Text) > utf8.RuneCountInString(md) {
			t.Fatalf("rendering grew %q to %q", md, r.Text)
		}
	})
}
