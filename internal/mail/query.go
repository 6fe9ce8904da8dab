package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Candidate pool bounds. They are separate from page sizes: a page shows
// at most MaxLimit rows, drawn from pools of these sizes.
const (
	lexicalPool   = 50
	vectorPool    = 50
	substringPool = 500
	browsePool    = 500
	DefaultLimit  = 8
	MaxLimit      = 100
)

// Query is a mail search. Every set field is ANDed.
type Query struct {
	Text       string    `json:"query,omitempty"`
	Account    string    `json:"account,omitempty"`
	Mailbox    string    `json:"mailbox,omitempty"`
	Role       string    `json:"role,omitempty"`
	From       string    `json:"from,omitempty"`
	To         string    `json:"to,omitempty"`
	Cc         string    `json:"cc,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	Body       string    `json:"body,omitempty"`
	After      time.Time `json:"after,omitzero"`
	Before     time.Time `json:"before,omitzero"`
	Unread     *bool     `json:"unread,omitempty"`
	Flagged    *bool     `json:"flagged,omitempty"`
	Attachment *bool     `json:"has_attachment,omitempty"`
	MinSize    int64     `json:"min_size,omitempty"`
	MaxSize    int64     `json:"max_size,omitempty"`
	Sort       string    `json:"sort,omitempty"` // browse order: "date" (default) or "size"
	PerMessage bool      `json:"per_message,omitempty"`
	Offset     int       `json:"offset,omitempty"`
	Limit      int       `json:"limit,omitempty"`
	// Vector, when set, is used instead of embedding Text (benchmarks,
	// callers that already hold a query vector).
	Vector []float32 `json:"-"`
	// NoVectors ranks free text lexically only.
	NoVectors bool `json:"-"`
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
	Messages []Summary `json:"messages"`
	Page     Page      `json:"page"`
	// Mode is browse, lexical or hybrid; Degraded names why vectors were
	// not used when a free-text query ran lexically.
	Mode     string `json:"mode"`
	Degraded string `json:"degraded,omitempty"`
}

// ErrBadQuery wraps search requests that cannot run; its text names the field.
var ErrBadQuery = errors.New("invalid mail search")

type filter struct {
	where []string
	args  []any
}

func (f *filter) add(cond string, args ...any) {
	f.where = append(f.where, cond)
	f.args = append(f.args, args...)
}

func (f *filter) sql() string {
	if len(f.where) == 0 {
		return "1"
	}
	return strings.Join(f.where, " AND ")
}

// buildFilter turns the structured part of q into SQL over messages m.
func buildFilter(q Query) (*filter, error) {
	f := &filter{}
	f.add("m.deleted_at IS NULL")
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
	for _, sc := range []struct{ col, name, val string }{
		{"from_addr", "from", q.From}, {"to_addr", "to", q.To}, {"cc_addr", "cc", q.Cc},
		{"subject", "subject", q.Subject}, {"body", "body", q.Body},
	} {
		if strings.TrimSpace(sc.val) == "" {
			continue
		}
		expr, ok := search.Substring(sc.col, sc.val)
		if !ok {
			return nil, fmt.Errorf("%w: %s %q is shorter than %d characters", ErrBadQuery, sc.name, sc.val, search.MinSubstring)
		}
		// Bounded candidate set per substring field (newest rows first).
		f.add("m.id IN (SELECT rowid FROM messages_tri WHERE messages_tri MATCH ? ORDER BY rowid DESC LIMIT ?)", expr, substringPool)
	}
	if !q.After.IsZero() {
		f.add("m.date >= ?", q.After.Unix())
	}
	if !q.Before.IsZero() {
		f.add("m.date < ?", q.Before.Unix())
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
func (s *Store) Search(ctx context.Context, q Query) (Result, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultLimit
	}
	if q.Limit > MaxLimit {
		q.Limit = MaxLimit
	}
	if q.Offset < 0 {
		return Result{}, fmt.Errorf("%w: offset %d is negative", ErrBadQuery, q.Offset)
	}
	if q.Sort != "" && q.Sort != "date" && q.Sort != "size" {
		return Result{}, fmt.Errorf("%w: sort %q is not date or size", ErrBadQuery, q.Sort)
	}
	f, err := buildFilter(q)
	if err != nil {
		return Result{}, err
	}
	res := Result{Page: Page{Offset: q.Offset, Limit: q.Limit}}
	var ranked []hit
	if strings.TrimSpace(q.Text) == "" {
		res.Mode = "browse"
		order := "m.date DESC, m.id DESC"
		if q.Sort == "size" {
			order = "m.size DESC, m.id DESC"
		}
		pool := browsePool
		if q.PerMessage {
			pool = min(pool, q.Offset+q.Limit+1) // nothing to collapse
		}
		ranked, err = s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m WHERE `+f.sql()+` ORDER BY `+order+` LIMIT ?`, append(f.args, pool)...)
		if err != nil {
			return Result{}, err
		}
	} else {
		lex, err := s.lexical(ctx, q.Text, f, q.Offset+q.Limit)
		if err != nil {
			return Result{}, err
		}
		res.Mode = "lexical"
		var vec []int64
		if !q.NoVectors {
			var why string
			vec, why = s.vectorCandidates(ctx, q, f)
			res.Degraded = why
		}
		if len(vec) > 0 {
			res.Mode = "hybrid"
		}
		var ids []int64
		for _, h := range search.RRF(search.K, lex, vec) {
			ids = append(ids, h.ID)
		}
		if ranked, err = s.threadsOf(ctx, ids); err != nil {
			return Result{}, err
		}
	}
	if !q.PerMessage {
		seen := map[int64]bool{}
		kept := ranked[:0]
		for _, h := range ranked {
			if h.thread != 0 && seen[h.thread] {
				continue
			}
			seen[h.thread] = true
			kept = append(kept, h)
		}
		ranked = kept
	}
	var page []int64
	if q.Offset < len(ranked) {
		end := min(len(ranked), q.Offset+q.Limit)
		for _, h := range ranked[q.Offset:end] {
			page = append(page, h.id)
		}
		if end < len(ranked) {
			res.Page.Next = end
		}
	}
	// Rows and bodies only for the page: the ranked pool may hold hundreds.
	res.Messages, err = s.summaries(ctx, page, true)
	if err != nil {
		return Result{}, err
	}
	if res.Messages == nil {
		res.Messages = []Summary{}
	}
	terms := search.Terms(q.Text + " " + q.Body)
	for i := range res.Messages {
		limit := 120
		if i < 3 {
			limit = 200
		}
		res.Messages[i].Snippet = snippet(res.Messages[i].Snippet, terms, limit)
	}
	return res, nil
}

