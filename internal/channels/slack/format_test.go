package slack

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain", "hello", "hello"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no mentions from the model", "<!channel> <@U123> <https://evil|trust me>", "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|trust me&gt;"},
		{"bold", "**bold** and __also__", "*bold* and *also*"},
		{"italic", "*it* and _it_", "_it_ and _it_"},
		{"bold beside italic", "**b** *i*", "*b* _i_"},
		{"strike", "~~gone~~", "~gone~"},
		{"not emphasis", "2 * 3 * 4", "2 * 3 * 4"},
		{"heading", "## Plan **now**", "*Plan now*"},
		{"bullets", "- one\n* two\n  + three", "• one\n• two\n  • three"},
		{"quote", "> quoted & kept", "> quoted &amp; kept"},
		{"link", "see [the docs](https://example.org/a_b?x=1&y=2)", "see <https://example.org/a_b?x=1&amp;y=2|the docs>"},
		{"link url keeps emphasis chars", "[x](https://e.org/__init__/*a*)", "<https://e.org/__init__/*a*|x>"},
		{"not a link", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"code span", "run `rm -rf <dir> **x**` now", "run `rm -rf &lt;dir&gt; **x**` now"},
		{"unmatched backtick", "a ` b **c**", "a ` b *c*"},
		{"fence", "```go\nif a < b {\n**x**\n}\n```\nafter", "```\nif a &lt; b {\n**x**\n}\n```\nafter"},
		{"unclosed fence", "```\ncode", "```\ncode\n```"},
		{"crlf", "a\r\nb", "a\nb"},
		{"private-use marks are not text", "\uE000a\uE001", "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Render(tc.in); got != tc.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPlainText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"<@U0BOT> what's up", "what's up"},
		{"ask <@U0ANNA> and <@U0BOB|bob>", "ask @U0ANNA and @bob"},
		{"in <#C0GEN|general> or <#C0X>", "in #general or #C0X"},
		{"<!here> <!channel> <!subteam^S1|@team> <!date^1392734382^{date}|Feb 18>", "@here @channel @team Feb 18"},
		{"<https://example.org|example> <https://a.org> <https://b.org|b.org> <mailto:a@b.org|a@b.org>", "example (https://example.org) https://a.org https://b.org a@b.org"},
		{"1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"},
		{"&amp;lt; stays one level", "&lt; stays one level"},
		{"  spaced  ", "spaced"},
		{"<>", ""},
	}
	for _, tc := range cases {
		if got := PlainText(tc.in, "U0BOT"); got != tc.want {
			t.Errorf("PlainText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTruncateAndSections(t *testing.T) {
	t.Parallel()
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate kept = %q", got)
	}
	got := truncate("```\n"+strings.Repeat("é", 100), 50)
	if utf8.RuneCountInString(got) > 50 || !utf8.ValidString(got) || strings.Count(got, "```") != 2 {
		t.Errorf("truncate in a fence = %q", got)
	}
	if got := truncate(strings.Repeat("a", 40)+"&amp;&amp;&amp;", 47); strings.Contains(got, "&am…") || strings.HasSuffix(strings.TrimSuffix(got, "…"), "&") {
		t.Errorf("truncate cut an escape: %q", got)
	}

	text := strings.Repeat("line of text &amp; more\n", 300) + "```\n" + strings.Repeat("code\n", 800) + "```\nend"
	parts := sections(text, maxSectionText)
	if len(parts) < 3 {
		t.Fatalf("%d sections", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > maxSectionText || n == 0 {
			t.Errorf("section %d has %d characters", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("section %d leaves a fence open", i)
		}
	}
	joined := strings.Join(parts, "\n")
	if !strings.HasSuffix(joined, "end") || !strings.Contains(joined, "line of text") {
		t.Error("sections lost text")
	}
	// No break anywhere: cut at the limit, never inside an escape.
	for _, p := range sections(strings.Repeat("&amp;", 2000), 3000) {
		if strings.HasPrefix(p, "amp;") || strings.HasPrefix(p, "mp;") || strings.HasPrefix(p, "p;") || strings.HasPrefix(p, ";") {
			t.Errorf("a section starts inside an escape: %q", p[:10])
		}
	}
}
