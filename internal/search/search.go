// Package search holds the hybrid-retrieval pieces every connector shares:
// safe FTS5 query building (word and trigram), reciprocal rank fusion, and
// a small in-memory vector index with its binary encoding.
//
// Connectors own their tables; this package only builds query strings,
// fuses ranked id lists and scores vectors, so it has no schema of its own.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// shared retrieval pieces: FTS5 and trigram query building, int8 vector index (from 20,000 vectors
// a sign-bit prefilter over the query's nonzero components, then exact int8 rescoring of 2,000
// candidates; a query with ≤ 32 nonzero components — the local embedder's for a short text — reads
// those components' sign-bit columns only), reciprocal rank fusion.
package search

import (
	"context"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Embedder turns texts into vectors. Dimension reports the vector length,
// or 0 while unknown (before the first call).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimension() int
}

// MaxTerms bounds how many words of a free-text query reach FTS5, so a
// pasted paragraph cannot build a pathological expression.
const MaxTerms = 16

// Terms splits free text into the words FTS5's unicode61 tokenizer would
// see (phrases flattened), for snippets and highlighting.
func Terms(text string) []string {
	var out []string
	for _, c := range Clauses(text) {
		out = append(out, c...)
	}
	return out
}

// Clause is one required unit of a free-text query: a single word, or a
// phrase whose words must appear next to each other in this order.
type Clause []string

// Clauses parses free text the way people type it into a mail search box:
// text in double quotes is a phrase; a word whose pieces are joined by
// connectors ("e-mail", "ann.lee@example.org", "don't") is a phrase too,
// as notmuch and mu read them; everything else is single words. FTS5
// operators typed by a user (or a model) are plain words. At most MaxTerms
// words reach the index.
func Clauses(text string) []Clause {
	var out []Clause
	words := 0
	add := func(c Clause) {
		if len(c) == 0 || words >= MaxTerms {
			return
		}
		if words+len(c) > MaxTerms {
			c = c[:MaxTerms-words]
		}
		words += len(c)
		out = append(out, c)
	}
	for i, seg := range strings.Split(text, `"`) {
		if i%2 == 1 { // inside quotes (an unclosed quote runs to the end)
			add(Clause(tokens(seg)))
			continue
		}
		for _, w := range strings.Fields(seg) {
			for _, c := range joined(w) {
				add(c)
			}
		}
	}
	return out
}

