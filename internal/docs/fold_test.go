package docs

import (
	"strings"
	"testing"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// slowFold is fold without the ASCII shortcut.
func slowFold(s string) string {
	out, _, err := transform.String(transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC), strings.ToLower(s))
	if err != nil {
		return strings.ToLower(s)
	}
	return out
}

func TestFoldShortcutAgrees(t *testing.T) {
	for _, s := range []string{"", "Termination NOTICE 30 days.", "a\x00b\x7f~Z", "Kündigung", "ÉCOLE", "İstanbul", "straße"} {
		if got, want := fold(s), slowFold(s); got != want {
			t.Errorf("fold(%q) = %q, want %q", s, got, want)
		}
	}
	if fold("Kündigung") != "kundigung" {
		t.Errorf("diacritics kept: %q", fold("Kündigung"))
	}
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{"Termination", "ÄÖÜ", "x\xffy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := fold(s), slowFold(s); got != want {
			t.Fatalf("fold(%q) = %q, want %q", s, got, want)
		}
	})
}
