package audit

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
)

func chainLog(t *testing.T, n int) (*Log, *store.DB) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "audit.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	l := New(db, nil, nil)
	for i := range n {
		if _, err := l.Append(ctx, Entry{Type: "test", Summary: "row", Data: map[string]any{"i": i, "api_key": "sk-live-abcdefghijkl"}}); err != nil {
			t.Fatal(err)
		}
	}
	return l, db
}

func TestVerifyDetectsTampering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		tamper  string
		bad     int64
		problem string
	}{
		{"untouched", "", 0, ""},
		{"edited summary", `UPDATE events SET summary = 'nothing happened' WHERE id = 5`, 5, "changed"},
		{"edited data", `UPDATE events SET data = '{"i":4}' WHERE id = 5`, 5, "changed"},
		{"recomputed own hash", `UPDATE events SET summary = 'x', hash = 'ff' WHERE id = 5`, 5, "changed"},
		{"deleted row", `DELETE FROM events WHERE id = 5`, 6, "does not link"},
		{"edited link", `UPDATE events SET prev_hash = hash WHERE id = 3`, 3, "does not link"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l, db := chainLog(t, 10)
			ctx := context.Background()
			if tc.tamper != "" {
				if _, err := db.ExecContext(ctx, tc.tamper); err != nil {
					t.Fatal(err)
				}
			}
			for _, tail := range []int{0, 8, 100} {
				res, err := l.VerifyTail(ctx, tail)
				if err != nil {
					t.Fatal(err)
				}
				if res.OK != (tc.bad == 0) || res.FirstBad != tc.bad || !strings.Contains(res.Problem, tc.problem) {
					t.Fatalf("tail %d: %+v, want first bad %d (%s)", tail, res, tc.bad, tc.problem)
				}
			}
		})
	}
}

func TestVerifyTailScope(t *testing.T) {
	t.Parallel()
	l, db := chainLog(t, 10)
	ctx := context.Background()
	// A change older than the tail is out of its reach but not of Verify.
	if _, err := db.ExecContext(ctx, `UPDATE events SET summary = 'x' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	res, err := l.VerifyTail(ctx, 5)
	if err != nil || !res.OK || res.Count != 5 {
		t.Fatalf("tail: %+v %v", res, err)
	}
	if res, _ := l.Verify(ctx); res.OK || res.FirstBad != 2 {
		t.Fatalf("full: %+v", res)
	}
	empty, _ := chainLog(t, 0)
	if res, err := empty.VerifyTail(ctx, 5); err != nil || !res.OK || res.Count != 0 {
		t.Fatalf("empty: %+v %v", res, err)
	}
}

func TestRedactedBeforeHashing(t *testing.T) {
	t.Parallel()
	l, db := chainLog(t, 3)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM events WHERE data LIKE '%sk-live%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("secret stored in %d rows (%v)", n, err)
	}
	if res, _ := l.Verify(context.Background()); !res.OK {
		t.Fatalf("chain over redacted rows: %+v", res)
	}
}

func TestAnchor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, db := chainLog(t, 6)
	a, err := l.Head(ctx)
	if err != nil || a.ID != 6 || len(a.Hash) != 64 {
		t.Fatalf("head %+v %v", a, err)
	}
	if err := l.CheckAnchor(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, Entry{Type: "test", Summary: "later"}); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckAnchor(ctx, a); err != nil {
		t.Fatalf("new rows after the anchor are fine: %v", err)
	}
	// Deleting the newest rows leaves a valid chain, but not the anchor.
	if _, err := db.ExecContext(ctx, `DELETE FROM events WHERE id >= 6`); err != nil {
		t.Fatal(err)
	}
	if res, _ := l.Verify(ctx); !res.OK {
		t.Fatalf("a truncated chain still verifies on its own: %+v", res)
	}
	if err := l.CheckAnchor(ctx, a); !errors.Is(err, ErrAnchor) || !strings.Contains(err.Error(), "deleted") {
		t.Fatalf("truncation: %v", err)
	}
	// Rewriting a row and recomputing its hash is caught too.
	b, _ := l.Head(ctx)
	if _, err := db.ExecContext(ctx, `UPDATE events SET hash = 'x' WHERE id = ?`, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := l.CheckAnchor(ctx, b); !errors.Is(err, ErrAnchor) || !strings.Contains(err.Error(), "rewritten") {
		t.Fatalf("rewrite: %v", err)
	}
	empty, _ := chainLog(t, 0)
	if a, err := empty.Head(ctx); err != nil || a.ID != 0 || empty.CheckAnchor(ctx, a) != nil {
		t.Fatalf("empty: %+v %v", a, err)
	}
}
