package wiki

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteAndEdit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWiki(t)
	res, err := w.Write(ctx, "pages/Trip.md", "---\ntitle: Trip\n---\nFly on Monday.\nHotel booked.\n", "agent")
	if err != nil || !res.Created || !strings.HasPrefix(res.Diff, "--- /dev/null\n+++ b/pages/Trip.md\n") {
		t.Fatalf("create: %+v %v", res, err)
	}
	if r, err := w.Search(ctx, "monday", 3); err != nil || len(r.Hits) != 1 {
		t.Fatalf("written page not indexed: %+v %v", r, err)
	}
	res, err = w.Edit(ctx, "pages/Trip.md", "Monday", "Tuesday", "agent")
	if err != nil || res.Created {
		t.Fatal(err)
	}
	if !strings.Contains(res.Diff, "-Fly on Monday.\n+Fly on Tuesday.\n") || !strings.Contains(res.Diff, "@@ -1,5 +1,5 @@") {
		t.Fatalf("diff:\n%s", res.Diff)
	}
	if _, err := w.Edit(ctx, "pages/Trip.md", "nothing like this", "x", "agent"); err == nil {
		t.Fatal("edit of absent text accepted")
	}
	w.Write(ctx, "pages/Twice.md", "a a", "agent")
	if _, err := w.Edit(ctx, "pages/Twice.md", "a", "b", "agent"); err == nil || !strings.Contains(err.Error(), "2 times") {
		t.Fatalf("ambiguous edit: %v", err)
	}
	if _, err := w.Edit(ctx, "pages/None.md", "a", "b", "agent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("edit of a missing page: %v", err)
	}
	log, _ := os.ReadFile(filepath.Join(w.Root(), LogFile))
	if !strings.Contains(string(log), "create [[pages/Trip]] (agent)") || !strings.Contains(string(log), "update [[pages/Trip]] (agent)") {
		t.Fatalf("log.md:\n%s", log)
	}
	if _, err := w.Write(ctx, "pages/Bad.md", "\xff\xfe", "agent"); err == nil {
		t.Fatal("invalid UTF-8 written")
	}
	if _, err := w.Write(ctx, "pages/Big.md", strings.Repeat("x", MaxPageBytes+1), "agent"); err == nil {
		t.Fatal("oversized page written")
	}
}

func TestWritePathsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWiki(t)
	outside := t.TempDir()
	os.Symlink(outside, filepath.Join(w.Root(), "pages", "out"))
	os.WriteFile(filepath.Join(outside, "x.md"), []byte("keep"), 0o600)
	os.Symlink(filepath.Join(outside, "x.md"), filepath.Join(w.Root(), "pages", "file-link.md"))
	for _, p := range []string{
		"", "/etc/passwd.md", "../outside.md", "pages/../../outside.md", "pages/./x.md", "pages//x.md", ".obsidian/app.md",
		"pages/.hidden.md", "pages/x.txt", "pages/x.md/", "sources/mail/thread-1.md", "SOURCES/x.md", "log.md", "pages/a\x00.md",
		"pages\\..\\x.md", "~/x.md", "pages/\u2024\u2024/x.md", "pages/\u202ex.md", "pages/out/x.md", "pages/file-link.md", "C:/x.md",
		"pages/ x.md",
	} {
		if _, err := w.Write(ctx, p, "attacker", "agent"); err == nil {
			t.Errorf("write to %q accepted", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "x.md")); string(b) != "keep" {
		t.Fatal("a write went through a symlink")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Fatalf("files created outside the wiki: %v", ents)
	}
}

func TestImportCollisionRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWiki(t)
	src := t.TempDir()
	a := filepath.Join(src, "one", "report.pdf")
	b := filepath.Join(src, "two", "report.pdf")
	os.MkdirAll(filepath.Dir(a), 0o700)
	os.MkdirAll(filepath.Dir(b), 0o700)
	os.WriteFile(a, []byte("version 1"), 0o600)
	os.WriteFile(b, []byte("another file"), 0o600)
	status := func(rs []ImportResult) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Status+":"+r.Dest)
		}
		return strings.Join(s, ",")
	}
	imp := func(paths ...string) string {
		rs, err := w.Import(ctx, paths)
		if err != nil {
			t.Fatal(err)
		}
		return status(rs)
	}
	if got := imp(a); got != "copied:sources/report.pdf" {
		t.Fatalf("first import %s", got)
	}
	if got := imp(a); got != "skipped:sources/report.pdf" {
		t.Fatalf("same bytes %s", got)
	}
	if got := imp(b); got != "renamed:sources/report (2).pdf" {
		t.Fatalf("unrelated same name %s", got)
	}
	os.WriteFile(a, []byte("version 2"), 0o600)
	if got := imp(a); got != "updated:sources/report.pdf" {
		t.Fatalf("tracked origin changed %s", got)
	}
	if got, _ := os.ReadFile(filepath.Join(w.Root(), "sources", "report.pdf")); string(got) != "version 2" {
		t.Fatalf("update not written: %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(w.Root(), "sources", "report (2).pdf")); string(got) != "another file" {
		t.Fatalf("unrelated copy changed: %q", got)
	}
	// A third unrelated file with the same name goes to (3); an identical
	// copy under a new origin is a skip of the existing bytes.
	c := filepath.Join(src, "three", "report.pdf")
	os.MkdirAll(filepath.Dir(c), 0o700)
	os.WriteFile(c, []byte("third"), 0o600)
	if got := imp(c); got != "renamed:sources/report (3).pdf" {
		t.Fatalf("third %s", got)
	}
	d := filepath.Join(src, "four", "report.pdf")
	os.MkdirAll(filepath.Dir(d), 0o700)
	os.WriteFile(d, []byte("another file"), 0o600)
	if got := imp(d); got != "skipped:sources/report (2).pdf" {
		t.Fatalf("same bytes, new origin %s", got)
	}

	// Folders: recursive, hidden skipped, symlinks never followed.
	tree := filepath.Join(src, "notes")
	os.MkdirAll(filepath.Join(tree, "sub"), 0o700)
	os.MkdirAll(filepath.Join(tree, ".git"), 0o700)
	os.WriteFile(filepath.Join(tree, "sub", "n.md"), []byte("# Note\nimportedword\n"), 0o600)
	os.WriteFile(filepath.Join(tree, ".git", "config"), []byte("x"), 0o600)
	secret := filepath.Join(t.TempDir(), "id_rsa")
	os.WriteFile(secret, []byte("KEY"), 0o600)
	os.Symlink(secret, filepath.Join(tree, "key"))
	os.Symlink(filepath.Dir(secret), filepath.Join(tree, "dir"))
	rs, err := w.Import(ctx, []string{tree, filepath.Join(tree, "key")})
	if err != nil {
		t.Fatal(err)
	}
	got := status(rs)
	if !strings.Contains(got, "copied:sources/notes/sub/n.md") || strings.Contains(got, ".git") || strings.Count(got, "refused") != 3 {
		t.Fatalf("tree import %s", got)
	}
	if _, err := os.Stat(filepath.Join(w.Root(), "sources", "notes", "key")); err == nil {
		t.Fatal("symlink target copied")
	}
	reconcile(t, w)
	p, err := w.Resolve(ctx, "sources/notes/sub/n.md")
	if err != nil || !p.Untrusted || p.Kind != KindSource {
		t.Fatalf("imported page provenance: %+v %v", p, err)
	}
	// Importing from inside the wiki is refused.
	if got := imp(filepath.Join(w.Root(), "index.md")); !strings.HasPrefix(got, "refused") {
		t.Fatalf("import from inside %s", got)
	}
}

func TestWatcherPicksUpOutsideEdit(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	reconcile(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan ReconcileStats, 16)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, 20*time.Millisecond, func(s ReconcileStats) { ran <- s }) }()
	// The watcher is registered asynchronously; keep editing until it
	// reports a reconcile that indexed the change (no sleeps in asserts).
	deadline := time.After(20 * time.Second)
	for i := 0; ; i++ {
		os.MkdirAll(filepath.Join(w.Root(), "pages", "new"), 0o700)
		put(t, w, "pages/new/Edited.md", "edited outside with marmalade "+strings.Repeat("!", i))
		select {
		case st := <-ran:
			if st.Indexed == 0 {
				continue
			}
		case <-time.After(200 * time.Millisecond):
			continue
		case <-deadline:
			t.Fatal("watcher never reconciled")
		}
		break
	}
	if res, err := w.Search(context.Background(), "marmalade", 3); err != nil || len(res.Hits) != 1 {
		t.Fatalf("outside edit not searchable: %+v %v", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestReindexKeepsImports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWiki(t)
	f := filepath.Join(t.TempDir(), "a.md")
	os.WriteFile(f, []byte("alpha"), 0o600)
	w.Import(ctx, []string{f})
	put(t, w, "pages/P.md", "reindexword")
	st, err := w.Reindex(ctx)
	if err != nil || st.Indexed != st.Seen {
		t.Fatalf("reindex %+v %v", st, err)
	}
	if res, _ := w.Search(ctx, "reindexword", 3); len(res.Hits) != 1 {
		t.Fatal("reindex lost a page")
	}
	rs, _ := w.Import(ctx, []string{f})
	if rs[0].Status != ImportSkipped {
		t.Fatalf("tracking lost: %+v", rs)
	}
}

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	if d := UnifiedDiff("x", "same\n", "same\n"); d != "" {
		t.Fatalf("equal texts: %q", d)
	}
	old := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	new := "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\ntwelve\n"
	want := "--- a/x\n+++ b/x\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"
	if d := UnifiedDiff("x", old, new); d != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", d, want)
	}
	if d := UnifiedDiff("x", "a", "b"); !strings.Contains(d, "-a\n\\ No newline at end of file\n+b\n") {
		t.Fatalf("no final newline: %q", d)
	}
}
