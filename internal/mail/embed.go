package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// ErrEmbedderUnavailable means a whole batch and every individual retry
// failed: the endpoint is down, so the worker backs off.
var ErrEmbedderUnavailable = errors.New("embedding endpoint unavailable")

// vectorCandidates returns up to vectorPool KNN hits that pass the filter,
// in KNN order and with their threads, or a reason why vectors were not
// used.
func (s *Store) vectorCandidates(ctx context.Context, q Query, f *filter) ([]hit, string) {
	qv := q.Vector
	if qv == nil {
		if s.opts.Embedder == nil {
			return nil, "no embedder configured"
		}
		vs, err := s.opts.Embedder.Embed(ctx, []string{q.Text})
		if err != nil || len(vs) != 1 {
			s.log.Warn("mailEmbedQuery", "err", err)
			return nil, fmt.Sprintf("query embedding failed: %v", err)
		}
		qv = vs[0]
	}
	// The embedding above ends with the request; the statements below
	// need no goroutine watching each (store.ReadContext).
	ctx, err := store.ReadContext(ctx)
	if err != nil {
		return nil, err.Error()
	}
	idx, err := s.index(ctx)
	if err != nil {
		return nil, err.Error()
	}
	if idx == nil || idx.Len() == 0 {
		return nil, "no message vectors yet"
	}
	if idx.Dim() != len(qv) {
		return nil, fmt.Sprintf("query vector dimension %d does not match stored %d", len(qv), idx.Dim())
	}
	// Take a wider pool, then reapply the structured filters in SQL while
	// keeping KNN order. When the only filter is liveness, the index
	// holds few deleted messages (it is loaded without them), and a
	// smaller pool halves the rescoring.
	pool := vectorPool * 4
	if f.onlyLive() {
		pool = vectorPool * 2
	}
	hits, err := idx.Search(qv, pool, nil)
	if err != nil {
		return nil, err.Error()
	}
	if f.dated {
		// Only ids within the range's weeks' bounds can pass (see
		// message_weeks): with mail given ids in date order, a date
		// range leaves few of the pool to check.
		w, err := s.weekSpan(ctx, f)
		if err != nil {
			return nil, err.Error()
		}
		hits = slices.DeleteFunc(hits, func(h search.Hit) bool { return h.ID < w.lo || h.ID > w.hi })
	}
	if len(hits) == 0 {
		return nil, ""
	}
	// The nearest are checked first, as many as are wanted: with no
	// filter but liveness nearly all pass, and each check is a row lookup.
	// Under other filters (a date range passing one in six) the whole
	// pool goes at once: a statement for every few that pass cost more
	// than the checks.
	var out []hit
	for len(hits) > 0 && len(out) < vectorPool {
		n := vectorPool - len(out)
		if !f.onlyLive() {
			n = len(hits)
		}
		chunk := hits[:min(len(hits), n)]
		hits = hits[len(chunk):]
		ids := make([]int64, len(chunk))
		for i, h := range chunk {
			ids[i] = h.ID
		}
		// One statement text for every chunk (the ids go as JSON), so
		// the daemon prepares it once; NOT INDEXED keeps the lookup by
		// id when the filter has a date range.
		ok, err := s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages m NOT INDEXED WHERE m.id IN (SELECT value FROM json_each(?)) AND `+f.sql(),
			append([]any{idList(ids)}, f.args...)...)
		if err != nil {
			return nil, err.Error()
		}
		thread := make(map[int64]int64, len(ok))
		for _, h := range ok {
			thread[h.id] = h.thread
		}
		for _, h := range chunk {
			if t, pass := thread[h.ID]; pass && len(out) < vectorPool {
				out = append(out, hit{id: h.ID, thread: t})
			}
		}
	}
	return out, ""
}

// LoadVectors loads the in-memory vector index now instead of at the
// first hybrid search. Without an embedder there is nothing to load.
func (s *Store) LoadVectors(ctx context.Context) error {
	if s.opts.Embedder == nil {
		return nil
	}
	_, err := s.index(ctx)
	return err
}

// index returns the in-memory vector index, loading it on first use.
func (s *Store) index(ctx context.Context) (*search.Index, error) {
	s.vecMu.Lock()
	defer s.vecMu.Unlock()
	if s.vec != nil {
		return s.vec, nil
	}
	var count int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM embeddings`).Scan(&count); err != nil {
		return nil, fmt.Errorf("counting vectors: %w", err)
	}
	if count == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT e.message_id, e.dim, e.vector FROM embeddings e WHERE e.message_id NOT IN (SELECT id FROM messages WHERE deleted_at IS NOT NULL)`)
	if err != nil {
		return nil, fmt.Errorf("loading vectors: %w", err)
	}
	defer rows.Close()
	var idx *search.Index
	for rows.Next() {
		var id int64
		var dim int
		var blob sql.RawBytes // no copy: read before the next row
		if err := rows.Scan(&id, &dim, &blob); err != nil {
			return nil, err
		}
		if dim <= 0 {
			continue // damaged row
		}
		if idx == nil {
			idx = search.NewIndex(dim)
			idx.Grow(count)
		}
		if idx.PutEncoded(id, blob) != nil {
			continue // damaged, or a stray vector of another dimension; reset handles it
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.vec = idx
	return idx, nil
}

type pending struct {
	id   int64
	hash string
	text string
}

// EmbedPending embeds up to limit messages whose vector is missing or
// stale (the source hash changed), batch items at a time. A rejected batch
// is retried item by item so one bad input cannot block the rest; items
// that still fail stay pending. It returns how many vectors were stored.
func (s *Store) EmbedPending(ctx context.Context, batch, limit int) (int, error) {
	emb := s.opts.Embedder
	if emb == nil {
		return 0, errors.New("no embedder configured")
	}
	if batch <= 0 {
		batch = 32
	}
	// What to look at: ids from next_id up to the newest now (later ones
	// wait for the next run), and the queue.
	var from, top int64
	var queued bool
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT next_id FROM embed_state), (SELECT coalesce(max(id), 0) FROM messages),
		EXISTS (SELECT 1 FROM embed_queue)`).Scan(&from, &top, &queued); err != nil {
		return 0, fmt.Errorf("reading the embed queue: %w", err)
	}
	if top < from && !queued {
		return 0, nil
	}
	stored := 0
	cursor := top + 1
	// Page through newest id first, a few batches at a time, so a 100k
	// backlog never holds every source text in memory. The id cursor also
	// guarantees progress past items that keep failing.
	for stored < limit {
		chunk := min(limit-stored, 8*batch)
		todo, err := s.pendingEmbeds(ctx, from, cursor, chunk)
		if err != nil {
			return stored, err
		}
		if len(todo) > 0 {
			cursor = todo[len(todo)-1].id
			// Store the chunk in ascending id order: rows inserted before
			// their neighbours, one by one, leave the table's pages about
			// half full (78 MB of vectors at 100k messages instead of 48).
			slices.Reverse(todo)
			n, err := s.embedChunk(ctx, emb, todo, batch)
			stored += n
			if err != nil {
				return stored, err
			}
		}
		if len(todo) < chunk {
			// Everything was read: the pass is complete.
			return stored, s.finishEmbedPass(ctx, from, top)
		}
	}
	return stored, nil
}

