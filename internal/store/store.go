// Package store holds the SQLite helpers every domain store is built on:
// opening a database file with the pragmas Hestia relies on, numbered
// migrations, a transaction helper, integrity checks and online backup.
//
// Each domain (chats, audit, usage, mail, …) owns its own database file and
// its own schema; this package knows nothing about their tables.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// SQLite helpers: open with WAL, busy timeout, foreign keys and immediate write transactions;
// numbered migrations in one transaction with a foreign-key check; refusal of a newer schema;
// `Tx`; integrity check; online backup API. Each connection keeps its last 64 statements compiled
// by text (`stmtcache.go`, a wrapper around the driver's connection): modernc.org/sqlite compiles
// every `db.Query` text anew, and a daemon mail search spent a sixth of its time in SQLite's
// parser; a text whose kept statement is still reading rows is compiled apart, and SQLite
// recompiles a kept one after a schema change. `ReadContext`: the mail and wiki searches (and mail
// read and thread) run their statements on the context without its cancellation, checked between
// stages, since with a cancellable one database/sql and the driver each start a goroutine per
// statement to watch it (~200 for one mail search, read and thread); a query's embedding keeps the
// request's context. `OpenWith` + `OpenOptions.CachePages` bounds each connection's page cache:
// the CLI's one-shot search, read and thread (no daemon) open the mirror with 32 pages, since a
// process that runs one query reads every page into freshly allocated memory (page faults) and
// reuses none.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"modernc.org/sqlite"
)

// ErrNotFound is returned by domain stores when a requested row does not
// exist. Stores never return nil, nil.
var ErrNotFound = errors.New("not found")

// ErrNewerSchema is returned when a database was written by a newer Hestia
// whose migrations this binary does not know. Opening it anyway could
// corrupt data, so we refuse.
var ErrNewerSchema = errors.New("database schema is newer than this binary")

// Schema describes one database: its name (used for the file name, logs and
// backups) and its ordered migrations. Migration i (0-based) brings the
// schema from version i to version i+1. Migrations are append-only: never
// edit one that has shipped.
type Schema struct {
	Name       string
	Migrations []string
	// IncrementalVacuum creates new files with auto_vacuum=INCREMENTAL, so
	// the store can hand free pages back to the file system (see
	// DB.ReleaseFreePages) after bulk changes leave many of them (FTS5
	// segment merges, rewritten rows). It must be chosen before the first
	// table exists; files created without it keep auto_vacuum off.
	IncrementalVacuum bool
}

// DB is an open database with its schema applied.
type DB struct {
	*sql.DB
	Name string
	Path string
}

// Open opens (creating if needed) the SQLite file at path and applies the
// schema's pending migrations in one transaction. The connection uses WAL,
// a busy timeout, foreign keys and immediate write transactions so that
// concurrent writers queue instead of failing with SQLITE_BUSY mid-transaction.
func Open(ctx context.Context, path string, schema Schema) (*DB, error) {
	return OpenWith(ctx, path, schema, OpenOptions{})
}

// OpenOptions tunes how OpenWith connects; the zero value is Open's.
type OpenOptions struct {
	// CachePages, when above zero, bounds each connection's page cache to
	// that many pages instead of SQLite's 2 MB. A process that runs one
	// query and exits reads each page into a buffer allocated for it,
	// fresh memory that costs page faults, and reuses none: a rare word
	// among 100k messages read ~250 pages and faulted 1,138 times. With a
	// few dozen pages the cache keeps the b-tree's upper levels and
	// recycles the rest (712 faults); a page read again comes from the
	// operating system's cache. Not for a long-lived process, whose
	// cache is warm.
	CachePages int
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, schema Schema, o OpenOptions) (*DB, error) {
	if schema.Name == "" {
		return nil, errors.New("store: schema has no name")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating directory for %s database: %w", schema.Name, err)
	}
	// The auto_vacuum pragma only matters to a file being created; on an
	// existing auto-vacuum file it rewrites the header, so every pooled
	// connection, including a one-shot reader, would open a write
	// transaction (and wait on another process's writer) just to connect.
	incremental := schema.IncrementalVacuum
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		incremental = false
	}
	conn, err := newCachingConnector(dsn(path, incremental, o.CachePages))
	if err != nil {
		return nil, fmt.Errorf("opening %s database %s: %w", schema.Name, path, err)
	}
	sqldb := sql.OpenDB(conn)
	db := &DB{DB: sqldb, Name: schema.Name, Path: path}
	if err := db.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("opening %s database %s: %w", schema.Name, path, err)
	}
	if err := migrate(ctx, db, schema); err != nil {
		sqldb.Close()
		return nil, err
	}
	return db, nil
}

