package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Candidate bounds. lexicalPool is how many of the best all-word hits are
// fused with vectorPool vector hits; results past the fused head follow in
// BM25 order, read chunk by chunk as paging needs them. maxRanked caps how
// far a collapsed ranking is walked for one page (Result.Truncated says
// when it was reached).
const (
	lexicalPool  = 50
	vectorPool   = 50
	rankChunk    = 200
	maxRanked    = 50000
	DefaultLimit = 8
	MaxLimit     = 100
)

// Query is a mail search. Every set field is ANDed.
type Query struct {
	Text    string `json:"query,omitempty"`
	Account string `json:"account,omitempty"`
	Mailbox string `json:"mailbox,omitempty"`
	Role    string `json:"role,omitempty"`
	From    string `json:"from,omitempty"`
	To      string `json:"to,omitempty"`
	Cc      string `json:"cc,omitempty"`
	Subject string `json:"subject,omitempty"`
	Body    string `json:"body,omitempty"`
	// AttachmentName matches attachment file names (substring).
	AttachmentName string    `json:"attachment_name,omitempty"`
	After          time.Time `json:"after,omitzero"`
	Before         time.Time `json:"before,omitzero"`
	Unread         *bool     `json:"unread,omitempty"`
	Flagged        *bool     `json:"flagged,omitempty"`
	Attachment     *bool     `json:"has_attachment,omitempty"`
	MinSize        int64     `json:"min_size,omitempty"`
	MaxSize        int64     `json:"max_size,omitempty"`
	Sort           string    `json:"sort,omitempty"` // browse order: "date" (default) or "size"
	PerMessage     bool      `json:"per_message,omitempty"`
	Offset         int       `json:"offset,omitempty"`
	Limit          int       `json:"limit,omitempty"`
	// Vector, when set, is used instead of embedding Text (benchmarks,
	// callers that already hold a query vector).
	Vector []float32 `json:"-"`
	// NoVectors ranks free text lexically only.
	NoVectors bool `json:"-"`
	// NoSnippets leaves Summary.Snippet empty: the bodies are not read
	// (the CLI's one-line listing shows none).
	NoSnippets bool `json:"-"`
	// Count asks for Result.Total, the exact number of matching messages.
	Count bool `json:"count,omitempty"`
	// Related asks for (true) or leaves out (false) Result.Related, the
	// messages only the vectors found; nil leaves it to Options.Related.
	Related *bool `json:"related,omitempty"`
	// AfterID and UpToID bound the mirror's message ids (exclusive,
	// inclusive; zero means unbounded): a watch asks only for mail that
	// arrived since its cursor.
	AfterID int64 `json:"-"`
	UpToID  int64 `json:"-"`
}

// Summary is one search hit: enough to choose what to read.
type Summary struct {
	ID       int64     `json:"id"`
	ThreadID int64     `json:"thread_id"`
	Subject  string    `json:"subject"`
	From     string    `json:"from"`
	Date     time.Time `json:"date"`
	Account  string    `json:"account"`
	Mailbox  string    `json:"mailbox"`
	Snippet  string    `json:"snippet,omitempty"`
	Unread   bool      `json:"unread,omitempty"`
	Attach   bool      `json:"has_attachments,omitempty"`
	Size     int64     `json:"size,omitempty"`
	// Partial marks a free-text hit that matches only some of the words or
	// phrases; such hits always rank after every full match.
	Partial bool `json:"partial_match,omitempty"`
	// Related marks an entry of Result.Related: found by meaning alone,
	// neither it nor (for a conversation row) its thread holds any of the
	// words. It is never one of Result.Messages.
	Related bool `json:"related,omitempty"`
}

// Page describes where a result page sits.
type Page struct {
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// Next is the offset of the following page, or 0 when there is none.
	Next int `json:"next,omitempty"`
}

// Result is a search answer.
type Result struct {
	// Messages are the matches: every word and phrase (or, marked
	// Partial and after all of those, some of them) and every filter.
	Messages []Summary `json:"messages"`
	// Related are messages the vectors found that hold none of the words
	// (first page only, when asked): kept apart from Messages, never
	// counted in Total, never paged.
	Related []Summary `json:"related,omitempty"`
	Page    Page      `json:"page"`
	// Mode is browse, lexical or hybrid; Degraded names why vectors were
	// not used when a free-text query ran lexically.
	Mode     string `json:"mode"`
	Degraded string `json:"degraded,omitempty"`
	// Total is the exact number of matching messages (every word and
	// phrase of the free text, every filter), set when Query.Count asked.
	Total *int `json:"total,omitempty"`
	// Truncated is set when the ranking was cut at maxRanked hits, so later
	// pages are missing rather than empty.
	Truncated bool `json:"truncated,omitempty"`
	// Note explains the ranking to a person, e.g. that partial matches follow.
	Note string `json:"note,omitempty"`
}

// ErrBadQuery wraps search requests that cannot run; its text names the field.
var ErrBadQuery = errors.New("invalid mail search")

type filter struct {
	where []string
	args  []any
	// dated is set when the filter bounds the date; dateLo and dateHi are
	// then the bounds in Unix seconds (lo inclusive, hi exclusive; the
	// extremes of int64 where unbounded), for plans that start from the
	// messages_date index (scoredTopHits).
	dated          bool
	dateLo, dateHi int64
}

func (f *filter) add(cond string, args ...any) {
	f.where = append(f.where, cond)
	f.args = append(f.args, args...)
}

// onlyLive reports that f holds nothing but the liveMessage condition,
// which buildFilter always adds first.
func (f *filter) onlyLive() bool { return len(f.where) == 1 }

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return "1"
	}
	return strings.Join(f.where, " AND ")
}

