package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/store"
)

func TestAuditVerify(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if r := run(t, home, nil, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "no audit trail yet") {
		t.Fatalf("missing db: %+v", r)
	}
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, paths.DB(audit.Schema.Name), audit.Schema)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(db, nil, nil)
	for i := range 5 {
		if _, err := l.Append(ctx, audit.Entry{Type: "test", Summary: "event", Data: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(t, home, nil, "audit", "verify"); r.code != 0 || !strings.Contains(r.stdout, "ok: 5 events") {
		t.Fatalf("intact: %+v", r)
	}
	if _, err := db.ExecContext(ctx, `UPDATE events SET summary = 'edited' WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	r := run(t, home, nil, "audit", "verify", "--json")
	var got struct {
		OK       bool   `json:"ok"`
		FirstBad int64  `json:"first_bad"`
		Count    int64  `json:"count"`
		Problem  string `json:"problem"`
		Path     string `json:"path"`
	}
	if r.code != 1 || json.Unmarshal([]byte(r.stdout), &got) != nil || got.OK || got.FirstBad != 3 || got.Count != 5 || !strings.Contains(got.Problem, "changed") {
		t.Fatalf("tampered: %+v %+v", r, got)
	}
	if r := run(t, home, nil, "audit", "verify", "--tail", "2"); r.code != 0 {
		t.Fatalf("tail beyond the edit: %+v", r)
	}
	if r := run(t, home, nil, "audit", "verify", "--tail", "3"); r.code != 1 || !strings.Contains(r.stdout, "BROKEN at event 3") {
		t.Fatalf("tail over the edit: %+v", r)
	}
	if r := run(t, home, nil, "audit", "verify", "--tail", "-1"); r.code != 2 {
		t.Fatalf("bad tail: %+v", r)
	}

}

func TestAuditVerifyAnchor(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, paths.DB(audit.Schema.Name), audit.Schema)
	if err != nil {
		t.Fatal(err)
	}
	l := audit.New(db, nil, nil)
	for range 5 {
		if _, err := l.Append(ctx, audit.Entry{Type: "test", Summary: "event"}); err != nil {
			t.Fatal(err)
		}
	}
	if r := run(t, home, nil, "audit", "verify", "--reanchor"); r.code != 0 || !strings.Contains(r.stdout, "anchored at event 5") {
		t.Fatalf("reanchor: %+v", r)
	}
	// Deleting the newest events leaves a chain that verifies on its own;
	// the anchor outside the database catches it.
	if _, err := db.ExecContext(ctx, `DELETE FROM events WHERE id >= 4`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if r := run(t, home, nil, "audit", "verify"); r.code != 1 || !strings.Contains(r.stdout, "the newest events were deleted") {
		t.Fatalf("truncated: %+v", r)
	}
}
