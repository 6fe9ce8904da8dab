package mail

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Ranking a word or phrase under filters (a date range, a mailbox).
//
// The join "messages_fts JOIN messages ... ORDER BY rank" ranks every
// match through FTS5's bm25 (a docsize lookup each) and reads each
// match's row. filteredTopHits instead scores the matches from the word's
// doclist (wordScores, phraseScores: FTS5's order, ties by id) and then
// learns which pass the filters by one of two plans:
//
//   - checks: the best matches, a chunk at a time, each looked up by id
//     and tested against the filters, until enough pass. Each check reads
//     the message's row: ~1.7 µs with the CLI's small page cache, so a
//     filter passing one match in six costs six checks per hit wanted.
//   - date scan: the date range's entries of the covering messages_date
//     index (date, id, thread_id), each probed against the matches (~0.3
//     µs an entry, no row read): every match in range at once.
//
// Which is cheaper depends on how many messages the range holds and how
// many checks would find enough hits. When the filter has a date range,
// message_weeks (see Schema) says both at the cost of one small read: how
// many messages are dated in the weeks the range touches, and bounds of
// their ids. Matches outside the bounds fail the range, and since mail
// gets its ids roughly in date order (an import goes newest first, new
// mail arrives in order), the bounds usually leave few others: the checks
// then test little more than the matches they keep (six months of 20,000
// messages: 1,059 matches of a word narrowed to ~170, 150 checked; the
// checks of all of them took 3.5 ms, the narrowed ones 0.4 ms).
//
// Id lists go to SQLite as one JSON array (json_each): a statement with a
// placeholder per id costs ~0.9 µs an id to prepare and bind, as much as
// a row check itself, and its text differs with every length.

// maxFilterChecks bounds how many of a word's best matches the checks
// plan tests before it leaves a very selective filter (a sender, say) to
// the join, which can start from it.
const maxFilterChecks = 4096

// Plan costs in µs (a one-shot CLI process at 21,000 messages; the
// daemon's larger cache makes every step cheaper, the ratios alike).
const (
	costRowCheck  = 1.7 // one match looked up by id and tested
	costDateEntry = 0.3 // one messages_date entry scanned and probed
	costListed    = 0.1 // one match handed over in the JSON list
)

// filteredTopHits is topHits for a plain word or phrase under filters
// beyond liveness. It returns the best n matches that pass f (more when
// the date scan found them all at once), best first, and every message
// holding the word or phrase. ok is false when the matches cannot be
// scored from the doclist, or the checks plan tested maxFilterChecks
// without finding n: the caller joins instead.
func (s *Store) filteredTopHits(ctx context.Context, all string, f *filter, n int) (top topRanking, ok bool, err error) {
	var docs []int64
	var scores []float64
	if word, isWord := plainWord(all); isWord {
		docs, scores, ok, err = s.wordScores(ctx, word, s.wordRankMin)
	} else if words, isPhrase := plainPhrase(all); isPhrase {
		docs, scores, ok, err = s.phraseScores(ctx, all, words)
	}
	if !ok || err != nil {
		return topRanking{}, false, err
	}
	top = topRanking{matching: docs, matchingKnown: true}
	if len(docs) == 0 || n <= 0 {
		top.complete = len(docs) == 0
		return top, true, nil
	}
	// The fraction of matches expected to pass, for sizing the first
	// chunk of checks; 0 when unknown.
	var pass float64
	if f.dated {
		w, err := s.weekSpan(ctx, f)
		if err != nil {
			return topRanking{}, false, err
		}
		// Every message in range has an id in [w.lo, w.hi]: the matches
		// outside it fail the filter. Mail arrives, and is given ids,
		// roughly in date order, so this leaves few others.
		lo, _ := slices.BinarySearch(docs, w.lo)
		hi, _ := slices.BinarySearch(docs, w.hi+1)
		docs, scores = docs[lo:hi], scores[lo:hi]
		if len(docs) == 0 || w.count <= 0 {
			top.complete = true
			return top, true, nil
		}
		// The weeks' messages against the ids of the span (some maybe
		// gone): at least about the fraction of the matches left that
		// the range holds.
		pass = min(1, float64(w.count)/float64(max(1, w.hi-w.lo+1)))
		d := float64(len(docs))
		checks := min(d, float64(n)/pass)
		scan := float64(w.count)*costDateEntry+d*costListed < checks*costRowCheck
		if s.filterPlan != "" {
			scan = s.filterPlan == "scan"
		}
		if scan {
			top.hits, err = s.scanDateRange(ctx, f, docs, scores)
			top.complete = true
			return top, err == nil, err
		}
	}
	top.hits, top.complete, ok, err = s.checkBestFirst(ctx, f, docs, scores, n, pass)
	return top, ok, err
}

