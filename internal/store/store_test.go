package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

var testSchema = Schema{
	Name: "test",
	Migrations: []string{
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);`,
		`CREATE TABLE tags (note_id INTEGER NOT NULL REFERENCES notes(id) ON DELETE CASCADE, tag TEXT NOT NULL);
		 CREATE INDEX tags_note ON tags(note_id);`,
	},
}

func TestMigrateFromEmptyAndIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db", "test.db")
	db, err := Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := db.Version(ctx)
	if err != nil || v != 2 {
		t.Fatalf("version = %d, %v; want 2", v, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO notes(body) VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	// Re-opening applies nothing and keeps the rows.
	db, err = Open(ctx, path, testSchema)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n)
	if n != 1 {
		t.Fatalf("rows after reopen = %d, want 1", n)
	}
	var mode string
	db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	var fk int
	db.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk)
	if fk != 1 {
		t.Errorf("foreign_keys = %d, want 1", fk)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO tags(note_id, tag) VALUES (999, 'x')`); err == nil {
		t.Error("foreign key violation was accepted")
	}
}

func TestMigrateIncremental(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	first := Schema{Name: "test", Migrations: testSchema.Migrations[:1]}
	db, err := Open(ctx, path, first)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.Version(ctx); v != 2 {
		t.Fatalf("version = %d, want 2", v)
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(ctx, path, Schema{Name: "test", Migrations: testSchema.Migrations[:1]})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("err = %v, want ErrNewerSchema", err)
	}
}

func TestFailedMigrationRollsBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	bad := Schema{Name: "test", Migrations: []string{
		testSchema.Migrations[0],
		`CREATE TABLE ok (x); THIS IS NOT SQL;`,
	}}
	if _, err := Open(ctx, path, bad); err == nil {
		t.Fatal("bad migration accepted")
	}
	db, err := Open(ctx, path, Schema{Name: "test", Migrations: testSchema.Migrations[:1]})
	if err != nil {
		t.Fatalf("reopen after failed migration: %v", err)
	}
	defer db.Close()
	if v, _ := db.Version(ctx); v != 1 {
		t.Fatalf("version = %d, want 1 (first migration in a failed batch must roll back too? got it applied)", v)
	}
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name='ok'`).Scan(&n)
	if n != 0 {
		t.Fatal("partial migration left table behind")
	}
}

func TestTxRollsBackOnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	boom := errors.New("boom")
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO notes(body) VALUES ('x')`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	var n int
	db.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n)
	if n != 0 {
		t.Fatalf("rolled-back insert visible: %d rows", n)
	}
}

func TestBackupRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(ctx, filepath.Join(dir, "src.db"), testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < 500; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, "row"); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(dir, "copy.db")
	if err := BackupTo(ctx, db.DB, dst); err != nil {
		t.Fatal(err)
	}
	if err := BackupTo(ctx, db.DB, dst); err == nil {
		t.Fatal("backup overwrote an existing file")
	}
	cp, err := Open(ctx, dst, testSchema)
	if err != nil {
		t.Fatalf("opening copy: %v", err)
	}
	defer cp.Close()
	var n int
	cp.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n)
	if n != 500 {
		t.Fatalf("copy has %d rows, want 500", n)
	}
	if err := IntegrityCheck(ctx, cp.DB, true); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrityCheckOnCorruptFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	db, err := Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		db.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, "some longer body text to fill pages")
	}
	db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	db.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	garbage := make([]byte, 4096*3)
	for i := range garbage {
		garbage[i] = 0xA5
	}
	f.WriteAt(garbage, 4096*2)
	f.Close()
	raw, err := OpenExisting(ctx, path)
	if err != nil {
		return // refusing to open is also a detected failure
	}
	defer raw.Close()
	if err := IntegrityCheck(ctx, raw, false); err == nil {
		t.Fatal("corrupt database passed integrity check")
	}
}

func TestOpenExistingMissing(t *testing.T) {
	t.Parallel()
	if _, err := OpenExisting(context.Background(), filepath.Join(t.TempDir(), "nope.db")); err == nil {
		t.Fatal("missing file opened")
	}
	if _, err := os.Stat(filepath.Join(t.TempDir(), "nope.db")); err == nil {
		t.Fatal("OpenExisting created the file")
	}
}

// CachePages bounds the page cache of every connection; Open keeps
// SQLite's default (2,000 KiB).
func TestCachePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cacheSizes := func(db *DB) []int {
		t.Helper()
		var out []int
		var conns []*sql.Conn
		for range 2 { // two connections, held at once so that both are new
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var n int
			if err := c.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		for _, c := range conns {
			c.Close()
		}
		return out
	}
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := OpenWith(ctx, path, testSchema, OpenOptions{CachePages: 32})
	if err != nil {
		t.Fatal(err)
	}
	if got := cacheSizes(db); got[0] != 32 || got[1] != 32 {
		t.Errorf("cache_size with CachePages 32 = %v", got)
	}
	db.Close()
	db, err = Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := cacheSizes(db); got[0] != -2000 || got[1] != -2000 {
		t.Errorf("cache_size by default = %v, want SQLite's -2000", got)
	}
}