// liveMessage excludes soft-deleted messages through the messages_deleted
// partial index; "m.deleted_at IS NULL" would read each row's whole body.
// INDEXED BY: left to itself the planner scans the covering messages_thread
// index instead, reading an entry per message (8 ms at 100k messages, on
// every search) to find the few deleted ones.
const liveMessage = "m.id NOT IN (SELECT id FROM messages INDEXED BY messages_deleted WHERE deleted_at IS NOT NULL)"

// buildFilter turns the structured part of q into SQL over messages m.
func buildFilter(q Query) (*filter, error) {
	f := &filter{}
	f.add(liveMessage)
	if q.AfterID > 0 {
		f.add("m.id > ?", q.AfterID)
	}
	if q.UpToID > 0 {
		f.add("m.id <= ?", q.UpToID)
	}
	if q.Account != "" {
		f.add("m.account_id = (SELECT id FROM accounts WHERE name = ?)", q.Account)
	}
	if q.Mailbox != "" {
		f.add("EXISTS (SELECT 1 FROM message_paths p JOIN mailboxes b ON b.id = p.mailbox_id WHERE p.message_id = m.id AND b.name = ? COLLATE NOCASE)", q.Mailbox)
	}
	if q.Role != "" {
		switch q.Role {
		case RoleInbox, RoleSent, RoleDrafts, RoleTrash, RoleJunk, RoleArchive, RoleAll:
		default:
			return nil, fmt.Errorf("%w: role %q is not one of inbox, sent, drafts, trash, junk, archive, all", ErrBadQuery, q.Role)
		}
		f.add("EXISTS (SELECT 1 FROM message_paths p JOIN mailboxes b ON b.id = p.mailbox_id WHERE p.message_id = m.id AND b.role = ?)", q.Role)
	}
	// Every header filter's trigrams go into one MATCH of the header
	// trigram index, a body filter's into one of the full one, so each
	// index narrows its filters together and nothing is cut before the
	// other filters apply. The indexes (detail=none) know neither columns
	// nor order, so each candidate's column is then checked for the value,
	// accents and case folded as the index folds them. Values too short
	// for trigrams scan the column instead.
	var hdrTri, bodyTri []string
	for _, sc := range []struct {
		col, val string
		hdr      bool
	}{
		{"from_addr", q.From, true}, {"to_addr", q.To, true}, {"cc_addr", q.Cc, true},
		{"subject", q.Subject, true}, {"body", q.Body, false},
	} {
		v := strings.TrimSpace(sc.val)
		if v == "" {
			continue
		}
		if expr, ok := search.Trigrams(v); ok {
			if sc.hdr {
				hdrTri = append(hdrTri, expr)
			} else {
				bodyTri = append(bodyTri, expr)
			}
			f.add(containsFunc+"(m."+sc.col+", ?)", search.Fold(v))
			continue
		}
		col := "m." + sc.col
		if sc.col == "body" {
			col = bodyFunc + "(m.body)"
		}
		f.add(col+` LIKE ? ESCAPE '\'`, "%"+likeEscape(v)+"%")
	}
	if len(hdrTri) > 0 {
		f.add("m.id IN (SELECT rowid FROM messages_hdr_tri WHERE messages_hdr_tri MATCH ?)", strings.Join(hdrTri, " AND "))
	}
	if len(bodyTri) > 0 {
		f.add("m.id IN (SELECT rowid FROM messages_tri WHERE messages_tri MATCH ?)", strings.Join(bodyTri, " AND "))
	}
	if v := strings.TrimSpace(q.AttachmentName); v != "" {
		f.add(`EXISTS (SELECT 1 FROM attachments a WHERE a.message_id = m.id AND a.filename LIKE ? ESCAPE '\')`, "%"+likeEscape(v)+"%")
	}
	f.dateLo, f.dateHi = math.MinInt64, math.MaxInt64
	if !q.After.IsZero() {
		f.add("m.date >= ?", q.After.Unix())
		f.dated, f.dateLo = true, q.After.Unix()
	}
	if !q.Before.IsZero() {
		f.add("m.date < ?", q.Before.Unix())
		f.dated, f.dateHi = true, q.Before.Unix()
	}
	if !q.After.IsZero() && !q.Before.IsZero() && !q.Before.After(q.After) {
		return nil, fmt.Errorf("%w: before %s is not after after %s", ErrBadQuery, q.Before.Format(time.DateOnly), q.After.Format(time.DateOnly))
	}
	if q.Unread != nil {
		f.add("m.seen = ?", boolInt(!*q.Unread))
	}
	if q.Flagged != nil {
		f.add("m.flagged = ?", boolInt(*q.Flagged))
	}
	if q.Attachment != nil {
		f.add("m.has_attachments = ?", boolInt(*q.Attachment))
	}
	if q.MinSize < 0 || q.MaxSize < 0 {
		return nil, fmt.Errorf("%w: sizes must not be negative", ErrBadQuery)
	}
	if q.MinSize > 0 {
		f.add("m.size >= ?", q.MinSize)
	}
	if q.MaxSize > 0 {
		f.add("m.size <= ?", q.MaxSize)
	}
	return f, nil
}

