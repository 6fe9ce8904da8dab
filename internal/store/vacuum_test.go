package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileSize is the database file's size after a checkpoint: in WAL mode
// released pages leave the file only then.
func fileSize(t *testing.T, db *DB) int64 {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(db.Path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func fillAndEmpty(t *testing.T, db *DB) {
	t.Helper()
	ctx := context.Background()
	body := strings.Repeat("x", 2000)
	for i := 0; i < 300; i++ {
		if _, err := db.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, body); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM notes`); err != nil {
		t.Fatal(err)
	}
}

func TestIncrementalVacuumReleasesFreePages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := testSchema
	schema.IncrementalVacuum = true
	db, err := Open(ctx, filepath.Join(t.TempDir(), "inc.db"), schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if mode, err := db.AutoVacuum(ctx); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum = %d, %v; want 2 (incremental) on a new file", mode, err)
	}
	fillAndEmpty(t, db)
	full := fileSize(t, db)
	n, err := db.ReleaseFreePages(ctx)
	if err != nil || n < 100 {
		t.Fatalf("released %d pages, %v", n, err)
	}
	if after := fileSize(t, db); after >= full/4 {
		t.Errorf("file is %d bytes after releasing %d pages (was %d)", after, n, full)
	}
	if n, err := db.ReleaseFreePages(ctx); err != nil || n != 0 {
		t.Errorf("second release: %d, %v", n, err)
	}
}

func TestIncrementalVacuumLeavesExistingFilesUntilCompacted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := Open(ctx, path, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	fillAndEmpty(t, db)
	db.Close()

	// The option only applies to new files: this one keeps its mode, and
	// releasing pages does nothing to it.
	schema := testSchema
	schema.IncrementalVacuum = true
	db, err = Open(ctx, path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if mode, _ := db.AutoVacuum(ctx); mode != 0 {
		t.Fatalf("auto_vacuum = %d on an existing file, want 0", mode)
	}
	full := fileSize(t, db)
	if _, err := db.ReleaseFreePages(ctx); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, db); after != full {
		t.Errorf("file changed from %d to %d bytes without auto_vacuum", full, after)
	}
	if err := db.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	if mode, _ := db.AutoVacuum(ctx); mode != 2 {
		t.Errorf("auto_vacuum = %d after Compact, want 2", mode)
	}
	if after := fileSize(t, db); after >= full/4 {
		t.Errorf("file is %d bytes after Compact (was %d)", after, full)
	}
	if v, _ := db.Version(ctx); v != 2 {
		t.Errorf("version %d after Compact", v)
	}
}

// Opening an existing incremental file must not write: a reader that
// connects while another connection holds the write lock gets its answer
// at once, and leaves nothing in the write-ahead log.
func TestOpenExistingIncrementalFileDoesNotWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := testSchema
	schema.IncrementalVacuum = true
	path := filepath.Join(t.TempDir(), "inc.db")
	db, err := Open(ctx, path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	writer, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	if _, err := writer.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer writer.ExecContext(ctx, `ROLLBACK`)

	reader, err := Open(ctx, path, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	// With no wait allowed, any write the open attempted fails here
	// with SQLITE_BUSY instead of hiding behind the busy timeout.
	conn, err := reader.Conn(ctx)
	if err != nil {
		t.Fatalf("connecting while another connection writes: %v", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatalf("reading while another connection writes: %v", err)
	}
	if mode, err := reader.AutoVacuum(ctx); err != nil || mode != 2 {
		t.Fatalf("auto_vacuum = %d, %v; want the file's incremental mode kept", mode, err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("opening and reading wrote %d bytes to the write-ahead log", fi.Size())
	}
}
