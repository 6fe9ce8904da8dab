package calendar

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// agendaKeys renders an agenda as comparable lines.
func agendaKeys(ag Agenda) []string {
	out := make([]string, len(ag.Instances))
	for i, in := range ag.Instances {
		out[i] = in.Calendar + "|" + in.UID + "|" + in.Start.Format(time.RFC3339) + "|" + in.End.Format(time.RFC3339) + "|" + in.Summary + "|" + in.Start.Location().String()
	}
	return out
}

// assertSamePaths checks that materialized and lazy expansion give the
// same agenda for each month of a span.
func assertSamePaths(t *testing.T, s *Store, from time.Time, months int) int {
	t.Helper()
	ctx := context.Background()
	total := 0
	for m := 0; m < months; m++ {
		f := from.AddDate(0, m, 0)
		q := Query{From: f, To: f.AddDate(0, 1, 0), Max: 100000, path: pathLazy}
		lazy, err := s.Agenda(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []queryPath{pathAuto, pathSQL} {
			q.path = p
			got, err := s.Agenda(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := agendaKeys(got), agendaKeys(lazy); !reflect.DeepEqual(a, b) {
				t.Fatalf("month %s, path %d: %d instances, lazy %d\ngot:  %v\nlazy: %v", f.Format("2006-01"), p, len(a), len(b), a, b)
			}
		}
		total += len(lazy.Instances)
	}
	return total
}

// The instances table answers exactly what lazy expansion answers: for the
// recurrence fixture (EXDATE, overrides, moved and cancelled instances,
// DST) and a generated vdir, month by month across the horizon, after a
// recurring file changes, and after the horizon moves a month on.
func TestMaterializedInstancesMatchLazyExpansion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	now := time.Date(2026, 3, 20, 12, 0, 0, 0, loc)
	s, err := Open(ctx, Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fx := fixture(t)
	srcs := append([]Source{{Name: "work", Path: fx}}, genVdir(t, filepath.Join(t.TempDir(), "gen"), 600, 2)...)
	for _, src := range srcs {
		if _, err := s.Sync(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	var stored, lazySeries int
	s.db.QueryRowContext(ctx, `SELECT count(*) FROM instances`).Scan(&stored)
	s.db.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE recurring = 1 AND materialized = 0`).Scan(&lazySeries)
	if stored == 0 {
		t.Fatal("no instances materialized")
	}
	hz, _ := readHorizon(ctx, s.db)
	if want := horizonFor(now); hz != want {
		t.Fatalf("horizon %+v, want %+v", hz, want)
	}
	if n := assertSamePaths(t, s, time.Date(2025, 4, 1, 0, 0, 0, 0, loc), 24); n < 500 {
		t.Fatalf("only %d instances compared", n)
	}
	// The same with the horizon held in memory (the daemon's way).
	s.KeepSnapshot()
	if err := s.WarmSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if sn := s.snap.cur.Load(); sn == nil || len(sn.occ) < 500 {
		t.Fatal("snapshot not built")
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, loc)
	if s.freshSnapshot(ctx, from.Unix(), from.AddDate(0, 1, 0).Unix()) == nil {
		t.Fatal("a fresh snapshot is not used")
	}
	assertSamePaths(t, s, time.Date(2025, 4, 1, 0, 0, 0, 0, loc), 24)

	// A changed recurring file replaces its instances (no stale rows).
	writeICS(t, fx, "standup.ics", `
BEGIN:VEVENT
UID:standup
DTSTART;TZID=Europe/Rome:20260303T150000
DTEND;TZID=Europe/Rome:20260303T153000
RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10
SUMMARY:Standup moved
END:VEVENT`)
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(fx, "standup.ics"), future, future)
	if _, err := s.Sync(ctx, srcs[0]); err != nil {
		t.Fatal(err)
	}
	var standup int
	s.db.QueryRowContext(ctx, `SELECT count(*) FROM instances i JOIN events e ON e.id = i.event_id WHERE e.uid = 'standup'`).Scan(&standup)
	if standup != 10 {
		t.Fatalf("standup instances after the change: %d, want 10", standup)
	}
	// The snapshot is stale now: answers come from SQL until it is rebuilt.
	if sn := s.snap.cur.Load(); sn != nil && s.freshSnapshot(ctx, from.Unix(), from.AddDate(0, 1, 0).Unix()) == sn {
		t.Fatal("a stale snapshot is used")
	}
	assertSamePaths(t, s, time.Date(2026, 1, 1, 0, 0, 0, 0, loc), 6)
	if err := s.WarmSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	assertSamePaths(t, s, time.Date(2026, 1, 1, 0, 0, 0, 0, loc), 6)

	// A month later the horizon moves and is rebuilt once.
	now = now.AddDate(0, 1, 0)
	if moved, err := s.RefreshHorizon(ctx); err != nil || !moved {
		t.Fatalf("horizon not moved: %v %v", moved, err)
	}
	if moved, err := s.RefreshHorizon(ctx); err != nil || moved {
		t.Fatalf("horizon moved twice: %v %v", moved, err)
	}
	if hz, _ := readHorizon(ctx, s.db); hz != horizonFor(now) {
		t.Fatalf("horizon %+v after the move", hz)
	}
	assertSamePaths(t, s, time.Date(2025, 5, 1, 0, 0, 0, 0, loc), 24)
	if err := s.WarmSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	assertSamePaths(t, s, time.Date(2025, 5, 1, 0, 0, 0, 0, loc), 24)
	// Windows outside the horizon still expand lazily.
	far, err := s.Agenda(ctx, Query{From: time.Date(2031, 1, 1, 0, 0, 0, 0, loc), To: time.Date(2031, 2, 1, 0, 0, 0, 0, loc), Max: 100000})
	if err != nil || len(far.Instances) == 0 {
		t.Fatalf("agenda beyond the horizon: %d %v", len(far.Instances), err)
	}
}