// Search runs q: structured filters, FTS5 and vector candidates fused with
// reciprocal rank fusion, collapsed by thread, paged. Without free text it
// browses by date or size. Without an embedder (or when it fails) the same
// request runs lexically and Result.Degraded says why.
//
// Free text ranks in three tiers: the best all-word hits fused with vector
// hits, then every other all-word hit by BM25, then (only when the query
// has several words) hits matching some of them, marked Partial. Paging
// walks this order as far as the page needs, so no filter or pool size
// silently hides matches.
func (s *Store) Search(ctx context.Context, q Query) (Result, error) {
	asked := ctx
	ctx, err := store.ReadContext(ctx)
	if err != nil {
		return Result{}, err
	}
	if q, err = normalizeQuery(q); err != nil {
		return Result{}, err
	}
	f, err := buildFilter(q)
	if err != nil {
		return Result{}, err
	}
	res := Result{Page: Page{Offset: q.Offset, Limit: q.Limit}}
	text := strings.TrimSpace(q.Text)
	if text != "" && search.MatchAll(text) == "" && q.Vector == nil {
		text = "" // only punctuation: nothing to rank by
	}
	var src *rankStream
	var lex lexicalRanking
	if text == "" {
		src, err = s.browse(ctx, q, f, &res)
	} else {
		src, lex, err = s.rank(ctx, asked, q, f, text, &res)
	}
	if err != nil {
		return Result{}, err
	}
	if err := s.fillPage(ctx, asked, q, src, &res); err != nil {
		return Result{}, err
	}
	wantRelated := s.opts.Related
	if q.Related != nil {
		wantRelated = *q.Related
	}
	if wantRelated && q.Offset == 0 && len(lex.vecOnly) > 0 {
		if res.Related, err = s.related(ctx, q, f, text, lex.vecOnly, res.Messages); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// normalizeQuery bounds the page and checks the options a client can get
// wrong.
func normalizeQuery(q Query) (Query, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit > MaxLimit {
		q.Limit = MaxLimit
	}
	if q.Offset < 0 {
		return q, fmt.Errorf("%w: offset %d is negative", ErrBadQuery, q.Offset)
	}
	if q.Sort != "" && q.Sort != "date" && q.Sort != "size" {
		return q, fmt.Errorf("%w: sort %q is not date or size", ErrBadQuery, q.Sort)
	}
	return q, nil
}

// browse lists the filtered messages by date (or size) when there is no
// text to rank by.
func (s *Store) browse(ctx context.Context, q Query, f *filter, res *Result) (*rankStream, error) {
	res.Mode = "browse"
	order := "m.date DESC, m.id DESC"
	if q.Sort == "size" {
		order = "m.size DESC, m.id DESC"
	}
	src := s.sqlStream(`SELECT m.id, coalesce(m.thread_id, 0) FROM messages m WHERE `+f.sql()+` ORDER BY `+order, f.args, false, nil)
	if q.Count {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages m WHERE `+f.sql(), f.args...).Scan(&n); err != nil {
			return nil, fmt.Errorf("counting mail: %w", err)
		}
		res.Total = &n
	}
	return src, nil
}

// lexicalRanking is what rank leaves for the related list: the vector
// hits (nearest first) that do not hold every word.
type lexicalRanking struct {
	vecOnly []hit
}

// rank orders the matches of free text: the FTS5 ranking fused by RRF with
// the nearest vectors for the head, then the rest of the all-words
// matches, then messages holding only some of the words.
func (s *Store) rank(ctx, asked context.Context, q Query, f *filter, text string, res *Result) (*rankStream, lexicalRanking, error) {
	all := search.MatchAll(text)
	lexQ := lexQuery(f)
	// The page, one more to know that another follows, and a few for
	// rows that fold into a thread already listed; with vectors, at
	// least the head they are fused with. A ranking the doclist scored
	// reads more cheaply as paging asks; any other is read amply at
	// once: re-running its query with an OFFSET would rank every match
	// again.
	want := rankWant{need: q.Offset + q.Limit + 8, ample: max(lexicalPool, 2*(q.Offset+q.Limit)+16), rows: q.NoSnippets}
	if !q.NoVectors {
		want.need = max(lexicalPool, want.need)
	}
	// The nearest vectors are found while FTS5 ranks: the two are
	// independent, and each takes milliseconds at 100k messages.
	type vecResult struct {
		hits []hit
		why  string
	}
	var vecDone chan vecResult
	if !q.NoVectors {
		vecDone = make(chan vecResult, 1) // never blocks: an early return leaves it unread
		go func() {
			// The query's embedding (a remote endpoint, maybe) still
			// ends with the request.
			hits, why := s.vectorCandidates(asked, q, f)
			vecDone <- vecResult{hits, why}
		}()
	}
	var lr lexicalRanking
	top := topRanking{complete: true, matchingKnown: true}
	if all != "" {
		var err error
		if top, err = s.topHits(ctx, lexQ, all, f, want); err != nil {
			return nil, lr, err
		}
	}
	lex := top.hits
	// Both lists carry each message's thread, so the fused head needs
	// no further query.
	thread := make(map[int64]int64, 2*lexicalPool)
	sums := make(map[int64]*Summary, lexicalPool)
	head := make([]int64, 0, lexicalPool)
	for _, h := range lex[:min(len(lex), lexicalPool)] {
		head = append(head, h.id)
		thread[h.id] = h.thread
		if h.sum != nil {
			sums[h.id] = h.sum
		}
	}
	res.Mode = "lexical"
	// Only vector hits that hold every word join the ranking (they are
	// matches the word ranking may have placed lower); the others are
	// no matches and are kept for the related list.
	var vec []int64
	if vecDone != nil {
		r := <-vecDone
		res.Degraded = r.why
		if len(r.hits) > 0 {
			res.Mode = "hybrid"
		}
		hold, err := s.holding(ctx, all, r.hits, top)
		if err != nil {
			return nil, lr, err
		}
		for _, h := range r.hits {
			if hold[h.id] {
				vec = append(vec, h.id)
				thread[h.id] = h.thread
			} else {
				lr.vecOnly = append(lr.vecOnly, h)
			}
		}
	}
	var fused []hit
	for _, h := range search.RRF(search.K, head, vec) {
		fused = append(fused, hit{id: h.ID, thread: thread[h.ID], sum: sums[h.ID]})
	}
	seen := map[int64]bool{}
	src := hitStream(fused, seen)
	if len(lex) > lexicalPool {
		src = src.then(hitStream(lex[lexicalPool:], seen))
	}
	switch {
	case top.more != nil:
		src = src.then(top.more.stream(lexQ, append([]any{all}, f.args...), seen))
	case !top.complete:
		src = src.then(s.sqlStream(lexQ, append([]any{all}, f.args...), false, seen).skip(len(lex)))
	}
	if len(search.Clauses(text)) > 1 {
		src = src.then(s.sqlStream(lexQ, append([]any{search.MatchAny(text)}, f.args...), true, seen))
	}
	if q.Count && all != "" {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
				WHERE messages_fts MATCH ? AND `+f.sql(), append([]any{all}, f.args...)...).Scan(&n); err != nil {
			return nil, lr, fmt.Errorf("counting mail: %w", err)
		}
		res.Total = &n
	}
	return src, lr, nil
}

// lexQuery is the join that ranks the matches of a match expression (its
// first argument) that pass f by FTS5's bm25, ties by id: the order every
// faster ranking reproduces.
func lexQuery(f *filter) string {
	return `SELECT m.id, coalesce(m.thread_id, 0) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
			WHERE messages_fts MATCH ? AND ` + f.sql() + ` ORDER BY messages_fts.rank`
}

// fillPage takes the page from the ranked stream and reads its rows (and
// bodies for snippets) only.
func (s *Store) fillPage(ctx, asked context.Context, q Query, src *rankStream, res *Result) error {
	ranked, more, truncated, err := collect(ctx, src, q.Offset+q.Limit, !q.PerMessage)
	if err != nil {
		return err
	}
	if err := asked.Err(); err != nil {
		return err
	}
	res.Truncated = truncated
	var page []rankedHit
	if q.Offset < len(ranked) {
		page = ranked[q.Offset:]
	}
	if more {
		res.Page.Next = q.Offset + q.Limit
	}
	if res.Messages, err = s.pageRows(ctx, page, !q.NoSnippets); err != nil {
		return err
	}
	partial := map[int64]bool{}
	for _, h := range page {
		partial[h.id] = h.partial
	}
	terms := search.Terms(q.Text + " " + q.Body)
	for i := range res.Messages {
		limit := 120
		if i < 3 {
			limit = 200
		}
		if !q.NoSnippets {
			res.Messages[i].Snippet = snippet(res.Messages[i].Snippet, terms, limit)
		}
		if partial[res.Messages[i].ID] {
			res.Messages[i].Partial = true
			res.Note = "results marked partial_match contain only some of the words; every full match is listed before them"
		}
	}
	return nil
}

// topRanking is the head of a word ranking, as topHits found it.
type topRanking struct {
	hits []hit // best first
	// complete is set when no further message matches; otherwise more,
	// when set, goes on from the last of hits (else the join does).
	complete bool
	more     *bestFirst
	// matching is every message holding the match expression (deleted
	// ones too), in id order, when matchingKnown: the ranking read them
	// all (a plain word or phrase ranked from its doclist).
	matching      []int64
	matchingKnown bool
}

// rankWant is how much of a ranking topHits reads at first: need hits
// when going on is cheap, ample when it means the join; rows asks for the
// listing rows (no snippet) of the hits, when reading them costs little.
type rankWant struct {
	need, ample int
	rows        bool
}

// maxDeletedSlack bounds how many soft-deleted messages topHits ranks past.
const maxDeletedSlack = 500

// topHits returns the best matches of the match expression all that pass
// f, best first, in the order of the ranking query lexQ. A plain word or
// phrase is scored from its doclist (wordScores, phraseScores: FTS5's
// bm25, bit for bit) and its matches checked against f best first
// (scoredTopHits): need of them, the rest read as paging asks. Otherwise
// ample are read, since going on means the join: "ORDER BY rank" makes
// FTS5 sort every match (30,000 for a common word in 100k messages)
// before the LIMIT applies. When the only filter is liveness, "rank + 0"
// hides the order from FTS5 so that SQLite keeps a bounded top-k instead,
// and the messages rows are read for those k only (plus the number of
// soft-deleted messages, dropped afterwards). The order is the same: the
// same rank function, and FTS5's sort leaves equal ranks in rowid order,
// which the rowid term spells out (TestSearchMatchesReference).
func (s *Store) topHits(ctx context.Context, lexQ, all string, f *filter, want rankWant) (topRanking, error) {
	ample := want.ample
	join := func() (topRanking, error) {
		hits, err := s.hits(ctx, lexQ+` LIMIT ?`, append(append([]any{all}, f.args...), ample)...)
		return topRanking{hits: hits, complete: len(hits) < ample}, err
	}
	var docs []int64
	var scores []float64
	var ok bool
	var err error
	if word, isWord := plainWord(all); isWord {
		docs, scores, ok, err = s.wordScores(ctx, word, s.wordRankMin)
	} else if words, isPhrase := plainPhrase(all); isPhrase {
		docs, scores, ok, err = s.phraseScores(ctx, all, words)
	}
	if err != nil {
		return topRanking{}, err
	}
	if ok {
		if top, ok, err := s.scoredTopHits(ctx, f, docs, scores, want); err != nil || ok {
			return top, err
		}
		return join()
	}
	if !f.onlyLive() {
		return join()
	}
	var deleted int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages INDEXED BY messages_deleted WHERE deleted_at IS NOT NULL`).Scan(&deleted); err != nil {
		return topRanking{}, fmt.Errorf("counting deleted mail: %w", err)
	}
	if deleted > maxDeletedSlack {
		return join()
	}
	ids, err := s.ids(ctx, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank + 0, rowid LIMIT ?`, all, ample+deleted)
	if err != nil {
		return topRanking{}, err
	}
	if len(ids) == 0 { // nothing holds it, deleted or not
		return topRanking{complete: true, matchingKnown: true}, nil
	}
	found, err := s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m WHERE m.id IN (SELECT value FROM json_each(?)) AND `+liveMessage, idList(ids))
	if err != nil {
		return topRanking{}, err
	}
	if len(found) < ample && len(ids) == ample+deleted {
		return join()
	}
	thread := make(map[int64]int64, len(found))
	for _, h := range found {
		thread[h.id] = h.thread
	}
	out := make([]hit, 0, min(ample, len(found)))
	for _, id := range ids {
		if t, ok := thread[id]; ok && len(out) < ample {
			out = append(out, hit{id: id, thread: t})
		}
	}
	return topRanking{hits: out, complete: len(out) < ample}, nil
}

// holding returns which of hits hold the match expression expr (none
// when it is empty). When the ranking read every message holding it
// (top.matchingKnown) that list answers; otherwise FTS5 seeks each hit's
// doclist entry (one lookup per hit and index segment, and the statement
// is prepared again each time: ~3 ms for 50 hits at 20,000 messages).
func (s *Store) holding(ctx context.Context, expr string, hits []hit, top topRanking) (map[int64]bool, error) {
	out := make(map[int64]bool, len(hits))
	if expr == "" || len(hits) == 0 {
		return out, nil
	}
	if top.matchingKnown {
		for _, h := range hits {
			if _, in := slices.BinarySearch(top.matching, h.id); in {
				out[h.id] = true
			}
		}
		return out, nil
	}
	ids, err := s.ids(ctx, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? AND rowid IN (SELECT value FROM json_each(?))`, expr, idList(hitIDs(hits)))
	if err != nil {
		return nil, fmt.Errorf("checking vector hits for the words: %w", err)
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

func hitIDs(hits []hit) []int64 {
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.id
	}
	return ids
}

