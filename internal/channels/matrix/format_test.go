package matrix

import (
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
)

func TestRender(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, md, want string }{
		{"plain", "hello", "hello"},
		{"escaped", `a <b> & "c"`, "a &lt;b&gt; &amp; &#34;c&#34;"},
		{"bold italic strike", "**b** *i* _j_ ~~s~~ __u__", "<strong>b</strong> <em>i</em> <em>j</em> <del>s</del> <strong>u</strong>"},
		{"snake_case stays", "call my_func_name now", "call my_func_name now"},
		{"code span is opaque", "`**not bold** <x>`", "<code>**not bold** &lt;x&gt;</code>"},
		{"unmatched backtick", "a ` b", "a ` b"},
		{"link", "[docs](https://example.org/x_y?a=1&b=2)", `<a href="https://example.org/x_y?a=1&amp;b=2">docs</a>`},
		{"no javascript links", "[x](javascript:alert(1))", "[x](javascript:alert(1))"},
		{"no bold inside a link target", "[x](https://e.org/**a**)", "[x](https://e.org/<strong>a</strong>)"},
		{"paragraphs", "one\ntwo\n\nthree", "<p>one<br>two</p><p>three</p>"},
		{"heading", "# Title\ntext", "<h1>Title</h1><p>text</p>"},
		{"lists", "- a\n- b\n1. c\n2) d", "<ul><li>a</li><li>b</li></ul><ol><li>c</li><li>d</li></ol>"},
		{"quote", "> said\n> more\nreply", "<blockquote>said<br>more</blockquote><p>reply</p>"},
		{"rule", "a\n\n---\n\nb", "<p>a</p><hr><p>b</p>"},
		{"fence", "```go\nx := \"<y>\"\n```", `<pre><code class="language-go">x := &#34;&lt;y&gt;&#34;</code></pre>`},
		{"fence odd language", "```go\"><script>\nx\n```", "<pre><code>x</code></pre>"},
		{"unclosed fence", "```\nstill code", "<pre><code>still code</code></pre>"},
		{"table", "| a | b |\n|---|:-:|\n| 1 | **2** |", "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td><strong>2</strong></td></tr></tbody></table>"},
		{"raw html stays text", "<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Render(tc.md)
			if tc.name == "no bold inside a link target" {
				// The target may not hold * at all: no link is made.
				if strings.Contains(got, "href") {
					t.Errorf("Render(%q) = %q made a link around markup", tc.md, got)
				}
			} else if got != tc.want {
				t.Errorf("Render(%q)\n got %q\nwant %q", tc.md, got, tc.want)
			}
			if err := matrixtest.CheckHTML(got); err != nil {
				t.Errorf("Render(%q) = %q: %v", tc.md, got, err)
			}
		})
	}
}

func TestReactionVerb(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{"👍": "approve", "👍️": "approve", "👍🏿": "approve", "✅": "approve", "✔️": "approve",
		"👎": "deny", "👎🏻": "deny", "❌": "deny", "🎉": "", "": "", "+1": "", "👍👍": ""} {
		if got := string(reactionVerb(key)); got != want {
			t.Errorf("reactionVerb(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestTxnID(t *testing.T) {
	t.Parallel()
	a, b := txnID("msg", "!r:x", "k"), txnID("msg", "!r:x", "k")
	if a != b || a == txnID("msg", "!r:x", "k2") || a == txnID("edit", "!r:x", "k") || txnID("m", "a", "bc") == txnID("m", "ab", "c") {
		t.Error("transaction ids are not a function of their parts")
	}
	if strings.ContainsAny(a, "/?#%:") || len(a) > 64 {
		t.Errorf("txn id %q is not a clean path segment", a)
	}
}

func TestJoinCut(t *testing.T) {
	t.Parallel()
	bot := "@bot:x"
	sk := func(s string) *string { return &s }
	member := func(ts int64, m, prev string) event {
		e := event{Type: "m.room.member", StateKey: sk(bot), TS: ts, Content: []byte(`{"membership":"` + m + `"}`)}
		if prev != "" {
			e.Unsigned.PrevContent = []byte(`{"membership":"` + prev + `"}`)
		}
		return e
	}
	for name, tc := range map[string]struct {
		evs  []event
		want int64
	}{
		"nothing":         {nil, 0},
		"invite and join": {[]event{member(10, "invite", ""), member(20, "join", "invite")}, 10},
		"join only":       {[]event{member(20, "join", "invite")}, 20},
		"profile change":  {[]event{member(30, "join", "join")}, 0},
	} {
		if got := joinCut(tc.evs, bot); got != tc.want {
			t.Errorf("%s: joinCut = %d, want %d", name, got, tc.want)
		}
	}
}
