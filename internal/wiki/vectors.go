package wiki

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hestia-dev/hestia/internal/search"
)

// dropVectors forgets the in-memory vector index; the next vector search
// reloads it from the vectors table.
func (w *Wiki) dropVectors() {
	w.vecMu.Lock()
	w.vec = nil
	w.vecMu.Unlock()
}

func (w *Wiki) vectorIndex(ctx context.Context) (*search.Index, error) {
	w.vecMu.Lock()
	defer w.vecMu.Unlock()
	if w.vec != nil {
		return w.vec, nil
	}
	rows, err := w.db.QueryContext(ctx, `SELECT v.chunk_id, v.dim, v.vector FROM vectors v JOIN chunks c ON c.id = v.chunk_id AND c.hash = v.hash`)
	if err != nil {
		return nil, fmt.Errorf("loading wiki vectors: %w", err)
	}
	defer rows.Close()
	var idx *search.Index
	for rows.Next() {
		var id int64
		var dim int
		var blob []byte
		if err := rows.Scan(&id, &dim, &blob); err != nil {
			return nil, err
		}
		if dim <= 0 {
			continue // damaged row
		}
		if idx == nil {
			idx = search.NewIndex(dim)
		}
		_ = idx.PutEncoded(id, blob) // a damaged vector or a stray one of another dimension is skipped
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	w.vec = idx
	return idx, nil
}

func (w *Wiki) vectorCandidates(ctx context.Context, query string) ([]int64, string) {
	if w.emb == nil {
		return nil, "no embedder configured"
	}
	idx, err := w.vectorIndex(ctx)
	if err != nil {
		return nil, err.Error()
	}
	if idx == nil || idx.Len() == 0 {
		return nil, "no page vectors yet"
	}
	vs, err := w.emb.Embed(ctx, []string{query})
	if err != nil || len(vs) != 1 {
		return nil, fmt.Sprintf("query embedding failed: %v", err)
	}
	if len(vs[0]) != idx.Dim() {
		return nil, fmt.Sprintf("query vector dimension %d does not match stored %d", len(vs[0]), idx.Dim())
	}
	hits, err := idx.Search(vs[0], pool, nil)
	if err != nil {
		return nil, err.Error()
	}
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out, ""
}

// EmbedPending embeds up to limit chunks whose vector is missing or stale,
// batch at a time, and returns how many it stored. It does nothing without
// an embedder. The special files (index, log, purpose, schema) are
// boilerplate and stay lexical only, so an empty wiki costs no embedding.
func (w *Wiki) EmbedPending(ctx context.Context, batch, limit int) (int, error) {
	if w.emb == nil {
		return 0, nil
	}
	if batch <= 0 {
		batch = 32
	}
	stored := 0
	for stored < limit {
		rows, err := w.db.QueryContext(ctx, `SELECT c.id, c.hash, f.title, f.heading, substr(f.text, 1, 2000) FROM chunks c
			JOIN chunks_fts f ON f.rowid = c.id JOIN pages p ON p.id = c.page_id LEFT JOIN vectors v ON v.chunk_id = c.id
			WHERE (v.chunk_id IS NULL OR v.hash != c.hash) AND p.kind != ? LIMIT ?`, KindSpecial, min(batch, limit-stored))
		if err != nil {
			return stored, fmt.Errorf("finding chunks to embed: %w", err)
		}
		var ids []int64
		var hashes, texts []string
		for rows.Next() {
			var id int64
			var h, t, hd, x string
			if err := rows.Scan(&id, &h, &t, &hd, &x); err != nil {
				rows.Close()
				return stored, err
			}
			ids, hashes, texts = append(ids, id), append(hashes, h), append(texts, t+"\n"+hd+"\n"+x)
		}
		rows.Close()
		if len(ids) == 0 {
			break
		}
		vecs, err := w.emb.Embed(ctx, texts)
		if err != nil {
			return stored, fmt.Errorf("embedding wiki chunks: %w", err)
		}
		if len(vecs) != len(ids) {
			return stored, fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(ids))
		}
		err = w.db.Tx(ctx, func(tx *sql.Tx) error {
			for i, id := range ids {
				if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vectors (chunk_id, hash, dim, vector) VALUES (?, ?, ?, ?)`,
					id, hashes[i], len(vecs[i]), search.EncodeVector(vecs[i])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return stored, err
		}
		stored += len(ids)
		w.dropVectors()
		if len(ids) < batch {
			break
		}
	}
	return stored, nil
}
