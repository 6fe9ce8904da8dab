package wiki

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Hit is one search result: a page and its best-matching chunk.
type Hit struct {
	Path      string   `json:"path"`
	Title     string   `json:"title"`
	Heading   string   `json:"heading,omitempty"`
	Snippet   string   `json:"snippet"`
	Score     float64  `json:"score"`
	Untrusted bool     `json:"untrusted,omitempty"`
	Sources   []string `json:"sources,omitempty"`
}

// SearchResult is a page of hits and how they were found.
type SearchResult struct {
	Hits []Hit `json:"hits"`
	// Methods lists the retrievers that contributed (fts, trigram, vector);
	// VectorNote says why vectors were not used, when they were not.
	Methods    []string `json:"methods"`
	VectorNote string   `json:"vector_note,omitempty"`
}

const (
	pool         = 50 // candidates per retriever
	maxHits      = 50
	snippetChars = 240
)

// Search finds pages by words (FTS5, all words then any), by literal
// substring (trigram, for partial words and identifiers, when no word
// matched) and by meaning
// (vectors, when an embedder is configured), fused with RRF and grouped by
// page.
func (w *Wiki) Search(ctx context.Context, query string, limit int) (SearchResult, error) {
	res := SearchResult{Hits: []Hit{}, Methods: []string{}}
	query = strings.TrimSpace(query)
	if query == "" {
		return res, errors.New("search query is empty")
	}
	// The query's embedding (a remote endpoint, maybe) ends with the
	// request; the statements run without a goroutine watching each.
	asked := ctx
	ctx, err := store.ReadContext(ctx)
	if err != nil {
		return res, err
	}
	if limit <= 0 || limit > maxHits {
		limit = 10
	}
	var lists [][]int64
	if expr := search.MatchAll(query); expr != "" {
		ids, err := w.ids(ctx, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?`, expr, pool)
		if err != nil {
			return res, fmt.Errorf("word search: %w", err)
		}
		// Any-word matching widens recall only when no chunk has every
		// word: ranking a common word's whole list is the slow path.
		if len(ids) == 0 && len(search.Terms(query)) > 1 {
			more, err := w.ids(ctx, `SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?`, search.MatchAny(query), pool)
			if err != nil {
				return res, fmt.Errorf("word search: %w", err)
			}
			ids = append(ids, more...)
		}
		if len(ids) > 0 {
			lists = append(lists, ids)
			res.Methods = append(res.Methods, "fts")
		}
	}
	// The trigram index answers partial words and identifiers; when whole
	// words matched it only adds cost (a common trigram's list is long), so
	// it is the fallback for queries no word matched.
	if expr, ok := search.Substring("", query); ok && len(lists) == 0 {
		ids, err := w.ids(ctx, `SELECT rowid FROM chunks_tri WHERE chunks_tri MATCH ? LIMIT ?`, expr, pool)
		if err != nil {
			return res, fmt.Errorf("substring search: %w", err)
		}
		if len(ids) > 0 {
			lists = append(lists, ids)
			res.Methods = append(res.Methods, "trigram")
		}
	}
	if ids, note := w.vectorCandidates(asked, query); len(ids) > 0 {
		lists = append(lists, ids)
		res.Methods = append(res.Methods, "vector")
	} else {
		res.VectorNote = note
	}
	if err := asked.Err(); err != nil {
		return res, err
	}
	seen := map[int64]bool{}
	terms := search.Terms(query)
	for _, f := range search.RRF(search.K, lists...) {
		var pageID int64
		var h Hit
		var sources, text string
		err := w.db.QueryRowContext(ctx, `SELECT p.id, p.path, p.title, p.untrusted, p.sources, c.heading, f.text
			FROM chunks c JOIN pages p ON p.id = c.page_id JOIN chunks_fts f ON f.rowid = c.id WHERE c.id = ?`, f.ID).
			Scan(&pageID, &h.Path, &h.Title, &h.Untrusted, &sources, &h.Heading, &text)
		if errors.Is(err, sql.ErrNoRows) {
			continue // removed between the two queries
		}
		if err != nil {
			return res, err
		}
		if seen[pageID] {
			continue
		}
		seen[pageID] = true
		_ = json.Unmarshal([]byte(sources), &h.Sources)
		h.Score = f.Score
		h.Snippet = snippet(text, terms, query)
		res.Hits = append(res.Hits, h)
		if len(res.Hits) == limit {
			break
		}
	}
	return res, nil
}

func (w *Wiki) ids(ctx context.Context, q string, args ...any) ([]int64, error) {
	rows, err := w.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// snippet cuts a window of text around the first matching term (or the
// literal query), on rune boundaries, with whitespace collapsed.
func snippet(text string, terms []string, query string) string {
	lower := strings.ToLower(text)
	at := -1
	for _, t := range append([]string{strings.ToLower(query)}, terms...) {
		if i := strings.Index(lower, t); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 || len(lower) != len(text) {
		at = max(0, min(at, len(text)))
	}
	from := max(0, at-snippetChars/3)
	for from > 0 && !utf8.RuneStart(text[from]) {
		from--
	}
	to := min(len(text), from+snippetChars)
	for to < len(text) && !utf8.RuneStart(text[to]) {
		to++
	}
	s := strings.Join(strings.Fields(text[from:to]), " ")
	if from > 0 {
		s = "…" + s
	}
	if to < len(text) {
		s += "…"
	}
	return s
}

// PageInfo is a page's indexed metadata.
type PageInfo struct {
	Path      string   `json:"path"`
	Kind      string   `json:"kind"`
	Title     string   `json:"title"`
	Tags      []string `json:"tags,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	Created   string   `json:"created,omitempty"`
	Updated   string   `json:"updated,omitempty"`
	ReviewBy  string   `json:"review_by,omitempty"`
	Untrusted bool     `json:"untrusted,omitempty"`
	Size      int64    `json:"size"`
	Problems  []string `json:"problems,omitempty"`
	id        int64
}

const pageCols = `id, path, kind, title, tags, sources, created, updated, review_by, untrusted, size, problems`

func scanPage(sc interface{ Scan(...any) error }) (PageInfo, error) {
	var p PageInfo
	var tags, sources, problems string
	err := sc.Scan(&p.id, &p.Path, &p.Kind, &p.Title, &tags, &sources, &p.Created, &p.Updated, &p.ReviewBy, &p.Untrusted, &p.Size, &problems)
	if err != nil {
		return p, err
	}
	_ = json.Unmarshal([]byte(tags), &p.Tags)
	_ = json.Unmarshal([]byte(sources), &p.Sources)
	_ = json.Unmarshal([]byte(problems), &p.Problems)
	return p, nil
}

// Resolve finds a page by wiki path ("pages/Foo.md"), by path without
// extension, by file name or by title, case-insensitively. An ambiguous
// name is an error listing the candidates.
func (w *Wiki) Resolve(ctx context.Context, ref string) (PageInfo, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return PageInfo{}, errors.New("no page named")
	}
	p, err := scanPage(w.db.QueryRowContext(ctx, `SELECT `+pageCols+` FROM pages WHERE path = ?`, strings.TrimPrefix(filepath.ToSlash(ref), "/")))
	if err == nil {
		return p, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return p, err
	}
	rows, err := w.db.QueryContext(ctx, `SELECT `+pageCols+` FROM pages WHERE id IN (SELECT page_id FROM page_keys WHERE key = ?) ORDER BY path LIMIT 10`, LinkKey(ref))
	if err != nil {
		return PageInfo{}, err
	}
	defer rows.Close()
	var found []PageInfo
	for rows.Next() {
		p, err := scanPage(rows)
		if err != nil {
			return PageInfo{}, err
		}
		found = append(found, p)
	}
	if err := rows.Err(); err != nil {
		return PageInfo{}, err
	}
	switch len(found) {
	case 0:
		return PageInfo{}, fmt.Errorf("%w: no wiki page %q", ErrNotFound, ref)
	case 1:
		return found[0], nil
	}
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.Path
	}
	return PageInfo{}, fmt.Errorf("%q is ambiguous: %s", ref, strings.Join(names, ", "))
}

