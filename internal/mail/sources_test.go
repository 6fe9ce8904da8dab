package mail

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRescanSourcesFollowsTheFolder: a registered folder's later
// deliveries are mirrored and its deleted files leave the mirror on a
// plain rescan (no Full).
func TestRescanSourcesFollowsTheFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	root := t.TempDir()
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	old := time.Now().Add(-time.Hour)
	p1 := writeMaildir(t, root, "", "1:2,S", msg("1@x", "a@x.org", "b@x.org", "one", d, "first body"), old)
	if _, err := s.Import(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	src, err := s.AddSource(ctx, root, "")
	if err != nil || src.Account != "local" {
		t.Fatalf("AddSource %+v %v", src, err)
	}
	if srcs, _ := s.Sources(ctx); len(srcs) != 1 || srcs[0].Path != root {
		t.Fatalf("sources %+v", srcs)
	}
	writeMaildir(t, root, "", "2:2,S", msg("2@x", "a@x.org", "b@x.org", "two", d, "second body"), time.Now())
	if err := os.Remove(p1); err != nil {
		t.Fatal(err)
	}
	p, err := s.RescanSources(ctx)
	if err != nil || p.Added != 1 || p.Deleted != 1 {
		t.Fatalf("rescan %+v %v", p, err)
	}
	r, _ := s.Search(ctx, Query{})
	if len(r.Messages) != 1 || r.Messages[0].Subject != "two" {
		t.Errorf("mirror after rescan: %+v", r.Messages)
	}
	// A source folder that vanished is reported, and its mail kept.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RescanSources(ctx); err == nil {
		t.Error("a vanished source rescanned without error")
	}
	if n := count(t, s, Query{}); n != 1 {
		t.Errorf("%d messages after the source vanished, want 1 kept", n)
	}
	if err := s.RemoveSource(ctx, root); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveSource(ctx, root); !errors.Is(err, ErrSourceNotFound) {
		t.Errorf("second remove: %v", err)
	}
}

func TestAddSourceRefusesFilesAndMissingPaths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	f := filepath.Join(t.TempDir(), "inbox.mbox")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f, filepath.Join(t.TempDir(), "nope")} {
		if _, err := s.AddSource(ctx, p, ""); err == nil {
			t.Errorf("AddSource(%s) accepted", p)
		}
	}
}
