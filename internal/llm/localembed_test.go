package llm_test

import (
	"math"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/llm"
)

func TestLocalEmbedProperties(t *testing.T) {
	t.Parallel()
	a := llm.LocalVector("Invoice from the dentist for March")
	if len(a) != llm.LocalEmbedDim {
		t.Fatalf("dimension %d", len(a))
	}
	b := llm.LocalVector("Invoice from the dentist for March")
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same text gave different vectors")
		}
	}
	var norm float64
	for _, v := range a {
		norm += float64(v) * float64(v)
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("norm² %v, want 1", norm)
	}
	if z := llm.LocalVector("  ... !!! "); llm.Cosine(z, a) != 0 {
		t.Fatal("symbol-only text is not the zero vector")
	}
	// Long input is bounded, not rejected.
	if v := llm.LocalVector(strings.Repeat("word ", 100000)); len(v) != llm.LocalEmbedDim {
		t.Fatal("long input")
	}
}

// On a small fixed set, each query is closer to its related text than to
// any unrelated one.
func TestLocalEmbedSimilarity(t *testing.T) {
	t.Parallel()
	cases := []struct{ query, related string }{
		{"invoice from the dentist", "Your dentist invoices for March are attached"},
		{"flight to Berlin on Friday", "Booking confirmation: flights Berlin Friday 7:40"},
		{"team meeting agenda", "Agenda for the weekly team meeting"},
		{"password reset link", "Reset your password using this link"},
		{"Geburtstag von Anna", "Annas Geburtstag am Samstag"},
	}
	for i, c := range cases {
		q := llm.LocalVector(c.query)
		rel := llm.Cosine(q, llm.LocalVector(c.related))
		for j, o := range cases {
			if i == j {
				continue
			}
			if other := llm.Cosine(q, llm.LocalVector(o.related)); other >= rel {
				t.Errorf("%q: unrelated %q scored %.3f ≥ related %.3f", c.query, o.related, other, rel)
			}
		}
	}
}

func FuzzLocalVector(f *testing.F) {
	for _, s := range []string{"", "a", "héllo wörld", "\xff\xfe", "日本語のテキスト", strings.Repeat("x", 100)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := llm.LocalVector(s)
		if len(v) != llm.LocalEmbedDim {
			t.Fatal("dimension")
		}
		var n float64
		for _, x := range v {
			if math.IsNaN(float64(x)) {
				t.Fatal("NaN")
			}
			n += float64(x) * float64(x)
		}
		if n != 0 && math.Abs(n-1) > 1e-4 {
			t.Fatalf("norm² %v", n)
		}
	})
}
