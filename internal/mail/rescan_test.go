package mail

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// TestRescanSkipsUnchangedDirectories: a rescan does not list a Maildir
// directory whose mtime is unchanged (proved by an in-place edit it does
// not see), sees every change that moves the mtime, and Full checks all.
func TestRescanSkipsUnchangedDirectories(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	p1 := writeMaildir(t, root, "", "1:2,S", msg("1@x", "a@x.org", "b@x.org", "one", d, "first body"), old)
	writeMaildir(t, root, "", "2:2,S", msg("2@x", "a@x.org", "b@x.org", "two", d, "second body"), old)
	writeMaildir(t, root, ".Sent", "3:2,S", msg("3@x", "b@x.org", "a@x.org", "three", d, "third body"), old)
	settle := func() {
		for _, dir := range []string{"cur", "new", ".Sent/cur", ".Sent/new"} {
			os.Chtimes(filepath.Join(root, dir), old, old)
		}
	}
	settle()
	p, err := s.Import(ctx, root, ImportOptions{})
	if err != nil || p.Added != 3 {
		t.Fatalf("first import %+v %v", p, err)
	}
	p, err = s.Import(ctx, root, ImportOptions{})
	if err != nil || p.Files != 3 || p.Skipped != 3 || p.Added+p.Updated != 0 {
		t.Fatalf("unchanged rescan %+v %v", p, err)
	}
	// An in-place edit keeps the directory's mtime: skipped by a rescan,
	// found by a full check.
	if err := os.WriteFile(p1, []byte(msg("1@x", "a@x.org", "b@x.org", "one", d, "first BODY")), 0o644); err != nil {
		t.Fatal(err)
	}
	settle()
	if p, _ = s.Import(ctx, root, ImportOptions{}); p.Updated != 0 {
		t.Errorf("in-place edit seen without listing the directory: %+v", p)
	}
	if p, _ = s.Import(ctx, root, ImportOptions{Full: true}); p.Added+p.Updated != 1 || p.Skipped != 2 {
		t.Errorf("full check: %+v", p)
	}
	// A delivery and a flag change (a rename) move the mtime.
	writeMaildir(t, root, "", "4:2,", msg("4@x", "c@x.org", "b@x.org", "four", d, "fourth body"), old)
	if err := os.Rename(filepath.Join(root, ".Sent", "cur", "3:2,S"), filepath.Join(root, ".Sent", "cur", "3:2,FS")); err != nil {
		t.Fatal(err)
	}
	p, err = s.Reconcile(ctx, root, ImportOptions{})
	if err != nil || p.Added != 1 || p.Updated != 1 || p.Removed != 1 || p.Deleted != 0 {
		t.Errorf("after delivery and rename: %+v %v", p, err)
	}
	r, _ := s.Search(ctx, Query{Flagged: ptr(true)})
	if len(r.Messages) != 1 || r.Messages[0].Subject != "three" {
		t.Errorf("flag change missed: %+v", r.Messages)
	}
	// A folder removed entirely is reconciled although nothing is listed there.
	settle()
	s.Import(ctx, root, ImportOptions{}) // record the settled directories
	if err := os.RemoveAll(filepath.Join(root, ".Sent")); err != nil {
		t.Fatal(err)
	}
	p, err = s.Reconcile(ctx, root, ImportOptions{})
	if err != nil || p.Removed != 1 || p.Deleted != 1 {
		t.Errorf("removed folder: %+v %v", p, err)
	}
	if n := count(t, s, Query{}); n != 3 {
		t.Errorf("%d live messages, want 3", n)
	}
}

