package calendar

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// versionsFixture is a collection holding two versions of one meeting and
// of one moved standup instance, each in its own file, and two versions of
// a call that tie on SEQUENCE and DTSTAMP.
func versionsFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "work")
	writeICS(t, dir, "planning-old.ics", `
BEGIN:VEVENT
UID:planning
SEQUENCE:0
DTSTAMP:20260301T080000Z
DTSTART:20260324T100000Z
DTEND:20260324T110000Z
SUMMARY:Planning (first time)
END:VEVENT`)
	writeICS(t, dir, "planning-new.ics", `
BEGIN:VEVENT
UID:planning
SEQUENCE:1
DTSTAMP:20260302T080000Z
DTSTART:20260325T150000Z
DTEND:20260325T160000Z
SUMMARY:Planning (second time)
END:VEVENT`)
	writeICS(t, dir, "standup.ics", `
BEGIN:VEVENT
UID:standup
SEQUENCE:0
DTSTART:20260302T090000Z
DTEND:20260302T093000Z
RRULE:FREQ=WEEKLY;COUNT=4
SUMMARY:Standup
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID:20260316T090000Z
SEQUENCE:0
DTSTART:20260317T100000Z
DTEND:20260317T103000Z
SUMMARY:Standup (moved to Tuesday)
END:VEVENT`)
	writeICS(t, dir, "standup-moved.ics", `
BEGIN:VEVENT
UID:standup
RECURRENCE-ID:20260316T090000Z
SEQUENCE:2
DTSTART:20260318T110000Z
DTEND:20260318T113000Z
SUMMARY:Standup (moved to Wednesday)
END:VEVENT`)
	// Same SEQUENCE and DTSTAMP: the file modified last wins.
	for i, f := range []struct{ name, summary string }{{"call-b.ics", "Call (older file)"}, {"call-a.ics", "Call (newer file)"}} {
		writeICS(t, dir, f.name, `
BEGIN:VEVENT
UID:call
SEQUENCE:1
DTSTAMP:20260301T080000Z
DTSTART:20260326T080000Z
DTEND:20260326T083000Z
SUMMARY:`+f.summary+`
END:VEVENT`)
		mt := time.Date(2026, 3, 10+i, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(dir, f.name), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// agendaEveryPath returns the March 2026 agenda as lines, checking that
// the SQL, lazy and in-memory snapshot paths agree.
func agendaEveryPath(t *testing.T, s *Store) []string {
	t.Helper()
	want := agendaLines(t, s, time.UTC, pathSQL)
	if got := agendaLines(t, s, time.UTC, pathLazy); !slices.Equal(got, want) {
		t.Errorf("lazy path:\n%s\nSQL path:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s.KeepSnapshot()
	if err := s.WarmSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := agendaLines(t, s, time.UTC, pathAuto); !slices.Equal(got, want) {
		t.Errorf("snapshot path:\n%s\nSQL path:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	return want
}

func searchSummaries(t *testing.T, s *Store, text string) []string {
	t.Helper()
	ins, err := s.Search(context.Background(), SearchQuery{Text: text})
	if err != nil {
		t.Fatal(err)
	}
	out := summaries(ins)
	slices.Sort(out)
	return out
}

// TestNewestVersionAcrossFilesWins: of the versions of one event (UID and
// RECURRENCE-ID) in different files of a collection only the newest shows
// in the agenda, search and the calendar's count; changing or removing the
// winning file brings the other back.
func TestNewestVersionAcrossFilesWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTestStore(t, time.UTC)
	dir := versionsFixture(t)
	src := Source{Name: "work", Path: dir}
	st, err := s.Sync(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if st.Superseded != 3 {
		t.Errorf("superseded %d, want 3; stats %+v", st.Superseded, st)
	}
	var named []string
	for _, w := range st.Warnings {
		if w.Skipped || !strings.Contains(w.Reason, "older version") {
			t.Errorf("warning %+v", w)
		}
		named = append(named, w.File+" "+w.Component)
	}
	slices.Sort(named)
	if want := []string{"call-b.ics VEVENT call", "planning-old.ics VEVENT planning", "standup.ics VEVENT standup (RECURRENCE-ID 2026-03-16T09:00:00Z)"}; !slices.Equal(named, want) {
		t.Errorf("warnings name %q, want %q", named, want)
	}

	want := []string{
		"03-02 09:00 Standup", "03-09 09:00 Standup",
		"03-18 11:00 Standup (moved to Wednesday)", "03-23 09:00 Standup",
		"03-25 15:00 Planning (second time)", "03-26 08:00 Call (newer file)",
	}
	if got := agendaEveryPath(t, s); !slices.Equal(got, want) {
		t.Errorf("agenda:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := searchSummaries(t, s, "planning"); !slices.Equal(got, []string{"03-25 15:00 Planning (second time)"}) {
		t.Errorf("search planning = %q", got)
	}
	if got := searchSummaries(t, s, "moved"); !slices.Equal(got, []string{"03-18 11:00 Standup (moved to Wednesday)"}) {
		t.Errorf("search moved = %q", got)
	}
	cals, err := s.Calendars(ctx)
	if err != nil || len(cals) != 1 || cals[0].Events != 4 {
		t.Errorf("calendars %+v %v, want 4 events shown", cals, err)
	}
	if f, err := s.FileOf(ctx, "work", "planning"); err != nil || f != "planning-new.ics" {
		t.Errorf("FileOf(planning) = %q, %v", f, err)
	}

	// A re-sync that reads nothing keeps the choice and still counts it.
	if st, err = s.Sync(ctx, src); err != nil || st.Unchanged != 6 || st.Superseded != 3 || len(st.Warnings) != 0 {
		t.Fatalf("re-sync %+v %v", st, err)
	}

	// The older meeting file raised above the other wins in turn.
	writeICS(t, dir, "planning-old.ics", `
BEGIN:VEVENT
UID:planning
SEQUENCE:3
DTSTART:20260324T100000Z
DTEND:20260324T110000Z
SUMMARY:Planning (third time)
END:VEVENT`)
	if st, err = s.Sync(ctx, src); err != nil || st.Updated != 1 || st.Superseded != 3 {
		t.Fatalf("sync after update %+v %v", st, err)
	}
	if got := searchSummaries(t, s, "planning"); !slices.Equal(got, []string{"03-24 10:00 Planning (third time)"}) {
		t.Errorf("search planning after update = %q", got)
	}

	// Removing the winners brings the other versions back.
	for _, f := range []string{"planning-old.ics", "standup-moved.ics", "call-a.ics"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if st, err = s.Sync(ctx, src); err != nil || st.Removed != 3 || st.Superseded != 0 {
		t.Fatalf("sync after removal %+v %v", st, err)
	}
	want = []string{
		"03-02 09:00 Standup", "03-09 09:00 Standup",
		"03-17 10:00 Standup (moved to Tuesday)", "03-23 09:00 Standup",
		"03-25 15:00 Planning (second time)", "03-26 08:00 Call (older file)",
	}
	if got := agendaEveryPath(t, s); !slices.Equal(got, want) {
		t.Errorf("agenda after removal:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := searchSummaries(t, s, "moved"); !slices.Equal(got, []string{"03-17 10:00 Standup (moved to Tuesday)"}) {
		t.Errorf("search moved after removal = %q", got)
	}
}

// TestVersionsStayApartAcrossCalendars: the same UID in two collections is
// two calendars' copies, not versions of each other.
func TestVersionsStayApartAcrossCalendars(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTestStore(t, time.UTC)
	root := t.TempDir()
	for i, name := range []string{"home", "work"} {
		writeICS(t, filepath.Join(root, name), "x.ics", `
BEGIN:VEVENT
UID:shared
SEQUENCE:`+string(rune('1'+i))+`
DTSTART:20260310T100000Z
DTEND:20260310T110000Z
SUMMARY:Shared `+name+`
END:VEVENT`)
		st, err := s.Sync(ctx, Source{Name: name, Path: filepath.Join(root, name)})
		if err != nil || st.Superseded != 0 {
			t.Fatalf("sync %s: %+v %v", name, st, err)
		}
	}
	if got := agendaLines(t, s, time.UTC, pathSQL); !slices.Equal(got, []string{"03-10 10:00 Shared home", "03-10 10:00 Shared work"}) {
		t.Errorf("agenda %q", got)
	}
}

// TestMigrationRereadsSharedUIDs: a calendar.db indexed before versions
// were compared gets the files that share a UID read again by the next
// sync, and the older version is hidden then.
func TestMigrationRereadsSharedUIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := versionsFixture(t)
	dbPath := filepath.Join(t.TempDir(), "calendar.db")
	old := store.Schema{Name: Schema.Name, Migrations: Schema.Migrations[:4]}
	db, err := store.Open(ctx, dbPath, old)
	if err != nil {
		t.Fatal(err)
	}
	// What the previous schema held for two of the files: both versions,
	// unordered.
	must := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(`INSERT INTO calendars(id, name, path) VALUES (1, 'work', ?)`, dir)
	for i, f := range []string{"planning-old.ics", "planning-new.ics"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		must(`INSERT INTO files(id, calendar_id, name, mtime, size) VALUES (?, 1, ?, ?, ?)`, i+1, f, fi.ModTime().UnixNano(), fi.Size())
		must(`INSERT INTO events(file_id, calendar_id, uid, summary, start, end) VALUES (?, 1, 'planning', ?, ?, ?)`,
			i+1, "stale "+f, time.Date(2026, 3, 24+i, 10, 0, 0, 0, time.UTC).Unix(), time.Date(2026, 3, 24+i, 11, 0, 0, 0, time.UTC).Unix())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, Options{DBPath: dbPath, Floating: time.UTC, Now: func() time.Time { return time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Sync(ctx, Source{Name: "work", Path: dir})
	if err != nil || st.Updated != 2 || st.Added != 4 || st.Superseded != 3 {
		t.Fatalf("sync after migration %+v %v", st, err)
	}
	if got := searchSummaries(t, s, "planning"); !slices.Equal(got, []string{"03-25 15:00 Planning (second time)"}) {
		t.Errorf("search planning = %q", got)
	}
}

// storedWarnings lists the warnings Store.Warnings holds (what doctor, the
// agenda API and the Agenda page show) as "file component: reason".
func storedWarnings(t *testing.T, s *Store) []string {
	t.Helper()
	ws, total, err := s.Warnings(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != len(ws) {
		t.Errorf("total %d for %d warnings", total, len(ws))
	}
	var out []string
	for _, w := range ws {
		if w.Calendar != "work" || (w.Skipped != strings.Contains(w.Component, "broken")) {
			t.Errorf("warning %+v", w)
		}
		out = append(out, w.File+" "+w.Component+": "+w.Reason)
	}
	return out
}

// TestHiddenVersionsAreFileWarnings: a version hidden by a newer one in
// another file is a warning of its own file wherever file warnings are
// read, not only in the output of the sync that hid it; it names the file
// that wins now, sits beside the file's own parse warnings and goes when
// the version shows again.
func TestHiddenVersionsAreFileWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTestStore(t, time.UTC)
	dir := versionsFixture(t)
	// The losing planning file also has a repaired component of its own.
	writeICS(t, dir, "planning-old.ics", `
BEGIN:VEVENT
UID:planning
SEQUENCE:0
DTSTAMP:20260301T080000Z
DTSTART:20260324T100000Z
DTEND:20260324T110000Z
SUMMARY:Planning (first time)
END:VEVENT
BEGIN:VEVENT
UID:broken
DTSTART:nonsense
SUMMARY:Broken
END:VEVENT`)
	src := Source{Name: "work", Path: dir}
	st, err := s.Sync(ctx, src)
	if err != nil || st.Superseded != 3 {
		t.Fatalf("sync %+v %v", st, err)
	}
	got := storedWarnings(t, s)
	want := []string{
		"call-b.ics VEVENT call: older version (SEQUENCE 1) hidden for the newer one in call-a.ics",
		"planning-old.ics VEVENT planning: older version (SEQUENCE 0) hidden for the newer one in planning-new.ics",
		"standup.ics VEVENT standup (RECURRENCE-ID 2026-03-16T09:00:00Z): older version (SEQUENCE 0) hidden for the newer one in standup-moved.ics",
	}
	// The parse warning of planning-old.ics comes first in its file.
	if len(got) != 4 || !strings.HasPrefix(got[1], "planning-old.ics VEVENT broken") ||
		!slices.Equal([]string{got[0], got[2], got[3]}, want) {
		t.Fatalf("stored warnings:\n%s\nwant the parse warning and:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A re-sync that reads nothing still holds them.
	if st, err = s.Sync(ctx, src); err != nil || st.Unchanged != 6 {
		t.Fatalf("re-sync %+v %v", st, err)
	}
	if again := storedWarnings(t, s); !slices.Equal(again, got) {
		t.Errorf("after a re-sync:\n%s", strings.Join(again, "\n"))
	}
	// A limit counts them with the rest.
	if ws, total, err := s.Warnings(ctx, 2); err != nil || len(ws) != 2 || total != 4 {
		t.Errorf("limited: %d of %d, %v", len(ws), total, err)
	}

	// planning-old.ics raised above planning-new.ics (its broken component
	// fixed): the warning moves to the other file and names this one.
	writeICS(t, dir, "planning-old.ics", `
BEGIN:VEVENT
UID:planning
SEQUENCE:3
DTSTART:20260324T100000Z
DTEND:20260324T110000Z
SUMMARY:Planning (third time)
END:VEVENT`)
	// The winning overrides and call go.
	for _, f := range []string{"standup-moved.ics", "call-a.ics"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if st, err = s.Sync(ctx, src); err != nil || st.Superseded != 1 {
		t.Fatalf("sync after changes %+v %v", st, err)
	}
	want = []string{"planning-new.ics VEVENT planning: older version (SEQUENCE 1) hidden for the newer one in planning-old.ics"}
	if got := storedWarnings(t, s); !slices.Equal(got, want) {
		t.Errorf("after the changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The last winner goes too: nothing is hidden, nothing is named.
	if err := os.Remove(filepath.Join(dir, "planning-old.ics")); err != nil {
		t.Fatal(err)
	}
	if st, err = s.Sync(ctx, src); err != nil || st.Superseded != 0 {
		t.Fatalf("sync after removal %+v %v", st, err)
	}
	if got := storedWarnings(t, s); len(got) != 0 {
		t.Errorf("warnings left: %q", got)
	}
}
