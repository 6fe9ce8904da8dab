package actions

import (
	"context"
	"errors"
	"hash/fnv"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// meaningEmbedder stands in for an embedding model that knows synonyms:
// words of one concept share a dimension, other words hash into noise
// dimensions. Deterministic, so rankings are exact.
type meaningEmbedder struct {
	fail  bool
	calls int
	last  int // inputs of the last call
}

var concepts = map[string]int{
	"invoice": 0, "invoices": 0, "bill": 0, "billing": 0, "payment": 0,
	"train": 1, "ticket": 1, "tickets": 1, "trenitalia": 1, "biglietto": 1, "treno": 1,
	"dentist": 2, "dental": 2, "appointment": 2,
}

var wordsRE = regexp.MustCompile(`\p{L}+`)

func (m *meaningEmbedder) Dimension() int { return 16 }

func (m *meaningEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	m.calls++
	m.last = len(texts)
	if m.fail {
		return nil, errors.New("embedding endpoint down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, 16)
		for _, w := range wordsRE.FindAllString(strings.ToLower(t), -1) {
			if c, ok := concepts[w]; ok {
				v[c] += 3
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[3+h.Sum32()%13] += 0.2
		}
		out[i] = v
	}
	return out, nil
}

func flowNamesOf(fs []Flow) string {
	var n []string
	for _, f := range fs {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

// Flow retrieval is hybrid: BM25 over names and triggers fused by RRF with
// embedding similarity. Meaning alone retrieves a flow (a "bill" for the
// invoice flow); function words never do; a failing embedder falls back
// to the lexical ranking.
func TestFlowRetrievalIsHybrid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	flows := []Flow{
		{Name: "train tickets", Trigger: "a train ticket confirmation from Trenitalia arrives", Procedure: "add the journey to my calendar"},
		{Name: "invoices", Trigger: "an invoice arrives", Procedure: "file it under Finance"},
		{Name: "dentist", Trigger: "the dentist writes about an appointment", Procedure: "propose two slots"},
	}
	open := func(emb *meaningEmbedder) *Center {
		o := Options{}
		if emb != nil {
			o.Embedder = emb
		}
		c, err := Open(ctx, filepath.Join(t.TempDir(), "actions.db"), o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		for _, f := range flows {
			if _, err := c.AddFlow(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	emb := &meaningEmbedder{}
	hybrid, lexical, broken := open(emb), open(nil), open(&meaningEmbedder{fail: true})
	cases := []struct {
		text, hybrid, lexical string
	}{
		// Shares no word with any flow: only meaning finds it.
		{"Your bill for March is ready. Amount due 40 EUR.", "invoices", ""},
		// "the", "about", "your" are no reason to apply a flow.
		{"Lunch tomorrow? Shall we meet by the river, as usual? Tell me about your week.", "", ""},
		{"Il tuo biglietto Trenitalia: train 9544 Milano-Roma, carrozza 7", "train tickets", "train tickets"},
		{"Dental appointment reminder for Monday", "dentist", "dentist"},
		// Two flows apply: both, at most k.
		{"Invoice for your dentist appointment", "dentist,invoices", "dentist,invoices"},
	}
	for _, tc := range cases {
		got, err := hybrid.RetrieveFlows(ctx, tc.text, 2)
		if err != nil || flowNamesOf(got) != tc.hybrid {
			t.Errorf("hybrid %q: got %q (%v), want %q", tc.text, flowNamesOf(got), err, tc.hybrid)
		}
		got, err = lexical.RetrieveFlows(ctx, tc.text, 2)
		if err != nil || flowNamesOf(got) != tc.lexical {
			t.Errorf("lexical %q: got %q (%v), want %q", tc.text, flowNamesOf(got), err, tc.lexical)
		}
		got, err = broken.RetrieveFlows(ctx, tc.text, 2)
		if err != nil || flowNamesOf(got) != tc.lexical {
			t.Errorf("failing embedder %q: got %q (%v), want the lexical %q", tc.text, flowNamesOf(got), err, tc.lexical)
		}
	}
	if got, _ := hybrid.RetrieveFlows(ctx, "Invoice for your dentist appointment", 1); len(got) != 1 {
		t.Errorf("k=1 returned %d flows", len(got))
	}
	// Flow vectors are cached: later retrievals embed only the mail.
	before := emb.calls
	hybrid.RetrieveFlows(ctx, "another bill", 2)
	if emb.calls != before+1 || emb.last != 1 {
		t.Errorf("embedding calls %d → %d, last with %d inputs; want one call with only the mail", before, emb.calls, emb.last)
	}
}
