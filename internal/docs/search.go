package docs

import (
	"context"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/hestia-dev/hestia/internal/search"
)

// Search parameters (chunking, candidate pools, semantic sampling).
const (
	chunkChars     = 1800
	chunkOverlap   = 200
	maxCandidates  = 50
	maxSemantic    = 256
	embedBatch     = 64
	defaultResults = 5
	maxResults     = 10
	defaultContext = 300
	maxContext     = 800
)

// chunk is a window of one page's text, in byte offsets.
type chunk struct {
	page       int // 1-based
	start, end int
	norm       string // case- and accent-folded text for lexical search
}

// chunkPages splits every page into ~1,800-character windows overlapping
// by 200, ending at a nearby newline or sentence end where there is one.
func chunkPages(pages []Page) []chunk {
	var out []chunk
	for _, p := range pages {
		t := p.Text
		for start := 0; start < len(t); {
			end := advance(t, start, chunkChars)
			if end < len(t) {
				end = boundary(t, start, end)
			}
			out = append(out, chunk{page: p.Number, start: start, end: end, norm: fold(t[start:end])})
			if end >= len(t) {
				break
			}
			next := back(t, end, chunkOverlap)
			if next <= start {
				next = end
			}
			start = next
		}
	}
	return out
}

// advance moves n runes forward from i.
func advance(s string, i, n int) int {
	for ; n > 0 && i < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return i
}

// back moves n runes backward from i.
func back(s string, i, n int) int {
	for ; n > 0 && i > 0; n-- {
		_, w := utf8.DecodeLastRuneInString(s[:i])
		i -= w
	}
	return i
}

// boundary pulls end back to a newline or sentence end within the last
// 300 characters of the window, if there is one.
func boundary(s string, start, end int) int {
	lo := max(start+1, back(s, end, 300))
	win := s[lo:end]
	if i := strings.LastIndex(win, "\n"); i >= 0 {
		return lo + i + 1
	}
	for _, sep := range []string{". ", "? ", "! ", "; "} {
		if i := strings.LastIndex(win, sep); i >= 0 {
			return lo + i + len(sep)
		}
	}
	if i := strings.LastIndex(win, " "); i >= 0 {
		return lo + i + 1
	}
	return end
}

// fold lower-cases and strips diacritics so "Kündigung" matches "kundigung".
// ASCII text (most of most documents) takes a byte loop: the Unicode
// normalisation chain costs about ten times more and changes nothing there.
func fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			if 'A' <= c && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, strings.ToLower(s))
	if err != nil {
		return strings.ToLower(s)
	}
	return out
}

var stopWords = map[string]bool{"the": true, "a": true, "an": true, "of": true, "and": true, "or": true, "to": true, "in": true, "on": true, "is": true, "for": true, "what": true, "does": true, "say": true, "about": true, "with": true}