// related is the list of messages only the vectors found (cands, nearest
// first, every filter passed): those holding none of the words of text,
// and, for conversation rows, whose conversation has no message (passing
// f) that holds one, since that conversation is among the matches. At
// most q.Limit, none from a conversation on the page (shown).
func (s *Store) related(ctx context.Context, q Query, f *filter, text string, cands []hit, shown []Summary) ([]Summary, error) {
	anyWord := search.MatchAny(text)
	collapse := !q.PerMessage
	members := cands
	if collapse && anyWord != "" {
		var threads []int64
		for _, c := range cands {
			if c.thread != 0 {
				threads = append(threads, c.thread)
			}
		}
		if len(threads) > 0 {
			more, err := s.hits(ctx, `SELECT m.id, m.thread_id FROM messages m WHERE m.thread_id IN (SELECT value FROM json_each(?)) AND `+f.sql(), append([]any{idList(threads)}, f.args...)...)
			if err != nil {
				return nil, err
			}
			members = append(slices.Clip(cands), more...)
		}
	}
	hold, err := s.holding(ctx, anyWord, members, topRanking{})
	if err != nil {
		return nil, err
	}
	taken := map[int64]bool{}
	for _, m := range members {
		if hold[m.id] && m.thread != 0 {
			taken[m.thread] = true
		}
	}
	if collapse {
		for _, m := range shown {
			if m.ThreadID != 0 {
				taken[m.ThreadID] = true
			}
		}
	}
	var ids []int64
	for _, c := range cands {
		if len(ids) == q.Limit {
			break
		}
		if hold[c.id] || (collapse && c.thread != 0 && taken[c.thread]) {
			continue
		}
		if collapse && c.thread != 0 {
			taken[c.thread] = true
		}
		ids = append(ids, c.id)
	}
	out, err := s.summaries(ctx, ids, !q.NoSnippets)
	if err != nil {
		return nil, err
	}
	terms := search.Terms(q.Text)
	for i := range out {
		out[i].Related = true
		if !q.NoSnippets {
			out[i].Snippet = snippet(out[i].Snippet, terms, 120)
		}
	}
	return out, nil
}

