package whatsapp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"**bold** and __bold__", "*bold* and *bold*"},
		{"*italic* and _italic_", "_italic_ and _italic_"},
		{"~~gone~~", "~gone~"},
		{"a **b** *c* ~~d~~", "a *b* _c_ ~d~"},
		{"2*3*4 stays", "2*3*4 stays"},
		{"# Title", "*Title*"},
		{"### Title ###", "*Title*"},
		{"# **Bold** title", "*Bold* title"},
		{"- one\n* two\n  + three", "• one\n• two\n  • three"},
		{"see [docs](https://example.org/a_b)", "see docs (https://example.org/a_b)"},
		{"[https://x.org](https://x.org)", "https://x.org"},
		{"run `rm -rf **x**` now", "run ```rm -rf **x**``` now"},
		{"a ` lone backtick", "a ` lone backtick"},
		{"empty `` pair", "empty `` pair"},
		{"```go\nfunc **x**() {}\n```\nafter **b**", "```\nfunc **x**() {}\n```\nafter *b*"},
		{"```\nunclosed *x*", "```\nunclosed *x*\n```"},
		{"line\r\nbreaks", "line\nbreaks"},
		{"| a | b |\n|---|---|", "| a | b |\n|---|---|"},
	} {
		if got := Render(tc.in); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := Truncate("héllo", 5); got != "héllo" {
		t.Errorf("fits: %q", got)
	}
	if got := Truncate("héllo world", 5); got != "héll…" || utf8.RuneCountInString(got) != 5 {
		t.Errorf("cut: %q", got)
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	got := oneLine("a\n\n  b\t\tc      d\r\n   \ne")
	if got != "a · b c d · e" {
		t.Errorf("oneLine = %q", got)
	}
	if strings.ContainsAny(got, "\n\t") || strings.Contains(got, "     ") {
		t.Errorf("not a valid template parameter: %q", got)
	}
}

func TestParseButtonID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, id string
		verb   string
		ok     bool
	}{
		{"a:apr_1:approve", "apr_1", "approve", true},
		{"a:apr:with:colons:deny", "apr:with:colons", "deny", true},
		{"a:x:allow_10m", "x", "allow_10m", true},
		{"a::approve", "", "", false},
		{"a:x:delete", "", "", false},
		{"b:x:approve", "", "", false},
		{"a:approve", "", "", false},
		{"", "", "", false},
	} {
		id, verb, ok := parseButtonID(tc.in)
		if id != tc.id || string(verb) != tc.verb || ok != tc.ok {
			t.Errorf("parseButtonID(%q) = %q %q %v", tc.in, id, verb, ok)
		}
	}
}