// queryTerms are the distinct folded words of a query, stop words dropped
// unless nothing else is left.
func queryTerms(q string) []string {
	words := strings.FieldsFunc(fold(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	var out, stops []string
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] || len(out) >= 16 {
			continue
		}
		seen[w] = true
		if stopWords[w] {
			stops = append(stops, w)
			continue
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		return stops
	}
	return out
}

// lexical ranks chunks by bounded, idf-weighted term counts with a bonus
// for the whole phrase; at most maxCandidates chunk indexes, best first.
func lexical(chunks []chunk, query string) []int {
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil
	}
	counts := make([][]int, len(terms))
	df := make([]int, len(terms))
	for ti, t := range terms {
		counts[ti] = make([]int, len(chunks))
		for ci := range chunks {
			n := strings.Count(chunks[ci].norm, t)
			counts[ti][ci] = n
			if n > 0 {
				df[ti]++
			}
		}
	}
	phrase := strings.Join(strings.Fields(fold(query)), " ")
	type scored struct {
		i     int
		score float64
	}
	var hits []scored
	for ci := range chunks {
		s, matched := 0.0, 0
		for ti := range terms {
			if n := counts[ti][ci]; n > 0 {
				matched++
				idf := math.Log(1 + float64(len(chunks))/float64(df[ti]))
				s += idf * (1 + math.Log(float64(min(n, 10))))
			}
		}
		if matched == 0 {
			continue
		}
		s *= float64(matched) / float64(len(terms)) // prefer chunks with every term
		if len(terms) > 1 && strings.Contains(chunks[ci].norm, phrase) {
			s *= 2
		}
		hits = append(hits, scored{ci, s})
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := make([]int, 0, min(len(hits), maxCandidates))
	for _, h := range hits[:min(len(hits), maxCandidates)] {
		out = append(out, h.i)
	}
	return out
}

// SemanticStatus says how much of a document the semantic ranking saw.
type SemanticStatus struct {
	Status   string `json:"status"` // disabled, unavailable, full, sampled, partial
	Selected int    `json:"selected_chunks,omitempty"`
	Embedded int    `json:"embedded_chunks,omitempty"`
	Error    string `json:"error,omitempty"`
}

// semantic ranks a sample of at most maxSemantic chunks by cosine
// similarity to the query. Vectors are kept on the entry; failed ones are
// retried on a later search.
func (s *Service) semantic(ctx context.Context, e *entry, query string) ([]int, SemanticStatus) {
	if s.Embedder == nil {
		return nil, SemanticStatus{Status: "disabled"}
	}
	n := len(e.chunks)
	sel := make([]int, 0, min(n, maxSemantic))
	if n <= maxSemantic {
		for i := range n {
			sel = append(sel, i)
		}
	} else {
		for k := range maxSemantic {
			sel = append(sel, k*n/maxSemantic)
		}
	}
	st := SemanticStatus{Selected: len(sel)}
	qv, err := s.Embedder.Embed(ctx, []string{query})
	if err != nil || len(qv) != 1 || len(qv[0]) == 0 {
		st.Status = "unavailable"
		if err != nil {
			st.Error = oneLine(err.Error())
		}
		return nil, st
	}
	q := search.Normalize(append([]float32(nil), qv[0]...))
	e.mu.Lock()
	if e.vecDim != 0 && e.vecDim != len(q) {
		e.vectors = nil // the embedding model changed; old vectors are useless
	}
	e.vecDim = len(q)
	if e.vectors == nil {
		e.vectors = make([][]float32, n)
	}
	var missing []int
	for _, i := range sel {
		if e.vectors[i] == nil {
			missing = append(missing, i)
		}
	}
	e.mu.Unlock()
	added := false
	for b := 0; b < len(missing); b += embedBatch {
		batch := missing[b:min(b+embedBatch, len(missing))]
		texts := make([]string, len(batch))
		for j, ci := range batch {
			c := e.chunks[ci]
			texts[j] = e.doc.Pages[c.page-1].Text[c.start:c.end]
		}
		vs, err := s.Embedder.Embed(ctx, texts)
		if err != nil {
			st.Error = oneLine(err.Error())
			break
		}
		e.mu.Lock()
		for j, ci := range batch {
			if j < len(vs) && len(vs[j]) == len(q) {
				e.vectors[ci] = search.Normalize(append([]float32(nil), vs[j]...))
				added = true
			}
		}
		e.mu.Unlock()
	}
	if added {
		s.cache.grew(e)
	}
	type scored struct {
		i     int
		score float32
	}
	var hits []scored
	e.mu.Lock()
	for _, i := range sel {
		v := e.vectors[i]
		if len(v) != len(q) {
			continue
		}
		st.Embedded++
		var dot float32
		for k := range v {
			dot += v[k] * q[k]
		}
		hits = append(hits, scored{i, dot})
	}
	e.mu.Unlock()
	switch {
	case st.Embedded == 0:
		st.Status = "unavailable"
	case st.Embedded < len(sel):
		st.Status = "partial"
	case len(sel) < n:
		st.Status = "sampled"
	default:
		st.Status = "full"
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].score > hits[b].score })
	out := make([]int, 0, min(len(hits), maxCandidates))
	for _, h := range hits[:min(len(hits), maxCandidates)] {
		out = append(out, h.i)
	}
	return out, st
}

// excerpt cuts about ctxChars characters of page text around the first
// query term in chunk c; it returns the excerpt's start offset too.
func excerpt(page string, c chunk, terms []string, ctxChars int) (string, int) {
	text := page[c.start:c.end]
	center := 0
	if low := strings.ToLower(text); len(low) == len(text) {
		best := -1
		for _, t := range terms {
			if i := strings.Index(low, t); i >= 0 && (best < 0 || i < best) {
				best = i
			}
		}
		if best >= 0 {
			center = best
		}
	}
	abs := c.start + center
	from := back(page, abs, ctxChars/3)
	to := advance(page, from, ctxChars)
	// Whole words at the cut edges.
	if from > 0 {
		if i := strings.IndexAny(page[from:min(abs, len(page))], " \n"); i >= 0 && i < 40 {
			from += i + 1
		}
	}
	if to < len(page) {
		if i := strings.LastIndexAny(page[max(from, to-40):to], " \n"); i >= 0 {
			to = max(from, to-40) + i
		}
	}
	ex := strings.TrimSpace(page[from:to])
	if from > 0 {
		ex = "…" + ex
	}
	if to < len(page) {
		ex += "…"
	}
	return ex, from
}