// rankedHit is one entry of a ranking: a message, its thread, whether it
// matched only part of the query, and its listing row when already read.
type rankedHit struct {
	id, thread int64
	partial    bool
	sum        *Summary
}

// rankStream yields a ranking lazily, a chunk at a time.
type rankStream struct {
	next func(ctx context.Context) ([]rankedHit, error) // nil slice: exhausted
	buf  []rankedHit
	done bool
	// skipN rows at the start of an SQL ranking are not yielded.
	skipN int
}

func (r *rankStream) pop(ctx context.Context) (rankedHit, bool, error) {
	for len(r.buf) == 0 {
		if r.done {
			return rankedHit{}, false, nil
		}
		chunk, err := r.next(ctx)
		if err != nil {
			return rankedHit{}, false, err
		}
		if chunk == nil {
			r.done = true
		}
		r.buf = chunk
	}
	h := r.buf[0]
	r.buf = r.buf[1:]
	return h, true, nil
}

// then continues r with more once r is exhausted.
func (r *rankStream) then(more *rankStream) *rankStream {
	first := r
	return &rankStream{next: func(ctx context.Context) ([]rankedHit, error) {
		if h, ok, err := first.pop(ctx); err != nil || ok {
			return []rankedHit{h}, err
		}
		if h, ok, err := more.pop(ctx); err != nil || ok {
			return []rankedHit{h}, err
		}
		return nil, nil
	}}
}