// checkBestFirst is the checks plan: the matches best first, a chunk at a
// time, until n pass. pass is the fraction expected to pass (0: unknown);
// each later chunk is sized from the fraction seen so far.
func (s *Store) checkBestFirst(ctx context.Context, f *filter, docs []int64, scores []float64, n int, pass float64) (hits []hit, complete, ok bool, err error) {
	out := make([]hit, 0, n)
	rate := pass
	if rate <= 0 {
		rate = 0.5
	}
	var sorted []int64
	checked := 0
	for len(out) < n && checked < len(docs) {
		if checked >= maxFilterChecks {
			return nil, false, false, nil
		}
		if checked > 0 {
			rate = max(float64(len(out))/float64(checked), 1.0/128)
		}
		// A fifth more than the rate says, so that one chunk usually
		// does; never more than the bound leaves.
		chunk := int(float64(n-len(out))/rate*1.2) + 8
		chunk = min(chunk, len(docs)-checked, maxFilterChecks-checked)
		if checked+chunk > len(sorted) {
			// Sorting only as far as the chunks read: with a filter
			// that passes one match in six, the first few hundred.
			sorted = topScored(docs, scores, min(len(docs), max(2*len(sorted), checked+chunk)))
		}
		ids := sorted[checked : checked+chunk]
		checked += chunk
		pass, err := s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m NOT INDEXED
			WHERE m.id IN (SELECT value FROM json_each(?)) AND `+f.sql(), append([]any{idList(ids)}, f.args...)...)
		if err != nil {
			return nil, false, false, err
		}
		thread := make(map[int64]int64, len(pass))
		for _, h := range pass {
			thread[h.id] = h.thread
		}
		for _, id := range ids {
			if t, in := thread[id]; in && len(out) < n {
				out = append(out, hit{id, t})
			}
		}
	}
	return out, len(out) < n, true, nil
}

// scanDateRange is the date scan plan: every match (docs, in id order,
// with their scores) that passes f, which bounds the date, best first.
func (s *Store) scanDateRange(ctx context.Context, f *filter, docs []int64, scores []float64) ([]hit, error) {
	pass, err := s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m INDEXED BY messages_date
		WHERE m.id IN (SELECT value FROM json_each(?)) AND `+f.sql(), append([]any{idList(docs)}, f.args...)...)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(pass, func(a, b hit) int { return cmp.Compare(a.id, b.id) })
	ids := make([]int64, 0, len(pass))
	sc := make([]float64, 0, len(pass))
	thread := make(map[int64]int64, len(pass))
	for _, h := range pass {
		i, found := slices.BinarySearch(docs, h.id)
		if !found {
			continue
		}
		ids = append(ids, h.id)
		sc = append(sc, scores[i])
		thread[h.id] = h.thread
	}
	out := make([]hit, 0, len(ids))
	for _, id := range topScored(ids, sc, len(ids)) {
		out = append(out, hit{id, thread[id]})
	}
	return out, nil
}

// weekSeconds is the width of a message_weeks bucket (see Schema).
const weekSeconds = 604800

// weekRange is what message_weeks says of the weeks a date range touches:
// how many messages they hold (an upper bound of the range's) and bounds
// of their ids.
type weekRange struct{ count, lo, hi int64 }

// weekSpan reads message_weeks for f's date range. Go's integer division
// truncates toward zero as SQLite's does, so the weeks are the ones the
// triggers filled.
func (s *Store) weekSpan(ctx context.Context, f *filter) (weekRange, error) {
	last := f.dateHi // exclusive
	if last > math.MinInt64 {
		last--
	}
	var w weekRange
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0), coalesce(min(lo), 0), coalesce(max(hi), -1) FROM message_weeks WHERE week BETWEEN ? AND ?`,
		f.dateLo/weekSeconds, last/weekSeconds).Scan(&w.count, &w.lo, &w.hi)
	if err != nil {
		return w, fmt.Errorf("reading the date range's weeks: %w", err)
	}
	return w, nil
}

// idList is ids as a JSON array, for "IN (SELECT value FROM json_each(?))".
func idList(ids []int64) string {
	b := make([]byte, 0, 8*len(ids)+2)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}