// tokens lower-cases and splits s at everything but letters and digits.
func tokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, notWordRune) {
		out = append(out, strings.ToLower(w))
	}
	return out
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// joined splits one whitespace-free word into clauses: pieces separated by
// a single connector character stay together as a phrase.
func joined(w string) []Clause {
	var out []Clause
	var cur Clause
	var piece strings.Builder
	sep := "" // the non-word run since the last piece
	flush := func() {
		if piece.Len() == 0 {
			return
		}
		word := strings.ToLower(piece.String())
		piece.Reset()
		if len(cur) > 0 && !connector(sep) {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, word)
		sep = ""
	}
	for _, r := range w {
		if notWordRune(r) {
			flush()
			sep += string(r)
			continue
		}
		piece.WriteRune(r)
	}
	flush()
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func connector(sep string) bool {
	switch sep {
	case "-", ".", "@", "_", "/", "'", "’", ":", "+", "&":
		return true
	}
	return false
}

// MatchAll builds an FTS5 MATCH expression requiring every clause of text
// (words, and phrases as phrases). Each clause is a quoted string, so FTS5
// syntax typed by a user is plain text. It returns "" when text has no words.
func MatchAll(text string) string {
	return join(Clauses(text), " AND ")
}

// MatchAny is MatchAll with OR: used to widen recall when an AND query
// finds too little.
func MatchAny(text string) string {
	return join(Clauses(text), " OR ")
}

func join(clauses []Clause, op string) string {
	if len(clauses) == 0 {
		return ""
	}
	q := make([]string, len(clauses))
	for i, c := range clauses {
		q[i] = quote(strings.Join(c, " "))
	}
	return strings.Join(q, op)
}

func quote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// MinSubstring is the shortest substring an FTS5 trigram index can answer.
const MinSubstring = 3

// Substring builds a trigram-table MATCH expression for a literal
// substring, optionally restricted to one column. ok is false when s is too
// short for the trigram index; callers then report the constraint as
// unusable rather than falling back to a full scan.
func Substring(column, s string) (expr string, ok bool) {
	s = strings.TrimSpace(s)
	if utf8.RuneCountInString(s) < MinSubstring {
		return "", false
	}
	if column == "" {
		return quote(s), true
	}
	return column + " : " + quote(s), true
}

// maxTrigrams bounds how many trigrams of one substring reach a
// detail=none trigram index: the index only narrows the candidates (the
// caller checks the substring itself), and each trigram costs a doclist
// walk, so a few rare ones narrow as well as all of them and much faster
// (a 23-character address: 21 trigrams 3.1 ms, its 4 rarest 0.1 ms, at
// 100k messages).
const maxTrigrams = 4

// Trigrams builds a MATCH expression for a trigram index built with
// detail=none, which answers neither phrases nor column filters: the rows
// holding the rarest few trigrams of s, rarest first. It is a superset of
// the rows containing s; the caller must check the substring itself (see
// Fold). ok is false when s is too short.
func Trigrams(s string) (expr string, ok bool) {
	r := []rune(strings.TrimSpace(s))
	if len(r) < MinSubstring {
		return "", false
	}
	type tri struct {
		t     string
		score int
	}
	seen := map[string]bool{}
	var all []tri
	for i := 0; i+MinSubstring <= len(r); i++ {
		t := string(r[i : i+MinSubstring])
		if seen[t] {
			continue
		}
		seen[t] = true
		score := 0
		for _, c := range r[i : i+MinSubstring] {
			score += runeRarity(unicode.ToLower(c))
		}
		all = append(all, tri{t, score})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	var parts []string
	for _, t := range all[:min(len(all), maxTrigrams)] {
		parts = append(parts, quote(t.t))
	}
	return strings.Join(parts, " AND "), true
}

// runeRarity guesses how rare a character is in mail headers and text:
// digits and the least used letters narrow a trigram search most; the
// commonest letters, spaces and dots least.
func runeRarity(c rune) int {
	switch {
	case c >= '0' && c <= '9':
		return 3
	case strings.ContainsRune("etaoinsrhl. ", c):
		return 0
	case strings.ContainsRune("dcumfpgwyb", c):
		return 1
	case strings.ContainsRune("vkjxqz", c):
		return 2
	case c < 128:
		return 2 // @ _ - + and other punctuation
	default:
		return 2 // letters outside ASCII
	}
}

// Fold lower-cases s and strips its diacritics ("Café" → "cafe"), as the
// trigram tokenizer with remove_diacritics does, so a substring check on
// folded text agrees with what the index matched.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(s)
	}
	t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
	out, _, err := transform.String(t, strings.ToLower(s))
	if err != nil {
		return strings.ToLower(s)
	}
	return out
}

// K is the conventional reciprocal rank fusion constant.
const K = 60

// Fused is one id with its fused score.
type Fused struct {
	ID    int64
	Score float64
}

// RRF fuses ranked lists: score(d) = Σ 1/(k + rank_i(d)), rank from 1. It
// compares positions, not raw scores, so BM25 and cosine distances never
// need a common scale. Ties keep first-appearance order, which makes the
// result deterministic.
func RRF(k int, lists ...[]int64) []Fused {
	if k <= 0 {
		k = K
	}
	score := map[int64]float64{}
	var order []int64
	for _, l := range lists {
		seen := map[int64]bool{}
		for i, id := range l {
			if seen[id] {
				continue // a list counts an id once, at its best rank
			}
			seen[id] = true
			if _, ok := score[id]; !ok {
				order = append(order, id)
			}
			score[id] += 1 / float64(k+i+1)
		}
	}
	out := make([]Fused, len(order))
	for i, id := range order {
		out[i] = Fused{ID: id, Score: score[id]}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}