// AutoVacuum reports the file's auto_vacuum mode: 0 none, 1 full, 2 incremental.
func (db *DB) AutoVacuum(ctx context.Context) (int, error) {
	var mode int
	if err := db.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return 0, fmt.Errorf("reading %s auto_vacuum: %w", db.Name, err)
	}
	return mode, nil
}

// ReleaseFreePages hands the file's free pages back to the file system
// when it was created with IncrementalVacuum (else it does nothing) and
// returns how many there were. In WAL mode the file shrinks at the next
// checkpoint.
func (db *DB) ReleaseFreePages(ctx context.Context) (int, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("releasing free pages of %s: %w", db.Name, err)
	}
	defer conn.Close()
	var free int
	if err := conn.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		return 0, fmt.Errorf("counting free pages of %s: %w", db.Name, err)
	}
	if free == 0 {
		return 0, nil
	}
	// incremental_vacuum returns no rows but must be stepped to run.
	rows, err := conn.QueryContext(ctx, `PRAGMA incremental_vacuum`)
	if err != nil {
		return 0, fmt.Errorf("releasing free pages of %s: %w", db.Name, err)
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("releasing free pages of %s: %w", db.Name, err)
	}
	return free, nil
}

// Compact rewrites the whole file (VACUUM), switching it to
// auto_vacuum=INCREMENTAL on the way when incremental is set. It needs
// about the file's size again in free disk space and blocks writers while
// it runs. When another connection is writing it fails at once (SQLITE_BUSY)
// instead of waiting.
func (db *DB) Compact(ctx context.Context, incremental bool) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("compacting %s: %w", db.Name, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = 0`); err != nil {
		return fmt.Errorf("compacting %s: %w", db.Name, err)
	}
	// The connection goes back to the pool: restore the usual wait.
	defer conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyTimeoutMS))
	if incremental {
		if _, err := conn.ExecContext(ctx, `PRAGMA auto_vacuum = INCREMENTAL`); err != nil {
			return fmt.Errorf("setting %s auto_vacuum: %w", db.Name, err)
		}
	}
	if _, err := conn.ExecContext(ctx, `VACUUM`); err != nil {
		return fmt.Errorf("compacting %s: %w", db.Name, err)
	}
	return nil
}

// OpenExisting opens a database file without migrating it, failing if the
// file does not exist. Used by doctor and backup, which must not create or
// change stores.
func OpenExisting(ctx context.Context, path string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	conn, err := newCachingConnector(dsn(path, false, 0))
	if err != nil {
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	sqldb := sql.OpenDB(conn)
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("opening database %s: %w", path, err)
	}
	return sqldb, nil
}

// busyTimeoutMS is how long a connection waits for another one's lock.
const busyTimeoutMS = 5000

func dsn(path string, incrementalVacuum bool, cachePages int) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutMS))
	if incrementalVacuum {
		// Before journal_mode: switching a new file to WAL writes its
		// first page, after which its auto_vacuum mode is fixed. On a file
		// that already has tables this only takes effect at a VACUUM.
		q.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if cachePages > 0 {
		q.Add("_pragma", fmt.Sprintf("cache_size(%d)", cachePages))
	}
	q.Set("_txlock", "immediate")
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Version reports the schema version recorded in the database.
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("reading %s schema version: %w", db.Name, err)
	}
	return v, nil
}

func migrate(ctx context.Context, db *DB, schema Schema) error {
	cur, err := db.Version(ctx)
	if err != nil {
		return err
	}
	want := len(schema.Migrations)
	if cur > want {
		return fmt.Errorf("%s database %s is at version %d, this binary knows %d: %w", schema.Name, db.Path, cur, want, ErrNewerSchema)
	}
	if cur == want {
		return nil
	}
	err = db.Tx(ctx, func(tx *sql.Tx) error {
		for i := cur; i < want; i++ {
			if _, err := tx.ExecContext(ctx, schema.Migrations[i]); err != nil {
				return fmt.Errorf("applying %s migration %d: %w", schema.Name, i+1, err)
			}
		}
		rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
		if err != nil {
			return fmt.Errorf("checking %s foreign keys: %w", schema.Name, err)
		}
		bad := rows.Next()
		rows.Close()
		if bad {
			return fmt.Errorf("%s migration left foreign key violations", schema.Name)
		}
		// PRAGMA does not accept bound parameters; want is an int we control.
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", want)); err != nil {
			return fmt.Errorf("recording %s schema version: %w", schema.Name, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrating %s database from version %d to %d: %w", schema.Name, cur, want, err)
	}
	return nil
}

// Tx runs fn in a transaction, committing when fn returns nil and rolling
// back otherwise. Every multi-statement write goes through it.
func (db *DB) Tx(ctx context.Context, fn func(*sql.Tx) error) error {
	return Tx(ctx, db.DB, fn)
}

// Tx is the free-function form of DB.Tx for callers holding a *sql.DB.
func Tx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			tx.Rollback()
			panic(p)
		}
		if err != nil {
			tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("committing transaction: %w", err)
	}
	return nil
}

// IntegrityCheck runs PRAGMA quick_check (or integrity_check when full is
// set) and returns an error describing the first problems found.
func IntegrityCheck(ctx context.Context, db *sql.DB, full bool) error {
	pragma := "PRAGMA quick_check"
	if full {
		pragma = "PRAGMA integrity_check"
	}
	rows, err := db.QueryContext(ctx, pragma)
	if err != nil {
		return fmt.Errorf("running integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("reading integrity check: %w", err)
		}
		if s != "ok" && len(problems) < 5 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("running integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// backuper is implemented by modernc.org/sqlite's connection type.
type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// BackupTo copies the live database src into the file dst using SQLite's
// online backup API, so writers may continue while it runs. dst must not
// exist yet.
func BackupTo(ctx context.Context, src *sql.DB, dst string) error {
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("backup target %s already exists", dst)
	}
	conn, err := src.Conn(ctx)
	if err != nil {
		return fmt.Errorf("getting connection for backup: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		b, ok := dc.(backuper)
		if !ok {
			return fmt.Errorf("sqlite driver does not support online backup")
		}
		bk, err := b.NewBackup(dst)
		if err != nil {
			return fmt.Errorf("starting backup to %s: %w", dst, err)
		}
		for {
			if err := ctx.Err(); err != nil {
				bk.Finish()
				return err
			}
			more, err := bk.Step(256)
			if err != nil {
				bk.Finish()
				return fmt.Errorf("copying pages to %s: %w", dst, err)
			}
			if !more {
				break
			}
		}
		if err := bk.Finish(); err != nil {
			return fmt.Errorf("finishing backup to %s: %w", dst, err)
		}
		return nil
	})
}

// ReadContext returns the context a short read-only query runs its
// statements with: ctx without its cancellation, once ctx has been
// checked. Such statements take a fraction of a millisecond each; with a
// context that can end, database/sql and the SQLite driver each start a
// goroutine per statement to watch it (about 200 for one mail search, read
// and thread), each a thread to wake. A caller whose query has stages
// checks ctx again between them.
func ReadContext(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}
