// Package fts5 reads a word's doclist straight from an SQLite FTS5 index's
// leaf pages (reader.go), for ranking a common word in Go without one
// fts5vocab row per match.
//
// The page formats are FTS5's internals, documented in fts5_index.c but
// not promised to stay. The reader was checked word by word against the
// fts5vocab table (mail's TestWordDoclistIsFTS5s and the ranking tests
// built on it) with one FTS5 build, VerifiedSource. Check compares the
// linked build with it at open: a store uses the reader only when they
// match, and otherwise reads fts5vocab (same results, slower) and says so
// in doctor. TestVerifiedSourceIsLinked fails when the linked SQLite
// changes, so the reference tests are run again before VerifiedSource is
// moved.
package fts5

import (
	"context"
	"database/sql"
	"fmt"
)

// VerifiedSource is fts5_source_id() of the FTS5 the reader was verified
// with (SQLite VerifiedVersion, from modernc.org/sqlite v1.62.0).
const (
	VerifiedSource  = "fts5: 2026-10-16 14:45:20 555e07ef33f69a0957d24d8e555b702464a131d6f1607f4c3c1e4551e8e6ca76"
	VerifiedVersion = "3.54.1"
)

// Querier is what the reader reads pages through: a *sql.DB, *sql.Tx or
// *sql.Conn.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Compat is what Check found of the linked FTS5.
type Compat struct {
	Version string // sqlite_version()
	Source  string // fts5_source_id()
	// OK: the build the reader was verified with.
	OK bool
}

// String says what the check found, for doctor.
func (c Compat) String() string {
	if c.OK {
		return fmt.Sprintf("index pages read directly (SQLite %s, the FTS5 build verified)", c.Version)
	}
	return fmt.Sprintf("SQLite %s (%s) is not the FTS5 build the page reader was verified with (%s, %s): one-word ranking reads fts5vocab instead (same results, slower)",
		c.Version, c.Source, VerifiedVersion, VerifiedSource)
}

// Check asks the database for its SQLite and FTS5 builds and compares
// them with the verified one.
func Check(ctx context.Context, q Querier) (Compat, error) {
	var c Compat
	if err := q.QueryRowContext(ctx, `SELECT sqlite_version(), fts5_source_id()`).Scan(&c.Version, &c.Source); err != nil {
		return Compat{}, fmt.Errorf("reading the SQLite and FTS5 versions: %w", err)
	}
	c.OK = c.Source == VerifiedSource
	return c, nil
}

// Reader decodes the leaf pages of one FTS5 table.
type Reader struct {
	weights []float64
	// firstSQL reads, for each segment, the leaf page where a term is
	// (or would be), in one statement for all of them: per segment, a
	// lookup of the term index and a page read, each a statement of its
	// own, cost more than decoding a rare word's doclist.
	firstSQL  string
	blocksSQL string // a range of leaf pages
}

// NewReader reads the FTS5 table named table (its %_idx and %_data
// shadow tables), whose columns weigh weights in its ranking (its bm25
// arguments, one per column in order; a word's frequency in a row is the
// sum of its positions' column weights). table is an identifier, never
// user text.
func NewReader(table string, weights []float64) *Reader {
	return &Reader{
		weights: weights,
		// ?1 is a JSON array of [segment id, first leaf page] pairs, ?2
		// the term; a segment whose term index has no entry up to the
		// term starts at its first page. The low bit of pgno flags a
		// doclist index.
		firstSQL: `SELECT s.key, d.id, d.block FROM json_each(?1) s JOIN ` + table + `_data d ON d.id = ((s.value ->> 0) << 37) +
			coalesce((SELECT pgno >> 1 FROM ` + table + `_idx WHERE segid = s.value ->> 0 AND term <= ?2 ORDER BY term DESC LIMIT 1), s.value ->> 1)`,
		blocksSQL: `SELECT id, block FROM ` + table + `_data WHERE id BETWEEN ? AND ? ORDER BY id`,
	}
}

// Varint decodes SQLite's big-endian varint (FTS5 records use it): seven
// bits a byte while the high bit is set, a ninth byte whole. n is 0 for a
// truncated one.
func Varint(b []byte) (v uint64, n int) {
	for i := 0; i < 9 && i < len(b); i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
