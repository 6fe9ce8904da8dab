package mail

import (
	"context"
	"database/sql"
	"fmt"
)

// txc is a write transaction that prepares each distinct statement once.
// Ingest runs the same dozen statements thousands of times per batch, and
// preparing them again for every message costs about a quarter of import
// time with the pure-Go SQLite.
type txc struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
	// index holds ids whose full-text rows are written at the end of the
	// transaction (indexPending). FTS5 flushes its pending terms at every
	// statement savepoint, so indexing row by row inside a batch writes
	// thousands of tiny segments and then merges them.
	index []int64
	// fresh are the ids inserted in this transaction (not yet indexed).
	fresh map[int64]bool
}

func newTxc(tx *sql.Tx) *txc {
	return &txc{Tx: tx, stmts: map[string]*sql.Stmt{}, fresh: map[int64]bool{}}
}

// ftsTables are the derived full-text tables and their columns.
var ftsTables = []struct{ name, cols string }{
	{"messages_fts", "subject, from_addr, to_addr, body"},
	{"messages_tri", "subject, from_addr, to_addr, cc_addr, body"},
	{"messages_hdr_tri", "subject, from_addr, to_addr, cc_addr"},
}

// unindex removes an already indexed message's current text from the
// full-text tables (external-content tables need the old values).
func (t *txc) unindex(ctx context.Context, id int64) error {
	for _, ft := range ftsTables {
		if _, err := t.ExecContext(ctx, `INSERT INTO `+ft.name+`(`+ft.name+`, rowid, `+ft.cols+`) SELECT 'delete', id, `+ft.cols+` FROM messages WHERE id = ?`, id); err != nil {
			return fmt.Errorf("unindexing %d: %w", id, err)
		}
	}
	return nil
}

// indexPending writes the full-text rows of every id queued in this transaction.
func (t *txc) indexPending(ctx context.Context) error {
	for start := 0; start < len(t.index); start += 500 {
		ids := t.index[start:min(len(t.index), start+500)]
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		for _, ft := range ftsTables {
			if _, err := t.Tx.ExecContext(ctx, `INSERT INTO `+ft.name+`(rowid, `+ft.cols+`) SELECT id, `+ft.cols+` FROM messages WHERE id IN (`+placeholders(len(ids))+`)`, args...); err != nil {
				return fmt.Errorf("indexing messages: %w", err)
			}
		}
	}
	t.index = t.index[:0]
	return nil
}

func (t *txc) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := t.stmts[q]; ok {
		return st, nil
	}
	st, err := t.Tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("preparing statement: %w", err)
	}
	t.stmts[q] = st
	return st, nil
}

// ExecContext runs q as a cached prepared statement.
func (t *txc) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext runs q as a cached prepared statement.
func (t *txc) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs q as a cached prepared statement. A preparation
// error surfaces from Scan, as with sql.Tx.
func (t *txc) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, q)
	if err != nil {
		return t.Tx.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// close releases the statements; the transaction itself is ended by store.Tx.
func (t *txc) close() {
	for _, st := range t.stmts {
		st.Close()
	}
}
