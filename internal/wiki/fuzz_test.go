package wiki

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParsePage: any bytes parse without panicking, the body and links are
// valid UTF-8, and every link comes from a [[…]] on its line.
func FuzzParsePage(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.md")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("---\ntitle: x\n---\n[[a|b]] `[[not]]` ![[img.png]]"))
	f.Add([]byte("---\n- a\n- b\n---\n"))
	f.Add([]byte("---\ntitle: &a [*a, *a]\n---\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := ParsePage(raw)
		if !utf8.ValidString(p.Body) {
			t.Fatal("body is not valid UTF-8")
		}
		lines := strings.Split(p.Body, "\n")
		for _, l := range p.Links {
			if l.Line < 1 || l.Line > len(lines) || !strings.Contains(lines[l.Line-1], "[[") {
				t.Fatalf("link %+v not on a [[ line", l)
			}
			if !utf8.ValidString(l.Target) || !utf8.ValidString(l.Alias) || strings.Contains(l.Target, "]]") {
				t.Fatalf("bad link %+v", l)
			}
		}
		_ = chunkBody(p.Body)
		_ = UnifiedDiff("x", string(raw), p.Body)
	})
}

// FuzzCheckWritePath: an accepted path stays inside the folder and is
// never hidden, absolute, outside pages or under sources/.
func FuzzCheckWritePath(f *testing.F) {
	for _, s := range []string{"pages/a.md", "../x.md", "pages/../../x.md", "sources/a.md", ".x/a.md", "a\\..\\b.md", "pages/\u2024\u2024/x.md"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := CheckWritePath(p)
		if err != nil {
			return
		}
		if filepath.IsAbs(c) || strings.HasPrefix(c, "..") || strings.Contains(c, "/.") || strings.HasPrefix(c, ".") ||
			strings.HasPrefix(strings.ToLower(c), "sources/") || !strings.HasSuffix(strings.ToLower(c), ".md") {
			t.Fatalf("accepted %q as %q", p, c)
		}
	})
}
