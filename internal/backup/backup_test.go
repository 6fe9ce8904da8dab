package backup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

var schema = store.Schema{Name: "notes", Migrations: []string{`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`}}

func seed(t *testing.T, dbDir string, names ...string) {
	t.Helper()
	ctx := context.Background()
	for i, name := range names {
		db, err := store.Open(ctx, filepath.Join(dbDir, name+".db"), store.Schema{Name: name, Migrations: schema.Migrations})
		if err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 100*(i+1); j++ {
			db.ExecContext(ctx, `INSERT INTO notes(body) VALUES (?)`, name)
		}
		// Leave it open: backups run against a live daemon.
		t.Cleanup(func() { db.Close() })
	}
}

func count(t *testing.T, path string) int {
	t.Helper()
	db, err := store.OpenExisting(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	dbDir := filepath.Join(home, "db")
	seed(t, dbDir, "chats", "audit")
	out := filepath.Join(t.TempDir(), "bk")
	m, err := Create(ctx, dbDir, out, "v-test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 2 {
		t.Fatalf("manifest files = %+v", m.Files)
	}
	if _, err := Verify(out); err != nil {
		t.Fatal(err)
	}
	// No staging directory is left behind.
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Fatalf("leftovers beside backup: %v", entries)
	}
	newDB := filepath.Join(t.TempDir(), "db")
	if _, err := Restore(out, newDB); err != nil {
		t.Fatal(err)
	}
	if n := count(t, filepath.Join(newDB, "chats.db")); n != 100 {
		t.Fatalf("restored chats rows = %d", n)
	}
	if n := count(t, filepath.Join(newDB, "audit.db")); n != 200 {
		t.Fatalf("restored audit rows = %d", n)
	}
	// Restoring over existing data is refused and changes nothing.
	if _, err := Restore(out, newDB); err == nil || !strings.Contains(err.Error(), "already holds") {
		t.Fatalf("restore over data: %v", err)
	}
}

func TestRefuseNonEmptyOutput(t *testing.T) {
	t.Parallel()
	dbDir := filepath.Join(t.TempDir(), "db")
	seed(t, dbDir, "chats")
	out := t.TempDir()
	os.WriteFile(filepath.Join(out, "keep.txt"), []byte("mine"), 0o600)
	if _, err := Create(context.Background(), dbDir, out, "v", time.Now()); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "keep.txt")); string(b) != "mine" {
		t.Fatal("existing output touched")
	}
	// An existing empty directory is fine.
	empty := t.TempDir()
	if _, err := Create(context.Background(), dbDir, empty, "v", time.Now()); err != nil {
		t.Fatalf("empty output: %v", err)
	}
}

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	dbDir := filepath.Join(t.TempDir(), "db")
	seed(t, dbDir, "chats")
	out := filepath.Join(t.TempDir(), "bk")
	if _, err := Create(context.Background(), dbDir, out, "v", time.Now()); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(out, "chats.db"), os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte("x"))
	f.Close()
	if _, err := Verify(out); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Fatalf("tampered backup verified: %v", err)
	}
	if _, err := Restore(out, filepath.Join(t.TempDir(), "db")); err == nil {
		t.Fatal("tampered backup restored")
	}
	os.WriteFile(filepath.Join(out, ManifestName), []byte("{"), 0o600)
	if _, err := Verify(out); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("broken manifest: %v", err)
	}
}