// lexical returns up to lexicalPool FTS5 hits ranked by BM25. All words are
// required first; if that does not fill the requested page (want rows),
// any-word hits follow, so a natural-language request still finds the
// message.
func (s *Store) lexical(ctx context.Context, text string, f *filter, want int) ([]int64, error) {
	q := `SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
		WHERE messages_fts MATCH ? AND ` + f.sql() + ` ORDER BY messages_fts.rank LIMIT ?`
	all := search.MatchAll(text)
	if all == "" {
		return nil, nil
	}
	ids, err := s.ids(ctx, q, append(append([]any{all}, f.args...), lexicalPool)...)
	if err != nil {
		return nil, err
	}
	if len(ids) < want && len(search.Terms(text)) > 1 {
		more, err := s.ids(ctx, q, append(append([]any{search.MatchAny(text)}, f.args...), lexicalPool)...)
		if err != nil {
			return nil, err
		}
		have := map[int64]bool{}
		for _, id := range ids {
			have[id] = true
		}
		for _, id := range more {
			if !have[id] && len(ids) < lexicalPool {
				ids = append(ids, id)
			}
		}
	}
	return ids, nil
}

// hit is a ranked message with its thread, for collapsing.
type hit struct{ id, thread int64 }

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

// threadsOf pairs ranked ids with their threads, keeping the order.
func (s *Store) threadsOf(ctx context.Context, ids []int64) ([]hit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	found, err := s.hits(ctx, `SELECT id, coalesce(thread_id, 0) FROM messages WHERE id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return nil, err
	}
	thread := make(map[int64]int64, len(found))
	for _, h := range found {
		thread[h.id] = h.thread
	}
	out := make([]hit, 0, len(ids))
	for _, id := range ids {
		if t, ok := thread[id]; ok {
			out = append(out, hit{id, t})
		}
	}
	return out, nil
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

// summaries loads rows for ids, preserving their order. With withBody the
// snippet field carries the start of the body for snippet().
func (s *Store) summaries(ctx context.Context, ids []int64, withBody bool) ([]Summary, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, coalesce(m.thread_id, 0), m.subject, m.from_addr, m.date, a.name, coalesce(b.name, ''),
		CASE WHEN ? THEN substr(m.body, 1, 4000) ELSE '' END, m.seen, m.has_attachments, m.size
		FROM messages m JOIN accounts a ON a.id = m.account_id LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.id IN (`+placeholders(len(ids))+`)`, append([]any{withBody}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("loading results: %w", err)
	}
	defer rows.Close()
	byID := make(map[int64]Summary, len(ids))
	for rows.Next() {
		var m Summary
		var date int64
		var seen bool
		if err := rows.Scan(&m.ID, &m.ThreadID, &m.Subject, &m.From, &date, &m.Account, &m.Mailbox, &m.Snippet, &seen, &m.Attach, &m.Size); err != nil {
			return nil, fmt.Errorf("loading results: %w", err)
		}
		m.Unread = !seen
		m.Date = time.Unix(date, 0).UTC()
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

// snippet picks up to limit characters of body around the first query term.
func snippet(body string, terms []string, limit int) string {
	body = strings.Join(strings.Fields(body), " ")
	start := 0
	lower := strings.ToLower(body)
	for _, t := range terms {
		if i := strings.Index(lower, t); i >= 0 {
			start = max(0, i-limit/4)
			for start > 0 && !utf8.RuneStart(body[start]) {
				start--
			}
			break
		}
	}
	r := []rune(body[start:])
	prefix := ""
	if start > 0 {
		prefix = "…"
	}
	if len(r) > limit {
		return prefix + string(r[:limit]) + "…"
	}
	return prefix + string(r)
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
	if limit <= 0 {
		limit = DefaultBodyChars
	}
	limit = min(limit, MaxBodyChars)
	if offset < 0 {
		return Message{}, fmt.Errorf("%w: body offset %d is negative", ErrBadQuery, offset)
	}
	var m Message
	var date int64
	var body string
	var deleted sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT m.id, coalesce(m.thread_id, 0), m.message_id, m.in_reply_to, a.name, coalesce(b.name, ''), m.subject,
		m.from_addr, m.to_addr, m.cc_addr, m.date, m.seen, m.flagged, m.answered, m.body_state, m.body, m.deleted_at
		FROM messages m JOIN accounts a ON a.id = m.account_id LEFT JOIN mailboxes b ON b.id = m.mailbox_id WHERE m.id = ?`, id).
		Scan(&m.ID, &m.ThreadID, &m.MessageID, &m.InReplyTo, &m.Account, &m.Mailbox, &m.Subject, &m.From, &m.To, &m.Cc, &date, &m.Unread, &m.Flagged, &m.Answered, &m.BodyState, &body, &deleted)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && deleted.Valid) {
		return Message{}, fmt.Errorf("mail message %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("reading message %d: %w", id, err)
	}
	m.Unread = !m.Unread
	m.Date = time.Unix(date, 0).UTC()
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
	if limit <= 0 {
		limit = 10
	}
	limit = min(limit, MaxLimit)
	if snippetChars <= 0 {
		snippetChars = 400
	}
	var tp ThreadPage
	err := s.db.QueryRowContext(ctx, `SELECT t.id, t.message_count FROM messages m JOIN threads t ON t.id = m.thread_id WHERE m.id = ? AND m.deleted_at IS NULL`, id).Scan(&tp.ThreadID, &tp.Count)
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