// The known-paths lookup of a rescan reads the changed directory's range of
// paths, not every path of the account once per directory.
func TestKnownPathsReadsOnlyTheDirectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	root := t.TempDir()
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	writeMaildir(t, root, "", "1:2,S", msg("1@x", "a@x.org", "b@x.org", "one", d, "first body"), time.Now())
	writeMaildir(t, root, ".Sent", "2:2,S", msg("2@x", "b@x.org", "a@x.org", "two", d, "second body"), time.Now())
	if _, err := s.Import(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	rows, err := s.db.QueryContext(ctx, `EXPLAIN QUERY PLAN `+knownPathsSQL, "a", "b", "c", "d", "local")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	all := strings.Join(plan, "\n")
	if strings.Contains(all, "message_paths_mailbox") || strings.Count(all, "sqlite_autoindex_message_paths_1 (path>? AND path<?)") != 2 {
		t.Errorf("known paths are not read by path range:\n%s", all)
	}
	dir := filepath.Join(root, ".Sent", "cur")
	known, err := s.knownPaths(ctx, "local", []string{dir}, true)
	if err != nil || len(known) != 1 {
		t.Errorf("known paths of %s = %v, %v; want its one file", dir, known, err)
	}
	if known, _ := s.knownPaths(ctx, "other", []string{dir}, true); len(known) != 0 {
		t.Errorf("another account's paths listed: %v", known)
	}
}

// In a folder that changed, a Maildir name already mirrored is taken as
// unchanged without a stat (its name is its identity, as in notmuch); new
// names are read with their mtime and size recorded; empty files wait; and
// Full still compares every file.
func TestRescanTrustsMaildirNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	root := t.TempDir()
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	p1 := writeMaildir(t, root, "", "1:2,S", msg("1@x", "a@x.org", "b@x.org", "one", d, "first body"), old)
	if p, err := s.Import(ctx, root, ImportOptions{}); err != nil || p.Added != 1 {
		t.Fatalf("first import %+v %v", p, err)
	}
	if err := os.WriteFile(p1, []byte(msg("1@x", "a@x.org", "b@x.org", "one", d, "first BODY, longer")), 0o644); err != nil {
		t.Fatal(err)
	}
	p2 := writeMaildir(t, root, "", "2:2,", msg("2@x", "c@x.org", "b@x.org", "two", d, "second body"), old.Add(time.Minute))
	writeMaildir(t, root, "", "3:2,", "", time.Time{}) // a delivery still being written
	p, err := s.Import(ctx, root, ImportOptions{})
	if err != nil || p.Files != 2 || p.Added != 1 || p.Skipped != 1 || p.Updated != 0 {
		t.Fatalf("rescan of a changed folder: %+v %v (want 2 files: one new, one known name skipped)", p, err)
	}
	var mtime, size int64
	if err := s.db.QueryRowContext(ctx, `SELECT mtime, size FROM message_paths WHERE path = ?`, p2).Scan(&mtime, &size); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p2); mtime != fi.ModTime().Unix() || size != fi.Size() {
		t.Errorf("new file recorded with mtime %d size %d, file has %d %d", mtime, size, fi.ModTime().Unix(), fi.Size())
	}
	if p, err := s.Import(ctx, root, ImportOptions{Full: true}); err != nil || p.Added+p.Updated != 1 || p.Skipped != 1 {
		t.Errorf("full check after an in-place edit: %+v %v", p, err)
	}
	if r, _ := s.Search(ctx, Query{Text: "longer", NoVectors: true}); len(r.Messages) != 1 {
		t.Errorf("the full check did not re-read the edited file: %+v", r.Messages)
	}
}

// An unchanged rescan writes nothing: it runs while another connection
// holds the write lock, without waiting for it.
func TestUnchangedRescanTakesNoWriteLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	writeMaildir(t, root, "", "1:2,S", msg("1@x", "a@x.org", "b@x.org", "one", "Mon, 5 Jan 2026 10:00:00 +0000", "first body"), old)
	for _, dir := range []string{"cur", "new"} {
		os.Chtimes(filepath.Join(root, dir), old, old)
	}
	if p, err := s.Import(ctx, root, ImportOptions{}); err != nil || p.Added != 1 {
		t.Fatalf("first import %+v %v", p, err)
	}
	other, err := store.Open(ctx, s.DB().Path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`)
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	p, err := s.Import(short, root, ImportOptions{})
	if err != nil || p.Skipped != 1 || p.Added+p.Updated != 0 {
		t.Fatalf("unchanged rescan beside a writer: %+v, %v after %s", p, err, time.Since(start))
	}
}
