package discord

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain markdown kept", "**bold** *it* ~~s~~ `code` [link](https://x.example)\n> quote\n- item\n1. one\n# Title\n### Sub", "**bold** *it* ~~s~~ `code` [link](https://x.example)\n> quote\n- item\n1. one\n# Title\n### Sub"},
		{"deep headings", "#### Four ####\n###### Six", "**Four**\n**Six**"},
		{"spoiler bars escaped", "a || b", `a \|\| b`},
		{"code untouched", "`a || b` and\n```\n| x | y |\n|---|---|\n||\n```", "`a || b` and\n```\n| x | y |\n|---|---|\n||\n```"},
		{"table fenced", "Costs:\n| item | € |\n| :--- | ---: |\n| tea | 3 |\nafter", "Costs:\n```\n| item | € |\n| :--- | ---: |\n| tea | 3 |\n```\nafter"},
		{"pipe line without separator", "| not a table", "| not a table"},
		{"image to link", "see ![chart](https://x.example/c.png) and ![](https://x.example/d.png)", "see [chart](https://x.example/c.png) and https://x.example/d.png"},
		{"thematic break", "a\n---\n* * *\nb", "a\n──────────\n──────────\nb"},
		{"list item not a break", "- a\n-- b", "- a\n-- b"},
		{"crlf", "a\r\nb", "a\nb"},
		{"unclosed fence", "```\n#### not a heading\n", "```\n#### not a heading\n"},
	} {
		if got := Render(tc.in); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := Truncate("short", 10); got != "short" {
		t.Error(got)
	}
	long := strings.Repeat("é", 3000)
	if got := Truncate(long, MaxMessage); utf8.RuneCountInString(got) != MaxMessage || !strings.HasSuffix(got, "…") {
		t.Errorf("%d runes", utf8.RuneCountInString(got))
	}
	code := "```\n" + strings.Repeat("x\n", 2000)
	got := Truncate(code, 100)
	if utf8.RuneCountInString(got) > 100 || !strings.HasSuffix(got, "\n```") {
		t.Errorf("code cut %q", got)
	}
	if got := Truncate("abcdef", 3); got != "abc" {
		t.Errorf("tiny limit %q", got)
	}
}

func TestCustomID(t *testing.T) {
	t.Parallel()
	id, v, ok := parseCustomID(customID("a_1f", "allow_10m"))
	if !ok || id != "a_1f" || v != "allow_10m" {
		t.Fatalf("%q %q %v", id, v, ok)
	}
	// The approval id may itself hold colons; the verb is after the last.
	if id, v, ok := parseCustomID("a:x:y:deny"); !ok || id != "x:y" || v != "deny" {
		t.Errorf("%q %q %v", id, v, ok)
	}
	for _, bad := range []string{"", "a:", "a::approve", "a:x", "a:x:APPROVE", "b:x:approve", "a:x y:approve", "a:" + strings.Repeat("x", 100) + ":deny"} {
		if _, _, ok := parseCustomID(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
