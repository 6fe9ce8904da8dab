package mail

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// snippetReference is snippet as it was written first (whole-text
// strings.Fields and a rune slice); snippet must keep its output.
func snippetReference(body string, terms []string, limit int) string {
	body = strings.Join(strings.Fields(body), " ")
	start := 0
	lower := strings.ToLower(body)
	for _, t := range terms {
		if i := strings.Index(lower, t); i >= 0 {
			start = max(0, i-limit/4)
			for start > 0 && !utf8.RuneStart(body[start]) {
				start--
			}
			break
		}
	}
	r := []rune(body[start:])
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	if len(r) > limit {
		return prefix + string(r[:limit]) + "…"
	}
	return prefix + string(r)
}

func TestSnippetMatchesReference(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Grüße aus Köln,\n\n  the  water\tmeter report ", 40)
	for _, c := range []struct {
		body  string
		terms []string
		limit int
	}{
		{"", nil, 10},
		{"   ", []string{"x"}, 10},
		{"  hello   world  ", nil, 5},
		{"hello world", nil, 11},
		{"hello world", nil, 0},
		{long, []string{"water"}, 120},
		{long, []string{"absent", "meter"}, 200},
		{long, nil, 400},
		{"caf\xe9 \xff\xfe broken  bytes water", []string{"water"}, 8},
		{"a\u00a0b\u0085c\u2003d\u3000e water", []string{"water"}, 4},
		{strings.Repeat("日本語 ", 100) + "water", []string{"water"}, 20},
	} {
		got, want := snippet(c.body, c.terms, c.limit), snippetReference(c.body, c.terms, c.limit)
		if got != want {
			t.Errorf("snippet(%q, %q, %d) = %q, want %q", c.body, c.terms, c.limit, got, want)
		}
	}
}

func FuzzSnippet(f *testing.F) {
	f.Add("Grüße aus Köln,\n\n  the  water\tmeter", "water", 10)
	f.Add("caf\xe9 \xff broken", "broken", 3)
	f.Add("\xe9\xe900", "0", 3) // lower-casing lengthens the text: once a panic
	f.Fuzz(func(t *testing.T, body, term string, limit int) {
		limit = max(0, limit%300)
		terms := strings.Fields(strings.ToLower(term))
		got := snippet(body, terms, limit)
		want, ok := func() (s string, ok bool) {
			// The first version panicked when lower-casing lengthened the
			// text before a term; snippet must not, and need not match it there.
			defer func() { ok = recover() == nil }()
			return snippetReference(body, terms, limit), true
		}()
		if ok && got != want {
			t.Errorf("snippet(%q, %q, %d) = %q, want %q", body, terms, limit, got, want)
		}
	})
}