// finishEmbedPass records a complete pass over ids from..top: what still
// has no current vector there (a failure, retried by the next run) joins
// the queue, queued messages that need nothing leave it, and the next
// pass starts above top.
func (s *Store) finishEmbedPass(ctx context.Context, from, top int64) error {
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO embed_queue SELECT m.id FROM messages m LEFT JOIN embeddings e ON e.message_id = m.id
			WHERE m.id >= ? AND m.id <= ? AND m.deleted_at IS NULL AND (e.message_id IS NULL OR e.hash != m.embed_hash)`, from, top); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM embed_queue WHERE message_id IN (SELECT q.message_id FROM embed_queue q
			JOIN messages m ON m.id = q.message_id LEFT JOIN embeddings e ON e.message_id = m.id
			WHERE m.deleted_at IS NOT NULL OR e.hash = m.embed_hash)`); err != nil {
			return err
		}
		// Unless a reset (new vector dimension) restarted from 0 meanwhile.
		_, err := tx.ExecContext(ctx, `UPDATE embed_state SET next_id = ? WHERE next_id = ?`, top+1, from)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the embed pass: %w", err)
	}
	return nil
}

// pendingEmbeds returns up to limit messages below the id before, newest
// first, that are new since the last pass (from up) or queued and have no
// current vector.
func (s *Store) pendingEmbeds(ctx context.Context, from, before int64, limit int) ([]pending, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, m.embed_hash, m.subject, substr(hestia_body(m.body), 1, ?) FROM messages m
		LEFT JOIN embeddings e ON e.message_id = m.id
		WHERE m.id IN (SELECT id FROM messages WHERE id >= ? AND id < ? UNION SELECT message_id FROM embed_queue WHERE message_id < ?)
		AND m.deleted_at IS NULL AND (e.message_id IS NULL OR e.hash != m.embed_hash)
		ORDER BY m.id DESC LIMIT ?`, s.opts.EmbedMaxChars, from, before, before, limit)
	if err != nil {
		return nil, fmt.Errorf("finding messages to embed: %w", err)
	}
	defer rows.Close()
	var todo []pending
	for rows.Next() {
		var p pending
		var subj, body string
		if err := rows.Scan(&p.id, &p.hash, &subj, &body); err != nil {
			return nil, err
		}
		p.text = EmbedText(subj, body, s.opts.EmbedMaxChars)
		todo = append(todo, p)
	}
	return todo, rows.Err()
}

func (s *Store) embedChunk(ctx context.Context, emb search.Embedder, todo []pending, batch int) (int, error) {
	stored := 0
	for start := 0; start < len(todo); start += batch {
		chunk := todo[start:min(len(todo), start+batch)]
		texts := make([]string, len(chunk))
		for i, p := range chunk {
			texts[i] = p.text
		}
		vecs, err := emb.Embed(ctx, texts)
		if err == nil && len(vecs) == len(chunk) {
			n, err := s.storeVectors(ctx, chunk, vecs)
			stored += n
			if err != nil {
				return stored, err
			}
			continue
		}
		// Whole batch rejected: retry individually.
		okAny := false
		for _, p := range chunk {
			v, err := emb.Embed(ctx, []string{p.text})
			if err != nil || len(v) != 1 {
				continue
			}
			okAny = true
			n, err := s.storeVectors(ctx, []pending{p}, v)
			stored += n
			if err != nil {
				return stored, err
			}
		}
		if !okAny {
			return stored, fmt.Errorf("%w: %v", ErrEmbedderUnavailable, err)
		}
	}
	return stored, nil
}

// storeVectors upserts vectors. A dimension different from the stored
// vectors means the model changed: every old vector is dropped instead of
// mixing two embedding spaces.
func (s *Store) storeVectors(ctx context.Context, items []pending, vecs [][]float32) (int, error) {
	dim := len(vecs[0])
	for _, v := range vecs {
		if len(v) != dim || dim == 0 {
			return 0, fmt.Errorf("embedder returned vectors of mixed dimension")
		}
	}
	reset := false
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		var cur int
		err := tx.QueryRowContext(ctx, `SELECT dim FROM embeddings LIMIT 1`).Scan(&cur)
		if err == nil && cur != dim {
			if _, err := tx.ExecContext(ctx, `DELETE FROM embeddings`); err != nil {
				return fmt.Errorf("resetting vectors: %w", err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE embed_state SET next_id = 0`); err != nil {
				return fmt.Errorf("starting a pass over every message: %w", err)
			}
			reset = true
		}
		now := s.now().Unix()
		for i, p := range items {
			if _, err := tx.ExecContext(ctx, `INSERT INTO embeddings(message_id, hash, model, dim, vector, updated_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT(message_id) DO UPDATE SET hash = excluded.hash, model = excluded.model, dim = excluded.dim, vector = excluded.vector, updated_at = excluded.updated_at`,
				p.id, p.hash, s.opts.EmbedModel, dim, search.EncodeVector(vecs[i]), now); err != nil {
				return fmt.Errorf("storing vector: %w", err)
			}
			// Unless the text changed again since it was read.
			if _, err := tx.ExecContext(ctx, `DELETE FROM embed_queue WHERE message_id = ? AND (SELECT embed_hash FROM messages WHERE id = ?) = ?`, p.id, p.id, p.hash); err != nil {
				return fmt.Errorf("dequeueing message %d: %w", p.id, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	s.vecMu.Lock()
	if reset || (s.vec != nil && s.vec.Dim() != dim) {
		s.vec = nil // reload lazily from the table
	}
	if s.vec != nil {
		for i, p := range items {
			s.vec.Put(p.id, vecs[i])
		}
	}
	s.vecMu.Unlock()
	return len(items), nil
}

// RunEmbedder drains the embedding queue until ctx ends: short delays while
// a backlog remains, longer when idle, longer still when the endpoint is
// unavailable.
func (s *Store) RunEmbedder(ctx context.Context, batch int, kick <-chan struct{}) error {
	if s.opts.Embedder == nil {
		<-ctx.Done()
		return nil
	}
	delay := time.Second
	for {
		n, err := s.EmbedPending(ctx, batch, batch*8)
		switch {
		case errors.Is(err, ErrEmbedderUnavailable):
			s.log.Warn("mailEmbedUnavailable", "err", err)
			delay = 5 * time.Minute
		case err != nil:
			s.log.Error("mailEmbed", "err", err)
			delay = time.Minute
		case n > 0:
			delay = time.Second
		default:
			delay = time.Minute
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// ShrinkVectors rewrites every vector still stored as float32 (by versions
// before the quantised form) in the form search.EncodeVector writes now, a
// quarter of the size, a thousand per transaction, then hands the freed
// pages back to the file system. The index built from them is unchanged.
// It returns how many it rewrote.
func (s *Store) ShrinkVectors(ctx context.Context) (int, error) {
	if s.shrunk.Load() {
		return 0, nil
	}
	total := 0
	for {
		n, err := s.shrinkVectors(ctx, 1000)
		total += n
		if err != nil {
			return total, err
		}
		if n == 0 {
			break
		}
	}
	s.shrunk.Store(true)
	if total > 0 {
		if _, err := s.db.ReleaseFreePages(ctx); err != nil {
			s.log.Warn("mailReleasePages", "err", err)
		}
	}
	return total, nil
}

func (s *Store) shrinkVectors(ctx context.Context, limit int) (int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT message_id, dim, vector FROM embeddings WHERE dim > 0 AND length(vector) = 4 * dim LIMIT ?`, limit)
	if err != nil {
		return 0, fmt.Errorf("finding float32 vectors: %w", err)
	}
	type old struct {
		id  int64
		vec []byte
	}
	var todo []old
	for rows.Next() {
		var id int64
		var dim int
		var blob []byte
		if err := rows.Scan(&id, &dim, &blob); err != nil {
			rows.Close()
			return 0, err
		}
		if v, err := search.DecodeVector(blob, dim); err == nil {
			todo = append(todo, old{id, search.EncodeVector(v)})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(todo) == 0 {
		return 0, err
	}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, o := range todo {
			// Only a row still in the old form: a vector stored meanwhile wins.
			if _, err := tx.ExecContext(ctx, `UPDATE embeddings SET vector = ? WHERE message_id = ? AND length(vector) = 4 * dim`, o.vec, o.id); err != nil {
				return fmt.Errorf("rewriting vector %d: %w", o.id, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(todo), nil
}
