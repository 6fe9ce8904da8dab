// Package search holds the hybrid-retrieval pieces every connector shares:
// safe FTS5 query building (word and trigram), reciprocal rank fusion, and
// a small in-memory vector index with its binary encoding.
//
// Connectors own their tables; this package only builds query strings,
// fuses ranked id lists and scores vectors, so it has no schema of its own.
package search

import (
	"context"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
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

// Terms splits free text into the words FTS5's unicode61 tokenizer would see.
func Terms(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		out = append(out, strings.ToLower(w))
		if len(out) == MaxTerms {
			break
		}
	}
	return out
}

// MatchAll builds an FTS5 MATCH expression requiring every word of text.
// Each word is a quoted string, so FTS5 operators and column filters typed
// by a user (or a model) are plain text, never syntax. It returns "" when
// text has no words.
func MatchAll(text string) string {
	return join(Terms(text), " AND ")
}

// MatchAny is MatchAll with OR: used to widen recall when an AND query
// finds too little.
func MatchAny(text string) string {
	return join(Terms(text), " OR ")
}

func join(terms []string, op string) string {
	if len(terms) == 0 {
		return ""
	}
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = quote(t)
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
