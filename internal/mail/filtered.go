package mail

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Ranking a word or phrase under filters (a date range, a mailbox).
//
// The join "messages_fts JOIN messages ... ORDER BY rank" ranks every
// match through FTS5's bm25 (a docsize lookup each) and reads each
// match's row. scoredTopHits instead scores the matches from the word's
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

// scoredTopHits is topHits for a plain word or phrase whose matches were
// scored from the doclist (docs in id order, with their scores): the best
// want.need of them that pass f, and a stream that goes on checking where
// they stopped (more), or every match passing f (complete) when the date
// scan found them all at once. The checks read each match's row anyway,
// so they read its listing too when want.rows asks. ok is false when the
// checks tested Store.maxChecks without finding need: the caller joins
// instead.
func (s *Store) scoredTopHits(ctx context.Context, f *filter, docs []int64, scores []float64, want rankWant) (top topRanking, ok bool, err error) {
	need := want.need
	top = topRanking{matching: docs, matchingKnown: true}
	if len(docs) == 0 || need <= 0 {
		top.complete = len(docs) == 0
		return top, true, nil
	}
	// The fraction of matches expected to pass, for sizing the first
	// chunk of checks: nearly all when only deleted messages fail.
	pass := 0.5
	if f.onlyLive() {
		pass = 1
	}
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
		checks := min(d, float64(need)/pass)
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
	b := &bestFirst{s: s, f: f, docs: docs, scores: scores, rate: pass, rows: want.rows}
	top.hits, err = b.next(ctx, need)
	if errors.Is(err, errTooManyChecks) {
		return topRanking{}, false, nil
	}
	if err != nil {
		return topRanking{}, false, err
	}
	top.complete = b.checked == len(docs)
	if !top.complete {
		top.more = b
	}
	return top, true, nil
}

// errTooManyChecks: the checks tested Store.maxChecks matches.
var errTooManyChecks = errors.New("too many matches checked against the filters")

// bestFirst is the checks plan: the matches best first, a chunk at a
// time, each looked up by id and tested against the filters.
type bestFirst struct {
	s      *Store
	f      *filter
	docs   []int64   // id order
	scores []float64 // of docs
	sorted []int64   // docs best first, as far as the chunks read
	// checked counts the matches of sorted tested, passed those that
	// passed, rate is the fraction expected to pass before any was.
	checked, passed int
	rate            float64
	rows            bool // read each passing match's listing row (hit.sum)
}

// next tests matches until want more pass or none is left to test. Past
// the bound it returns those that passed with errTooManyChecks.
func (b *bestFirst) next(ctx context.Context, want int) ([]hit, error) {
	out := make([]hit, 0, want)
	for len(out) < want && b.checked < len(b.docs) {
		if b.checked >= b.s.maxChecks {
			return out, errTooManyChecks
		}
		rate := b.rate
		if b.checked > 0 {
			rate = max(float64(b.passed)/float64(b.checked), 1.0/128)
		}
		// A fifth more than the rate says, so that one chunk usually
		// does; never more than the bound leaves.
		chunk := int(float64(want-len(out))/rate*1.2) + 8
		chunk = min(chunk, len(b.docs)-b.checked, b.s.maxChecks-b.checked)
		if b.checked+chunk > len(b.sorted) {
			// Sorting only as far as the chunks read: with a filter
			// that passes one match in six, the first few hundred.
			b.sorted = topScored(b.docs, b.scores, min(len(b.docs), max(2*len(b.sorted), b.checked+chunk)))
		}
		ids := b.sorted[b.checked : b.checked+chunk]
		b.checked += chunk
		pass, err := b.check(ctx, ids)
		if err != nil {
			return nil, err
		}
		// Every match of the chunk is tested, so all that pass are
		// kept, past want too: the next call starts after the chunk.
		for _, id := range ids {
			if h, in := pass[id]; in {
				out = append(out, h)
			}
		}
		b.passed += len(pass)
	}
	return out, nil
}

// check tests ids against the filters; NOT INDEXED keeps the lookup by
// id when the filter has a date range (or a sender an index would serve).
func (b *bestFirst) check(ctx context.Context, ids []int64) (map[int64]hit, error) {
	pass := make(map[int64]hit, len(ids))
	if !b.rows {
		hits, err := b.s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m NOT INDEXED
			WHERE m.id IN (SELECT value FROM json_each(?)) AND `+b.f.sql(), append([]any{idList(ids)}, b.f.args...)...)
		for _, h := range hits {
			pass[h.id] = h
		}
		return pass, err
	}
	// CROSS JOIN keeps messages the outer loop: each id is looked up once
	// whatever the number of accounts.
	rows, err := b.s.db.QueryContext(ctx, `SELECT `+summaryColumns+`
		FROM messages m NOT INDEXED CROSS JOIN accounts a ON a.id = m.account_id LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.id IN (SELECT value FROM json_each(?)) AND `+b.f.sql(), append([]any{false, idList(ids)}, b.f.args...)...)
	if err != nil {
		return nil, fmt.Errorf("searching mail: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := b.s.scanSummary(rows)
		if err != nil {
			return nil, err
		}
		pass[m.ID] = hit{id: m.ID, thread: m.ThreadID, sum: &m}
	}
	return pass, rows.Err()
}

// stream goes on from where next stopped, a few hits at a time (a page
// whose threads collapse needs a few more), skipping those in seen. Past
// the bound on checks it continues with the join lexQ (args), whose order
// is the same, after the hits that passed so far.
func (b *bestFirst) stream(lexQ string, args []any, seen map[int64]bool) *rankStream {
	r := &rankStream{}
	var join *rankStream
	r.next = func(ctx context.Context) ([]rankedHit, error) {
		for {
			if join != nil {
				return join.next(ctx)
			}
			hits, err := b.next(ctx, 32)
			if errors.Is(err, errTooManyChecks) {
				// The hits that passed so far (these included) are the
				// join's first rows.
				join, err = b.s.sqlStream(lexQ, args, false, seen).skip(b.passed), nil
			}
			if err != nil {
				return nil, err
			}
			if len(hits) == 0 && join == nil {
				return nil, nil
			}
			out := make([]rankedHit, 0, len(hits))
			for _, h := range hits {
				if !seen[h.id] {
					seen[h.id] = true
					out = append(out, rankedHit{id: h.id, thread: h.thread, sum: h.sum})
				}
			}
			if len(out) > 0 {
				return out, nil
			}
		}
	}
	return r
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
		out = append(out, hit{id: id, thread: thread[id]})
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