// skip drops the first n rows of an SQL stream (they were already fused).
func (r *rankStream) skip(n int) *rankStream {
	r.skipN = n
	return r
}

// sqlStream pages through query (without LIMIT) rankChunk rows at a time;
// ids in seen are dropped and every yielded id is added to seen.
func (s *Store) sqlStream(query string, args []any, partial bool, seen map[int64]bool) *rankStream {
	r := &rankStream{}
	off := 0
	r.next = func(ctx context.Context) ([]rankedHit, error) {
		if off == 0 && r.skipN > 0 {
			off = r.skipN
		}
		for {
			hits, err := s.hits(ctx, query+` LIMIT ? OFFSET ?`, append(append([]any(nil), args...), rankChunk, off)...)
			if err != nil {
				return nil, err
			}
			if len(hits) == 0 {
				return nil, nil
			}
			off += len(hits)
			out := make([]rankedHit, 0, len(hits))
			for _, h := range hits {
				if seen != nil {
					if seen[h.id] {
						continue
					}
					seen[h.id] = true
				}
				out = append(out, rankedHit{id: h.id, thread: h.thread, partial: partial})
			}
			if len(out) > 0 {
				return out, nil
			}
		}
	}
	return r
}

// hitStream yields ranked hits already read, skipping those in seen.
func hitStream(hits []hit, seen map[int64]bool) *rankStream {
	r := &rankStream{}
	r.next = func(ctx context.Context) ([]rankedHit, error) {
		var out []rankedHit
		for _, h := range hits {
			if !seen[h.id] {
				seen[h.id] = true
				out = append(out, rankedHit{id: h.id, thread: h.thread, sum: h.sum})
			}
		}
		hits = nil
		return out, nil
	}
	return r
}

// collect reads src until it holds want results (one per thread when
// collapse is set) and knows whether another follows. truncated reports
// that maxRanked hits were read first.
func collect(ctx context.Context, src *rankStream, want int, collapse bool) (out []rankedHit, more, truncated bool, err error) {
	threads := map[int64]bool{}
	for read := 0; ; read++ {
		if read >= maxRanked {
			return out, false, true, nil
		}
		h, ok, err := src.pop(ctx)
		if err != nil {
			return nil, false, false, err
		}
		if !ok {
			return out, false, false, nil
		}
		if collapse && h.thread != 0 {
			if threads[h.thread] {
				continue
			}
			threads[h.thread] = true
		}
		if len(out) == want {
			return out, true, false, nil
		}
		out = append(out, h)
	}
}

// hit is a ranked message with its thread, for collapsing.
type hit struct {
	id, thread int64
	// sum is the message's listing row (no snippet) when the query that
	// found it read it too, so that a page of such hits is not read again.
	sum *Summary
}

func (s *Store) hits(ctx context.Context, query string, args ...any) ([]hit, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("searching mail: %w", err)
	}
	defer rows.Close()
	var out []hit
	for rows.Next() {
		var h hit
		if err := rows.Scan(&h.id, &h.thread); err != nil {
			return nil, fmt.Errorf("searching mail: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

func (s *Store) ids(ctx context.Context, query string, args ...any) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("searching mail: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("searching mail: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// pageRows is the listing of page, in its order: the rows the ranking
// already read, the others (all of them when snippets are wanted, which
// need the bodies) read now. Never nil.
func (s *Store) pageRows(ctx context.Context, page []rankedHit, withBody bool) ([]Summary, error) {
	var missing []int64
	for _, h := range page {
		if h.sum == nil || withBody {
			missing = append(missing, h.id)
		}
	}
	read, err := s.summaries(ctx, missing, withBody)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]Summary, len(read))
	for _, m := range read {
		byID[m.ID] = m
	}
	out := make([]Summary, 0, len(page))
	for _, h := range page {
		if m, ok := byID[h.id]; ok {
			out = append(out, m)
		} else if h.sum != nil && !withBody {
			out = append(out, *h.sum)
		}
	}
	return out, nil
}

// summaryColumns are the columns of a listing row (scanSummary), over
// messages m, accounts a and mailboxes b (LEFT JOIN); with the body for
// snippets only when the first argument is true.
const summaryColumns = `m.id, coalesce(m.thread_id, 0), m.subject, m.from_addr, m.date, a.name, coalesce(b.name, ''),
		CASE WHEN ? THEN m.body ELSE '' END, m.seen, m.has_attachments, m.size`

// scanSummary reads a row of summaryColumns; Snippet holds the start of
// the body (unpacked) for snippet().
func (s *Store) scanSummary(rows *sql.Rows) (Summary, error) {
	var m Summary
	var date int64
	var seen bool
	var body any
	if err := rows.Scan(&m.ID, &m.ThreadID, &m.Subject, &m.From, &date, &m.Account, &m.Mailbox, &body, &seen, &m.Attach, &m.Size); err != nil {
		return m, fmt.Errorf("loading results: %w", err)
	}
	// Unpacked here rather than by hestia_body in the query: the text
	// then crosses into SQLite and back once less per row.
	text, err := s.bodies.unpack(body)
	if err != nil {
		return m, fmt.Errorf("loading message %d: %w", m.ID, err)
	}
	m.Snippet = firstChars(text, snippetSource)
	m.Unread = !seen
	m.Date = time.Unix(date, 0).UTC()
	return m, nil
}

// summaries loads rows for ids, preserving their order. With withBody the
// snippet field carries the start of the body for snippet().
func (s *Store) summaries(ctx context.Context, ids []int64, withBody bool) ([]Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+summaryColumns+`
		FROM messages m JOIN accounts a ON a.id = m.account_id LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.id IN (SELECT value FROM json_each(?))`, withBody, idList(ids))
	if err != nil {
		return nil, fmt.Errorf("loading results: %w", err)
	}
	defer rows.Close()
	byID := make(map[int64]Summary, len(ids))
	for rows.Next() {
		m, err := s.scanSummary(rows)
		if err != nil {
			return nil, err
		}
		byID[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]Summary, 0, len(ids))
	for _, id := range ids {
		if m, ok := byID[id]; ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// snippetSource is how many characters of a body snippet() chooses from.
const snippetSource = 4000

// firstChars is s cut to its first n characters.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// likeEscape quotes LIKE wildcards so a filter value matches literally.
func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// snippet picks up to limit characters of body around the first query term.
// It runs for every result of a page on up to 4,000 characters each, so it
// walks the text once and slices it instead of converting it to runes.
func snippet(body string, terms []string, limit int) string {
	body = squeezeSpace(body)
	start := 0
	if len(terms) > 0 {
		lower := strings.ToLower(body)
		for _, t := range terms {
			if i := strings.Index(lower, t); i >= 0 {
				// Lower-casing can change the length of a text (invalid
				// bytes become U+FFFD), so i may lie past the body's end.
				start = min(max(0, i-limit/4), len(body))
				for start > 0 && start < len(body) && !utf8.RuneStart(body[start]) {
					start--
				}
				break
			}
		}
	}
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	rest := body[start:]
	if !utf8.ValidString(rest) {
		// Invalid bytes come out as U+FFFD, each counting as a character.
		r := []rune(rest)
		if len(r) > limit {
			return prefix + string(r[:limit]) + "…"
		}
		return prefix + string(r)
	}
	n := 0
	for i := range rest {
		if n == limit {
			return prefix + rest[:i] + "…"
		}
		n++
	}
	return prefix + rest
}

// squeezeSpace is strings.Join(strings.Fields(s), " ") in one pass: runs of
// white space become one space, none is left at either end. Words are
// copied whole, and ASCII bytes are classified without decoding.
func squeezeSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	word := -1 // start of the word being read, or -1 between words
	for i := 0; i < len(s); {
		c, w := s[i], 1
		var space bool
		if c < utf8.RuneSelf {
			space = c == ' ' || c-'\t' <= '\r'-'\t' // \t \n \v \f \r
		} else {
			var r rune
			r, w = utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
		}
		switch {
		case space && word >= 0:
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(s[word:i])
			word = -1
		case !space && word < 0:
			word = i
		}
		i += w
	}
	if word >= 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s[word:])
	}
	return b.String()
}