// ReadResult is a bounded window of a page.
type ReadResult struct {
	PageInfo
	Content string `json:"content"`
	// Offset and NextOffset are byte offsets into the file; NextOffset is
	// 0 when the window reached the end.
	Offset     int64    `json:"offset"`
	NextOffset int64    `json:"next_offset,omitempty"`
	Backlinks  []string `json:"backlinks,omitempty"`
}

// DefaultReadChars and MaxReadChars bound one read window.
const (
	DefaultReadChars = 8000
	MaxReadChars     = 32000
)

// Read returns a window of a page's text starting at offset (a byte offset
// from a previous NextOffset), at most limit bytes, cut on rune
// boundaries.
func (w *Wiki) Read(ctx context.Context, ref string, offset int64, limit int) (ReadResult, error) {
	p, err := w.Resolve(ctx, ref)
	if err != nil {
		return ReadResult{}, err
	}
	if limit <= 0 {
		limit = DefaultReadChars
	}
	limit = min(limit, MaxReadChars)
	r := ReadResult{PageInfo: p, Offset: offset}
	if p.Kind == KindFile || p.Kind == KindBinary {
		r.Content = fmt.Sprintf("[%s is not a text page (%d bytes)]", p.Path, p.Size)
		return r, nil
	}
	f, err := os.OpenFile(filepath.Join(w.root, filepath.FromSlash(p.Path)), os.O_RDONLY|noFollow, 0)
	if err != nil {
		return ReadResult{}, fmt.Errorf("opening %s: %w", p.Path, err)
	}
	defer f.Close()
	if offset < 0 {
		return ReadResult{}, fmt.Errorf("offset %d is negative", offset)
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ReadResult{}, err
	}
	buf := make([]byte, limit+utf8.UTFMax)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return ReadResult{}, err
	}
	buf = buf[:n]
	start := 0
	for start < len(buf) && start < utf8.UTFMax && !utf8.RuneStart(buf[start]) {
		start++ // an offset inside a rune: skip to the next one
	}
	end := len(buf)
	if end > limit {
		end = limit
		for end > start && !utf8.RuneStart(buf[end]) {
			end--
		}
		r.NextOffset = offset + int64(end)
	}
	r.Content = strings.ToValidUTF8(string(buf[start:end]), "\uFFFD")
	r.Backlinks, _ = w.backlinkPaths(ctx, p.id, 20)
	return r, nil
}

