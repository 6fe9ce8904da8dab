package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
)

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"plain <script>&", "plain &lt;script&gt;&amp;"},
		{"**bold** and *it* and ~~gone~~", "<b>bold</b> and <i>it</i> and <s>gone</s>"},
		{"use `a<b>` here", "use <code>a&lt;b&gt;</code> here"},
		{"# Title", "<b>Title</b>"},
		{"- one\n* two", "• one\n• two"},
		{"[site](https://example.com/a?b=1&c=2)", `<a href="https://example.com/a?b=1&amp;c=2">site</a>`},
		{"[bad](javascript:alert(1))", "[bad](javascript:alert(1))"},
		{"```go\nx := 1 < 2\n```\nafter", "<pre>x := 1 &lt; 2</pre>\nafter"},
		{"```\nunclosed", "<pre>unclosed</pre>"},
		{"a ` lone backtick", "a ` lone backtick"},
		{"**a [b** c](https://x.y)", `**a <a href="https://x.y">b** c</a>`},
		{"[x](https://a/**b**)", `[x](https://a/<b>b</b>)`},
	}
	for _, c := range cases {
		got := Render(c.in)
		if got != c.want {
			t.Errorf("Render(%q) = %q, want %q", c.in, got, c.want)
		}
		if _, err := tgtest.CheckHTML(got); err != nil {
			t.Errorf("Render(%q) is not valid Telegram HTML: %v", c.in, err)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 2000) + "\n\n```\n" + strings.Repeat("code line\n", 600) + "```\nend"
	parts := Split(long)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var joined int
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > chunkRunes {
			t.Fatalf("part %d has %d runes", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Fatalf("part %d leaves a fence open", i)
		}
		vis, err := tgtest.CheckHTML(Render(p))
		if err != nil || utf8.RuneCountInString(vis) > MaxMessage {
			t.Fatalf("part %d: %v (%d visible)", i, err, utf8.RuneCountInString(vis))
		}
		joined += strings.Count(p, "word")
	}
	if joined != 2000 || !strings.HasSuffix(parts[len(parts)-1], "end") {
		t.Fatalf("words kept %d", joined)
	}
	if got := Split("short"); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short: %q", got)
	}
	// A single word longer than a message is cut at a character boundary.
	for _, p := range Split(strings.Repeat("é", 9000)) {
		if !utf8.ValidString(p) || utf8.RuneCountInString(p) > chunkRunes {
			t.Fatal("bad hard cut")
		}
	}
}

// FuzzRender: whatever the model writes, every piece is valid Telegram
// HTML that fits in one message, and no text is lost.
func FuzzRender(f *testing.F) {
	for _, s := range []string{"**a**", "`x`", "```\ny\n```", "[a](https://b)", "<b>&amp;", "# h\n- i", "*a **b* c**", "~~s~~ _u_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for _, p := range Split(s) {
			vis, err := tgtest.CheckHTML(Render(p))
			if err != nil {
				t.Fatalf("Render(%q): %v", p, err)
			}
			if utf8.RuneCountInString(vis) > MaxMessage {
				t.Fatalf("piece of %d visible characters", utf8.RuneCountInString(vis))
			}
		}
	})
}

func TestSniff(t *testing.T) {
	t.Parallel()
	cases := map[string][]byte{
		"ogg":  []byte("OggS\x00\x02rest"),
		"mp3":  []byte("ID3\x03\x00"),
		"wav":  []byte("RIFF\x00\x00\x00\x00WAVEfmt "),
		"flac": []byte("fLaC\x00"),
		"webm": {0x1A, 0x45, 0xDF, 0xA3, 0x01},
		"m4a":  []byte("\x00\x00\x00\x20ftypM4A "),
		"":     []byte("#!/bin/sh\nrm -rf /"),
	}
	for want, data := range cases {
		if got := Sniff(data); got != want {
			t.Errorf("Sniff(%q) = %q, want %q", data, got, want)
		}
	}
}