// Attachment is an attachment's metadata as reads return it.
type Attachment struct {
	Index       int    `json:"index"`
	Filename    string `json:"filename,omitempty"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	Stored      bool   `json:"stored"`
}

// Message is a full read of one message (its body possibly paged).
type Message struct {
	ID          int64        `json:"id"`
	ThreadID    int64        `json:"thread_id"`
	MessageID   string       `json:"message_id,omitempty"`
	InReplyTo   string       `json:"in_reply_to,omitempty"`
	Account     string       `json:"account"`
	Mailbox     string       `json:"mailbox"`
	Subject     string       `json:"subject"`
	From        string       `json:"from"`
	To          string       `json:"to,omitempty"`
	Cc          string       `json:"cc,omitempty"`
	Date        time.Time    `json:"date"`
	Unread      bool         `json:"unread"`
	Flagged     bool         `json:"flagged,omitempty"`
	Answered    bool         `json:"answered,omitempty"`
	BodyState   string       `json:"body_state"`
	Body        string       `json:"body"`
	BodyOffset  int          `json:"body_offset"`
	BodyLength  int          `json:"body_length"` // characters in the whole body
	NextOffset  int          `json:"next_offset,omitempty"`
	Attachments []Attachment `json:"attachments"`
	// Live is set when the body was read from the server because the
	// mirror holds too little of it; BodyState still describes the mirror.
	Live      bool       `json:"live,omitempty"`
	DeletedAt *time.Time `json:"-"`
}

// DefaultBodyChars and MaxBodyChars bound one read of a body.
const (
	DefaultBodyChars = 6000
	MaxBodyChars     = 20000
)

// Read loads one live message with up to limit body characters from offset.
// Soft-deleted messages are not found.
func (s *Store) Read(ctx context.Context, id int64, offset, limit int) (Message, error) {
	ctx, err := store.ReadContext(ctx)
	if err != nil {
		return Message{}, err
	}
	if limit <= 0 {
		limit = DefaultBodyChars
	}
	limit = min(limit, MaxBodyChars)
	if offset < 0 {
		return Message{}, fmt.Errorf("%w: body offset %d is negative", ErrBadQuery, offset)
	}
	var m Message
	var date int64
	var stored any
	var deleted sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT m.id, coalesce(m.thread_id, 0), m.message_id, m.in_reply_to, a.name, coalesce(b.name, ''), m.subject,
		m.from_addr, m.to_addr, m.cc_addr, m.date, m.seen, m.flagged, m.answered, m.body_state, m.body, m.deleted_at
		FROM messages m JOIN accounts a ON a.id = m.account_id LEFT JOIN mailboxes b ON b.id = m.mailbox_id WHERE m.id = ?`, id).
		Scan(&m.ID, &m.ThreadID, &m.MessageID, &m.InReplyTo, &m.Account, &m.Mailbox, &m.Subject, &m.From, &m.To, &m.Cc, &date, &m.Unread, &m.Flagged, &m.Answered, &m.BodyState, &stored, &deleted)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && deleted.Valid) {
		return Message{}, fmt.Errorf("mail message %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("reading message %d: %w", id, err)
	}
	m.Unread = !m.Unread
	m.Date = time.Unix(date, 0).UTC()
	body, err := s.bodies.unpack(stored)
	if err != nil {
		return Message{}, fmt.Errorf("reading message %d: %w", id, err)
	}
	r := []rune(body)
	m.BodyLength = len(r)
	m.BodyOffset = min(offset, len(r))
	end := min(len(r), m.BodyOffset+limit)
	m.Body = string(r[m.BodyOffset:end])
	if end < len(r) {
		m.NextOffset = end
	}
	m.Attachments, err = s.attachments(ctx, id)
	return m, err
}

