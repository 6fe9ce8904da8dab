package wiki

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store/storetest"
)

func newWiki(t *testing.T) *Wiki {
	t.Helper()
	dir := t.TempDir()
	w, err := Open(context.Background(), Options{Root: filepath.Join(dir, "wiki"), DBPath: filepath.Join(dir, "wiki.db"),
		Now: func() time.Time { return time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func put(t *testing.T, w *Wiki, rel, content string) {
	t.Helper()
	p := filepath.Join(w.Root(), filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func reconcile(t *testing.T, w *Wiki) ReconcileStats {
	t.Helper()
	st, err := w.Reconcile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestLayoutAndReconcile(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	for _, f := range []string{"sources", "pages", "index.md", "log.md", "purpose.md", "schema.md"} {
		if _, err := os.Stat(filepath.Join(w.Root(), f)); err != nil {
			t.Fatalf("layout: %v", err)
		}
	}
	put(t, w, "pages/Apollo.md", "---\ntitle: Project Apollo\ntags: [work, space]\nsources:\n  - hestia://chat/abc\n---\n# Apollo\n\nThe launch is planned for March. See [[Budget#2027|the budget]].\n")
	put(t, w, "pages/Budget.md", "---\ntitle: Budget\n---\nNumbers for [[Project Apollo]].\n")
	st := reconcile(t, w)
	if st.Indexed != 6 || st.Seen != 6 {
		t.Fatalf("first reconcile %+v", st)
	}
	if st := reconcile(t, w); st.Indexed != 0 || st.Removed != 0 {
		t.Fatalf("unchanged folder re-indexed: %+v", st)
	}
	os.Remove(filepath.Join(w.Root(), "pages", "Budget.md"))
	if st := reconcile(t, w); st.Removed != 1 {
		t.Fatalf("removed file kept: %+v", st)
	}
	if _, err := w.Resolve(context.Background(), "Budget"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted page still resolves: %v", err)
	}
}

func TestSearchReadLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWiki(t)
	put(t, w, "pages/Apollo.md", "---\ntitle: Project Apollo\n---\n# Apollo\n\nThe launch is planned for March. See [[Budget#2027|the budget]].\n\n## Risks\n\nThe supplier Zyxoflux may be late.\n")
	put(t, w, "pages/Budget.md", "---\ntitle: Budget\n---\nNumbers for [[Project Apollo]] and [[Missing page]].\n")
	put(t, w, "sources/mail/thread-7.md", "---\ntitle: Invoice thread\nsources: [hestia://mail/thread/7]\n---\nThe café invoice is due.\n")
	reconcile(t, w)

	res, err := w.Search(ctx, "launch march", 5)
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Path != "pages/Apollo.md" || res.Hits[0].Title != "Project Apollo" {
		t.Fatalf("word search: %+v %v", res, err)
	}
	if !strings.Contains(res.Hits[0].Snippet, "launch") {
		t.Fatalf("snippet %q", res.Hits[0].Snippet)
	}
	// Partial word: only the trigram index finds it.
	res, err = w.Search(ctx, "oflu", 5)
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Heading != "Risks" || !slices.Contains(res.Methods, "trigram") {
		t.Fatalf("substring search: %+v %v", res, err)
	}
	// Accents do not matter to word search; provenance comes back.
	res, err = w.Search(ctx, "cafe", 5)
	if err != nil || len(res.Hits) != 1 || !res.Hits[0].Untrusted || res.Hits[0].Sources[0] != "hestia://mail/thread/7" {
		t.Fatalf("accent search: %+v %v", res, err)
	}
	if _, err := w.Search(ctx, "  ", 5); err == nil {
		t.Fatal("empty query accepted")
	}
	// FTS syntax typed by a model is plain text.
	if _, err := w.Search(ctx, `title:x AND "NEAR(`, 5); err != nil {
		t.Fatalf("operator text: %v", err)
	}

	r, err := w.Read(ctx, "project apollo", 0, 40)
	if err != nil || r.Path != "pages/Apollo.md" || r.NextOffset == 0 || len(r.Content) > 40 {
		t.Fatalf("read window: %+v %v", r, err)
	}
	if !slices.Equal(r.Backlinks, []string{"pages/Budget.md"}) {
		t.Fatalf("backlinks %v", r.Backlinks)
	}
	var all strings.Builder
	for off := int64(0); ; {
		r, err := w.Read(ctx, "pages/Apollo.md", off, 200)
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(r.Content)
		if r.NextOffset == 0 {
			break
		}
		off = r.NextOffset
	}
	raw, _ := os.ReadFile(filepath.Join(w.Root(), "pages", "Apollo.md"))
	if all.String() != string(raw) {
		t.Fatal("paging with next_offset does not give back the whole page")
	}

	l, err := w.PageLinks(ctx, "Budget")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Outgoing) != 2 || l.Outgoing[0].Path != "pages/Apollo.md" || !l.Outgoing[1].Broken || len(l.Backlinks) != 1 || l.Backlinks[0].Heading != "2027" {
		t.Fatalf("links %+v", l)
	}
	if _, err := w.Read(ctx, "nope", 0, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing page: %v", err)
	}
}

func TestResolveAmbiguous(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	put(t, w, "pages/a/Notes.md", "x")
	put(t, w, "pages/b/Notes.md", "y")
	reconcile(t, w)
	if _, err := w.Resolve(context.Background(), "Notes"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Fatalf("ambiguous name: %v", err)
	}
	if p, err := w.Resolve(context.Background(), "pages/b/Notes"); err != nil || p.Path != "pages/b/Notes.md" {
		t.Fatalf("by path: %+v %v", p, err)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	put(t, w, "pages/A.md", "---\ntitle: Same\nreview_by: 2026-01-01\n---\nLinks [[B]], [[Ghost]] and [[A]].\n")
	put(t, w, "pages/B.md", "---\ntitle: same\nreview_by: 2030-01-01\n---\nback to [[A]]\n")
	put(t, w, "pages/Orphan.md", "no front matter here\n")
	put(t, w, "pages/Broken.md", "---\ntitle: [unclosed\n---\nbody\n")
	put(t, w, "pages/Bin.md", "abc\x00\x01\x02")
	put(t, w, "pages/Latin1.md", "---\ntitle: Caf\xe9\n---\n[[A]] caf\xe9\n")
	reconcile(t, w)
	fs, err := w.Lint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	has := func(kind, path, detail string) bool {
		for _, f := range fs {
			if f.Kind == kind && f.Path == path && strings.Contains(f.Detail, detail) {
				return true
			}
		}
		return false
	}
	for _, want := range []struct{ kind, path, detail string }{
		{LintBrokenLink, "pages/A.md", "Ghost"},
		{LintSelfLink, "pages/A.md", "[[A]]"},
		{LintOrphan, "pages/Orphan.md", ""},
		{LintNoFrontMatt, "pages/Orphan.md", ""},
		{LintDuplicate, "pages/A.md", "pages/B.md"},
		{LintDuplicate, "pages/B.md", "pages/A.md"},
		{LintReviewDue, "pages/A.md", "2026-01-01"},
		{LintFileProblem, "pages/Broken.md", "malformed front matter"},
		{LintFileProblem, "pages/Bin.md", "binary"},
		{LintFileProblem, "pages/Latin1.md", "invalid UTF-8"},
	} {
		if !has(want.kind, want.path, want.detail) {
			t.Errorf("lint lacks %+v; got %+v", want, fs)
		}
	}
	if has(LintReviewDue, "pages/B.md", "") || has(LintOrphan, "pages/A.md", "") || has(LintOrphan, "index.md", "") {
		t.Errorf("lint over-reports: %+v", fs)
	}
}

func TestBigFileIndexedPartly(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	var b bytes.Buffer
	b.WriteString("---\ntitle: Huge\n---\nneedleatstart\n")
	line := strings.Repeat("filler words é ", 64) + "\n"
	for b.Len() < MaxIndexBytes+(1<<20) {
		b.WriteString(line)
	}
	b.WriteString("needleatend\n")
	put(t, w, "pages/Huge.md", b.String())
	reconcile(t, w)
	ctx := context.Background()
	if res, err := w.Search(ctx, "needleatstart", 5); err != nil || len(res.Hits) != 1 {
		t.Fatalf("head of a big file: %+v %v", res, err)
	}
	p, err := w.Resolve(ctx, "Huge")
	if err != nil || len(p.Problems) != 1 || !strings.Contains(p.Problems[0], "only the first") {
		t.Fatalf("problem not reported: %+v %v", p, err)
	}
	r, err := w.Read(ctx, "Huge", int64(b.Len()-20), 0)
	if err != nil || !strings.Contains(r.Content, "needleatend") {
		t.Fatalf("tail still readable: %q %v", r.Content, err)
	}
}

func TestSymlinksNotFollowed(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	outside := filepath.Join(t.TempDir(), "secret.md")
	os.WriteFile(outside, []byte("topsecretword"), 0o600)
	os.Symlink(outside, filepath.Join(w.Root(), "pages", "link.md"))
	os.Symlink(filepath.Dir(outside), filepath.Join(w.Root(), "pages", "dirlink"))
	reconcile(t, w)
	if res, _ := w.Search(context.Background(), "topsecretword", 5); len(res.Hits) != 0 {
		t.Fatalf("symlink followed: %+v", res)
	}
}

// A search runs its statements without a goroutine watching each (see
// store.ReadContext); an ended context stops it before any.
func TestSearchWatchesNoStatement(t *testing.T) {
	t.Parallel()
	w := newWiki(t)
	put(t, w, "pages/Apollo.md", "---\ntitle: Project Apollo\n---\n# Apollo\n\nThe launch is planned for March.\n")
	put(t, w, "pages/Budget.md", "---\ntitle: Budget\n---\nThe launch budget for [[Project Apollo]].\n")
	reconcile(t, w)
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &storetest.WatchedContext{Context: parent}
	res, err := w.Search(ctx, "launch", 5)
	if err != nil || len(res.Hits) != 2 {
		t.Fatalf("search: %+v %v", res, err)
	}
	if n := ctx.Watches(); n != 0 {
		t.Errorf("the statements watched the context %d times", n)
	}
	cancel()
	if _, err := w.Search(ctx, "launch", 5); !errors.Is(err, context.Canceled) {
		t.Errorf("search after cancel: %v", err)
	}
}
