package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// oneConn opens a test store limited to one connection, so every statement
// runs on the connection whose kept statements the test inspects.
func oneConn(t *testing.T) (*DB, context.Context) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "test.db"), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing with kept statements: %v", err)
		}
	})
	db.SetMaxOpenConns(1)
	for i := range 5 {
		if _, err := db.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, fmt.Sprintf("note %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	return db, ctx
}

// kept returns the connection's kept statements by text.
func kept(t *testing.T, db *DB) map[string]*cachedStmt {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m := map[string]*cachedStmt{}
	conn.Raw(func(dc any) error {
		c := dc.(*cachingConn)
		if len(c.byText) != c.lru.Len() {
			t.Fatalf("%d statements by text, %d in use order", len(c.byText), c.lru.Len())
		}
		for text, e := range c.byText {
			m[text] = e.Value.(*cachedStmt)
		}
		return nil
	})
	return m
}

func body(t *testing.T, db *DB, id int) string {
	t.Helper()
	var b string
	if err := db.QueryRow(`SELECT body FROM notes WHERE id = ?`, id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStatementKeptAndRunAgain(t *testing.T) {
	t.Parallel()
	db, _ := oneConn(t)
	const q = `SELECT body FROM notes WHERE id = ?`
	if b := body(t, db, 2); b != "note 1" {
		t.Fatalf("id 2: %q", b)
	}
	first := kept(t, db)[q]
	if first == nil {
		t.Fatal("the query was not kept")
	}
	// Other arguments, same compiled statement, and no argument left over.
	for id, want := range map[int]string{1: "note 0", 5: "note 4", 3: "note 2"} {
		if b := body(t, db, id); b != want {
			t.Fatalf("id %d: %q, want %q", id, b, want)
		}
	}
	if again := kept(t, db)[q]; again != first || again.busy {
		t.Fatalf("the query was compiled again or left busy: %p then %p", first, again)
	}
	if err := db.QueryRow(q, 99).Scan(new(string)); err != sql.ErrNoRows {
		t.Fatalf("missing row: %v", err)
	}
}

// The same text run again while its rows are still being read is compiled
// apart: both see their own rows.
func TestNestedSameStatement(t *testing.T) {
	t.Parallel()
	db, ctx := oneConn(t)
	const q = `SELECT id, body FROM notes WHERE id >= ? ORDER BY id`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var id int
		var b string
		if err := rows.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		var inner int
		var ib string
		if err := tx.QueryRowContext(ctx, q, id+1).Scan(&inner, &ib); err != nil && err != sql.ErrNoRows {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s/%d", id, b, inner))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	want := "1:note 0/2 2:note 1/3 3:note 2/4 4:note 3/5 5:note 4/0"
	if s := strings.Join(got, " "); s != want {
		t.Fatalf("got %s\nwant %s", s, want)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if cs := kept(t, db)[q]; cs == nil || cs.busy {
		t.Fatalf("kept statement after the loop: %+v", cs)
	}
}

// A kept statement follows schema changes and does not stand in their way.
func TestKeptStatementAndSchemaChanges(t *testing.T) {
	t.Parallel()
	db, ctx := oneConn(t)
	const q = `SELECT * FROM extra`
	exec := func(s string) {
		t.Helper()
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	columns := func() int {
		t.Helper()
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		return len(cols)
	}
	exec(`CREATE TABLE extra (a)`)
	exec(`INSERT INTO extra VALUES (1)`)
	if n := columns(); n != 1 {
		t.Fatalf("%d columns", n)
	}
	exec(`ALTER TABLE extra ADD COLUMN b`)
	if n := columns(); n != 2 {
		t.Fatalf("after ALTER: %d columns, want 2", n)
	}
	// Rows closed before their end leave the statement reset: the table
	// can go.
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	rows.Close()
	exec(`DROP TABLE extra`)
	if _, err := db.QueryContext(ctx, q); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("query of a dropped table: %v", err)
	}
	exec(`CREATE TABLE extra (x, y, z)`)
	if n := columns(); n != 3 {
		t.Fatalf("recreated: %d columns, want 3", n)
	}
}

func TestKeptStatementsAreBounded(t *testing.T) {
	t.Parallel()
	db, _ := oneConn(t)
	text := func(i int) string { return fmt.Sprintf(`SELECT %d + count(*) FROM notes`, i) }
	for i := range stmtCacheSize + 10 {
		var n int
		if err := db.QueryRow(text(i)).Scan(&n); err != nil || n != i+5 {
			t.Fatalf("%s: %d, %v", text(i), n, err)
		}
	}
	k := kept(t, db)
	if len(k) != stmtCacheSize {
		t.Fatalf("%d statements kept, want %d", len(k), stmtCacheSize)
	}
	if k[text(0)] != nil || k[text(stmtCacheSize+9)] == nil {
		t.Fatal("not the most recently used kept")
	}
}

// A statement that fails is not kept when it does not compile, and stays
// usable when it fails running.
func TestKeptStatementErrors(t *testing.T) {
	t.Parallel()
	db, ctx := oneConn(t)
	if _, err := db.ExecContext(ctx, `SELEC 1`); err == nil {
		t.Fatal("syntax error accepted")
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO tags(note_id, tag) VALUES (?, ?)`, 999, "x"); err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("foreign key violation: %v", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO tags(note_id, tag) VALUES (?, ?)`, 1, "y"); err != nil {
		t.Fatalf("the same statement, valid: %v", err)
	}
	k := kept(t, db)
	if k[`SELEC 1`] != nil || k[`INSERT INTO tags(note_id, tag) VALUES (?, ?)`] == nil {
		t.Fatalf("kept: %v", k)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM tags`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("tags: %d, %v", n, err)
	}
}

// Kept statements hold no read snapshot: once a query's rows are closed,
// another connection's checkpoint can reset the whole log.
func TestKeptStatementsHoldNoSnapshot(t *testing.T) {
	t.Parallel()
	db, ctx := oneConn(t)
	rows, err := db.QueryContext(ctx, `SELECT body FROM notes`)
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	rows.Close()
	other, err := Open(ctx, db.Path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ExecContext(ctx, `INSERT INTO notes(body) VALUES ('from the other')`); err != nil {
		t.Fatal(err)
	}
	var busy, logged, done int
	if err := other.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil || busy != 0 {
		t.Fatalf("checkpoint: busy %d, %v", busy, err)
	}
	if b := body(t, db, 6); b != "from the other" {
		t.Fatalf("the first connection reads %q", b)
	}
}