// LinkInfo is one edge of the link graph.
type LinkInfo struct {
	Path     string `json:"path,omitempty"` // the other page; empty when broken
	Target   string `json:"target,omitempty"`
	Heading  string `json:"heading,omitempty"`
	Alias    string `json:"alias,omitempty"`
	Line     int    `json:"line,omitempty"`
	Broken   bool   `json:"broken,omitempty"`
	Resolved int    `json:"-"`
}

// Links is a page's outgoing links and backlinks.
type Links struct {
	Path      string     `json:"path"`
	Outgoing  []LinkInfo `json:"outgoing"`
	Backlinks []LinkInfo `json:"backlinks"`
}

// maxLinkRows bounds each list of Links.
const maxLinkRows = 200

// PageLinks returns a page's links, resolved, and the pages linking to it.
func (w *Wiki) PageLinks(ctx context.Context, ref string) (Links, error) {
	p, err := w.Resolve(ctx, ref)
	if err != nil {
		return Links{}, err
	}
	out := Links{Path: p.Path, Outgoing: []LinkInfo{}, Backlinks: []LinkInfo{}}
	rows, err := w.db.QueryContext(ctx, `SELECT l.target, l.heading, l.alias, l.line,
		(SELECT min(q.path) FROM page_keys k JOIN pages q ON q.id = k.page_id WHERE k.key = l.target_key)
		FROM links l WHERE l.page_id = ? ORDER BY l.line LIMIT ?`, p.id, maxLinkRows)
	if err != nil {
		return out, err
	}
	for rows.Next() {
		var li LinkInfo
		var to sql.NullString
		if err := rows.Scan(&li.Target, &li.Heading, &li.Alias, &li.Line, &to); err != nil {
			rows.Close()
			return out, err
		}
		li.Path, li.Broken = to.String, !to.Valid
		out.Outgoing = append(out.Outgoing, li)
	}
	rows.Close()
	back, err := w.db.QueryContext(ctx, `SELECT q.path, l.target, l.heading, l.alias, l.line FROM links l JOIN pages q ON q.id = l.page_id
		WHERE l.target_key IN (SELECT key FROM page_keys WHERE page_id = ?) AND l.page_id != ? ORDER BY q.path, l.line LIMIT ?`, p.id, p.id, maxLinkRows)
	if err != nil {
		return out, err
	}
	defer back.Close()
	for back.Next() {
		var li LinkInfo
		if err := back.Scan(&li.Path, &li.Target, &li.Heading, &li.Alias, &li.Line); err != nil {
			return out, err
		}
		out.Backlinks = append(out.Backlinks, li)
	}
	return out, back.Err()
}

func (w *Wiki) backlinkPaths(ctx context.Context, id int64, limit int) ([]string, error) {
	rows, err := w.db.QueryContext(ctx, `SELECT DISTINCT q.path FROM links l JOIN pages q ON q.id = l.page_id
		WHERE l.target_key IN (SELECT key FROM page_keys WHERE page_id = ?) AND l.page_id != ? ORDER BY q.path LIMIT ?`, id, id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// List returns indexed pages (newest path order), optionally under a
// folder prefix, bounded.
func (w *Wiki) List(ctx context.Context, prefix string, limit int) ([]PageInfo, error) {
	if limit <= 0 || limit > 1000 {
		limit = 200
	}
	rows, err := w.db.QueryContext(ctx, `SELECT `+pageCols+` FROM pages WHERE path LIKE ? ESCAPE '\' ORDER BY path LIMIT ?`,
		strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(prefix)+"%", limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []PageInfo{}
	for rows.Next() {
		p, err := scanPage(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