func (s *Store) attachments(ctx context.Context, id int64) ([]Attachment, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT idx, filename, content_type, size, sha256, stored FROM attachments WHERE message_id = ? ORDER BY idx`, id)
	if err != nil {
		return nil, fmt.Errorf("reading attachments: %w", err)
	}
	defer rows.Close()
	out := []Attachment{}
	for rows.Next() {
		var a Attachment
		if err := rows.Scan(&a.Index, &a.Filename, &a.ContentType, &a.Size, &a.SHA256, &a.Stored); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// AttachmentData returns the metadata and bytes of one attachment.
func (s *Store) AttachmentData(ctx context.Context, id int64, index int) (Attachment, []byte, error) {
	var deleted sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT deleted_at FROM messages WHERE id = ?`, id).Scan(&deleted); err != nil || deleted.Valid {
		return Attachment{}, nil, fmt.Errorf("mail message %d: %w", id, store.ErrNotFound)
	}
	list, err := s.attachments(ctx, id)
	if err != nil {
		return Attachment{}, nil, err
	}
	if index < 0 || index >= len(list) {
		return Attachment{}, nil, fmt.Errorf("message %d has %d attachments, no index %d: %w", id, len(list), index, store.ErrNotFound)
	}
	a := list[index]
	data, err := s.blobs.get(a.SHA256)
	return a, data, err
}

// ThreadPage is one page of a thread, newest message first.
type ThreadPage struct {
	ThreadID int64     `json:"thread_id"`
	Subject  string    `json:"subject"`
	Count    int       `json:"count"`
	Messages []Summary `json:"messages"`
	Page     Page      `json:"page"`
}

// Thread lists the live messages of the thread holding message id, newest
// first, with snippets of up to snippetChars characters.
func (s *Store) Thread(ctx context.Context, id int64, offset, limit, snippetChars int) (ThreadPage, error) {
	ctx, err := store.ReadContext(ctx)
	if err != nil {
		return ThreadPage{}, err
	}
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, MaxLimit)
	if snippetChars <= 0 {
		snippetChars = 400
	}
	var tp ThreadPage
	err = s.db.QueryRowContext(ctx, `SELECT t.id, t.message_count FROM messages m JOIN threads t ON t.id = m.thread_id WHERE m.id = ? AND m.deleted_at IS NULL`, id).Scan(&tp.ThreadID, &tp.Count)
	if errors.Is(err, sql.ErrNoRows) {
		return tp, fmt.Errorf("mail message %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return tp, fmt.Errorf("reading thread of %d: %w", id, err)
	}
	ids, err := s.ids(ctx, `SELECT id FROM messages WHERE thread_id = ? AND deleted_at IS NULL ORDER BY date DESC, id DESC LIMIT ? OFFSET ?`, tp.ThreadID, limit+1, offset)
	if err != nil {
		return tp, err
	}
	tp.Page = Page{Offset: offset, Limit: limit}
	if len(ids) > limit {
		ids = ids[:limit]
		tp.Page.Next = offset + limit
	}
	tp.Messages, err = s.summaries(ctx, ids, true)
	if err != nil {
		return tp, err
	}
	for i := range tp.Messages {
		tp.Messages[i].Snippet = snippet(tp.Messages[i].Snippet, nil, snippetChars)
	}
	if len(tp.Messages) > 0 {
		tp.Subject = tp.Messages[len(tp.Messages)-1].Subject
	}
	return tp, nil
}

// ReplyInfo is what answering a message needs.
type ReplyInfo struct {
	Account    string
	MessageID  string
	Subject    string
	From       []string // addresses
	ReplyTo    []string
	To, Cc     []string
	References []string
}

// ReplyContext loads the headers a reply to message id is built from.
func (s *Store) ReplyContext(ctx context.Context, id int64) (ReplyInfo, error) {
	m, err := s.Read(ctx, id, 0, 1)
	if err != nil {
		return ReplyInfo{}, err
	}
	ri := ReplyInfo{Account: m.Account, MessageID: m.MessageID, Subject: m.Subject, From: addrSet(m.From), To: addrSet(m.To), Cc: addrSet(m.Cc)}
	var replyTo string
	if err := s.db.QueryRowContext(ctx, `SELECT reply_to FROM messages WHERE id = ?`, id).Scan(&replyTo); err != nil {
		return ri, fmt.Errorf("reading reply-to of %d: %w", id, err)
	}
	ri.ReplyTo = addrSet(replyTo)
	rows, err := s.db.QueryContext(ctx, `SELECT ref FROM message_refs WHERE message_id = ?`, id)
	if err != nil {
		return ri, fmt.Errorf("reading references of %d: %w", id, err)
	}
	defer rows.Close()
	refs := map[string]bool{}
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return ri, err
		}
		refs[r] = true
	}
	// message_refs has no order; keep In-Reply-To last-but-one semantics
	// simple: sorted for determinism, the parent appended by the builder.
	for r := range refs {
		if r != m.InReplyTo {
			ri.References = append(ri.References, r)
		}
	}
	sort.Strings(ri.References)
	if m.InReplyTo != "" {
		ri.References = append(ri.References, m.InReplyTo)
	}
	return ri, nil
}
