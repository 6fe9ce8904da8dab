package mail

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// txc is a write transaction that prepares each distinct statement once.
// Ingest runs the same dozen statements thousands of times per batch, and
// preparing them again for every message costs about a quarter of import
// time with the pure-Go SQLite.
type txc struct {
	*sql.Tx
	stmts map[string]*sql.Stmt
	// index holds ids whose full-text rows are written at the end of the
	// transaction (indexPending), and texts their indexed columns. FTS5
	// flushes its pending terms at every statement savepoint, so indexing
	// row by row inside a batch writes thousands of tiny segments and then
	// merges them. The texts come from the parsed messages rather than the
	// rows, whose bodies are stored compressed.
	index []int64
	texts map[int64]ftsText
	// fresh are the ids inserted in this transaction (not yet indexed).
	fresh map[int64]bool
	// gone and revived are the messages this transaction soft-deleted and
	// brought back; once it commits, the in-memory vector index follows
	// (Store.followDeletions).
	gone, revived []int64
}

func newTxc(tx *sql.Tx) *txc {
	return &txc{Tx: tx, stmts: map[string]*sql.Stmt{}, fresh: map[int64]bool{}, texts: map[int64]ftsText{}}
}

// ftsText is what the full-text tables index of one message: the columns
// of messages_text.
type ftsText struct{ subject, from, to, cc, body string }

// queueIndex (re)queues id's full-text row with its current text; a
// message inserted and then upgraded in one transaction is indexed once,
// with the later text.
func (t *txc) queueIndex(id int64, text ftsText) {
	if _, ok := t.texts[id]; !ok {
		t.index = append(t.index, id)
	}
	t.texts[id] = text
}

// ftsTables are the derived full-text tables, their columns and those
// columns' values in an ftsText. The body tables index the messages_text
// view, which unpacks stored bodies; messages_hdr_tri indexes messages.
var ftsTables = []struct {
	name, cols string
	values     func(x ftsText) []any
}{
	{"messages_fts", "subject, from_addr, to_addr, body", func(x ftsText) []any { return []any{x.subject, x.from, x.to, x.body} }},
	{"messages_tri", "body", func(x ftsText) []any { return []any{x.body} }},
	{"messages_hdr_tri", "subject, from_addr, to_addr, cc_addr", func(x ftsText) []any { return []any{x.subject, x.from, x.to, x.cc} }},
}

// unindex removes an already indexed message's current text from the
// full-text tables (external-content tables need the old values).
func (t *txc) unindex(ctx context.Context, id int64) error {
	for _, ft := range ftsTables {
		if _, err := t.ExecContext(ctx, `INSERT INTO `+ft.name+`(`+ft.name+`, rowid, `+ft.cols+`) SELECT 'delete', id, `+ft.cols+` FROM messages_text WHERE id = ?`, id); err != nil {
			return fmt.Errorf("unindexing %d: %w", id, err)
		}
	}
	return nil
}

// indexPending writes the full-text rows of every message queued in this
// transaction, a few hundred rows per statement.
func (t *txc) indexPending(ctx context.Context) error {
	for start := 0; start < len(t.index); start += 500 {
		ids := t.index[start:min(len(t.index), start+500)]
		for _, ft := range ftsTables {
			var args []any
			for _, id := range ids {
				args = append(append(args, id), ft.values(t.texts[id])...)
			}
			row := "(" + placeholders(1+strings.Count(ft.cols, ",")+1) + ")"
			rows := strings.Repeat(row+", ", len(ids)-1) + row
			if _, err := t.Tx.ExecContext(ctx, `INSERT INTO `+ft.name+`(rowid, `+ft.cols+`) VALUES `+rows, args...); err != nil {
				return fmt.Errorf("indexing messages: %w", err)
			}
		}
	}
	t.index = t.index[:0]
	clear(t.texts)
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
