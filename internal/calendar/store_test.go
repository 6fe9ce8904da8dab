package calendar

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func rome(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skipf("no zoneinfo: %v", err)
	}
	return loc
}

func openTestStore(t testing.TB, loc *time.Location) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc,
		Now: func() time.Time { return time.Date(2026, 3, 20, 12, 0, 0, 0, loc) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func writeICS(t testing.TB, dir, name, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n" + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixture builds a vdir collection exercising recurrence edge cases. The
// weekly standup crosses the 2026-03-29 DST change in Europe/Rome.
func fixture(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "work")
	writeICS(t, dir, "standup.ics", `
BEGIN:VEVENT
UID:standup
DTSTART;TZID=Europe/Rome:20260302T093000
DTEND;TZID=Europe/Rome:20260302T100000
RRULE:FREQ=WEEKLY;BYDAY=MO
EXDATE;TZID=Europe/Rome:20260316T093000
SUMMARY:Standup
ATTENDEE;CN=Marco Rossi:mailto:marco@example.org
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Rome:20260323T093000
DTSTART;TZID=Europe/Rome:20260324T110000
DTEND;TZID=Europe/Rome:20260324T113000
SUMMARY:Standup (moved)
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Rome:20260406T093000
DTSTART;TZID=Europe/Rome:20260406T093000
DTEND;TZID=Europe/Rome:20260406T100000
STATUS:CANCELLED
SUMMARY:Standup
END:VEVENT`)
	writeICS(t, dir, "review.ics", `
BEGIN:VEVENT
UID:review
DTSTART;TZID=W. Europe Standard Time:20260325T140000
DTEND;TZID=W. Europe Standard Time:20260325T153000
SUMMARY:Budget review
LOCATION:Room 4
DESCRIPTION:Quarterly numbers with Anna
END:VEVENT`)
	writeICS(t, dir, "holiday.ics", `
BEGIN:VEVENT
UID:holiday
DTSTART;VALUE=DATE:20260327
DTEND;VALUE=DATE:20260328
SUMMARY:Company holiday
END:VEVENT`)
	writeICS(t, dir, "reminder.ics", `
BEGIN:VEVENT
UID:reminder
DTSTART:20260325T080000
DURATION:PT15M
TRANSP:TRANSPARENT
SUMMARY:Water plants
RRULE:FREQ=DAILY
END:VEVENT`)
	writeICS(t, dir, "custom-tz.ics", `
BEGIN:VTIMEZONE
TZID:/mozilla.org/20050126_1/Europe/Rome
BEGIN:STANDARD
DTSTART:19701025T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
END:STANDARD
END:VTIMEZONE
BEGIN:VEVENT
UID:lunch
DTSTART;TZID=/mozilla.org/20050126_1/Europe/Rome:20260326T130000
DTEND;TZID=/mozilla.org/20050126_1/Europe/Rome:20260326T140000
SUMMARY:Lunch with Anna
END:VEVENT`)
	os.WriteFile(filepath.Join(dir, "broken.ics"), []byte("this is not iCalendar\r\n"), 0o644)
	writeICS(t, dir, "nouid.ics", `
BEGIN:VEVENT
DTSTART:20260325T080000Z
SUMMARY:missing uid
END:VEVENT`)
	return dir
}

func summaries(ins []Instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Start.Format("01-02 15:04")+" "+in.Summary)
	}
	return out
}

func TestSyncAndAgenda(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	dir := fixture(t)
	st, err := s.Sync(ctx, Source{Name: "work", Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	// A file that is not iCalendar is skipped; a VEVENT without UID is
	// kept under a derived UID and named as repaired.
	if st.Files != 7 || st.Added != 7 || len(st.Skipped) != 1 || st.Skipped[0].File != "broken.ics" || st.Skipped[0].Reason == "" {
		t.Fatalf("stats %+v", st)
	}
	if len(st.Warnings) != 1 || st.Warnings[0].File != "nouid.ics" || st.Warnings[0].Skipped || !strings.Contains(st.Warnings[0].Reason, "without UID") {
		t.Fatalf("warnings %+v", st.Warnings)
	}
	ag, err := s.Agenda(ctx, Query{From: time.Date(2026, 3, 16, 0, 0, 0, 0, loc), To: time.Date(2026, 4, 7, 0, 0, 0, 0, loc)})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(summaries(ag.Instances), "\n")
	var keep []string
	for _, l := range strings.Split(got, "\n") {
		if !strings.Contains(l, "Water plants") {
			keep = append(keep, l)
		}
	}
	want := strings.Join([]string{
		"03-24 11:00 Standup (moved)", // the 23rd's instance moved; the 16th is an EXDATE
		"03-25 08:00 missing uid",     // derived UID (shown in its own zone, UTC)
		"03-25 14:00 Budget review",   // Windows zone name
		"03-26 13:00 Lunch with Anna", // vendor-prefixed TZID
		"03-27 00:00 Company holiday",
		"03-30 09:30 Standup", // after the DST change, still 09:30 local
		// 04-06 is cancelled
	}, "\n")
	if strings.Join(keep, "\n") != want {
		t.Fatalf("agenda:\n%s\nwant:\n%s", strings.Join(keep, "\n"), want)
	}
	// The instance after DST is at 07:30 UTC, the one before at 08:30 UTC.
	for _, in := range ag.Instances {
		if in.Summary == "Standup" && in.Start.UTC().Hour() != 7 {
			t.Errorf("standup after DST at %v UTC", in.Start.UTC())
		}
	}
	// The infinite daily rule is bounded by the window (13 days from the 25th).
	n := 0
	for _, in := range ag.Instances {
		if in.Summary == "Water plants" {
			n++
		}
	}
	if n != 13 {
		t.Errorf("water plants instances = %d, want 13", n)
	}
	// Re-sync without changes touches nothing; removing a file drops it.
	st, err = s.Sync(ctx, Source{Name: "work", Path: dir})
	if err != nil || st.Unchanged != 7 || st.Added+st.Updated+st.Removed != 0 {
		t.Fatalf("resync %+v %v", st, err)
	}
	os.Remove(filepath.Join(dir, "review.ics"))
	if st, err = s.Sync(ctx, Source{Name: "work", Path: dir}); err != nil || st.Removed != 1 {
		t.Fatalf("after remove %+v %v", st, err)
	}
	res, err := s.Search(ctx, SearchQuery{Text: "budget"})
	if err != nil || len(res) != 0 {
		t.Fatalf("removed event still found: %v %v", res, err)
	}
}

func TestAgendaCapsAndBadWindows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	if _, err := s.Sync(ctx, Source{Name: "work", Path: fixture(t)}); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, loc)
	for _, q := range []Query{{From: from, To: from}, {From: from, To: from.Add(-time.Hour)}, {From: from, To: from.AddDate(2, 0, 0)}, {To: from}} {
		if _, err := s.Agenda(ctx, q); err == nil {
			t.Errorf("window %v–%v accepted", q.From, q.To)
		}
	}
	ag, err := s.Agenda(ctx, Query{From: from, To: from.AddDate(0, 6, 0), MaxPerSeries: 10})
	if err != nil || !ag.Truncated {
		t.Fatalf("per-series cap not reported: %v %v", ag.Truncated, err)
	}
	if _, err := s.Agenda(ctx, Query{From: from, To: from.AddDate(0, 1, 0), Calendars: []string{"nope"}}); err == nil {
		t.Error("unknown calendar accepted")
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	if _, err := s.Sync(ctx, Source{Name: "work", Path: fixture(t)}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    SearchQuery
		want []string
	}{
		{SearchQuery{Text: "anna"}, []string{"Budget review", "Lunch with Anna"}},
		{SearchQuery{Attendee: "marco"}, []string{"Standup"}},
		{SearchQuery{Text: "room 4"}, []string{"Budget review"}},
		{SearchQuery{Text: "anna", From: time.Date(2026, 3, 26, 0, 0, 0, 0, loc), To: time.Date(2026, 3, 27, 0, 0, 0, 0, loc)}, []string{"Lunch with Anna"}},
		{SearchQuery{Text: `"; DROP TABLE events; --`}, nil},
	}
	for _, c := range cases {
		res, err := s.Search(ctx, c.q)
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		var got []string
		for _, r := range res {
			got = append(got, r.Summary)
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			// FTS rank order between equal hits is stable but not the
			// point here; compare as sets.
			if len(got) != len(c.want) || !sameSet(got, c.want) {
				t.Errorf("%+v: got %v want %v", c.q, got, c.want)
			}
		}
	}
	// The recurring standup is reported at its next occurrence from "now"
	// (2026-03-20): the 23rd was moved away by an override, but Search
	// reports the rule's next instance.
	res, _ := s.Search(ctx, SearchQuery{Attendee: "marco"})
	if len(res) != 1 || res[0].Start.Format("2006-01-02 15:04") != "2026-03-23 09:30" {
		t.Errorf("next occurrence: %v", summaries(res))
	}
	if _, err := s.Search(ctx, SearchQuery{}); err == nil {
		t.Error("empty search accepted")
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestFreeSlots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	if _, err := s.Sync(ctx, Source{Name: "work", Path: fixture(t)}); err != nil {
		t.Fatal(err)
	}
	// A second calendar with a busy and a free (transparent) event.
	other := filepath.Join(t.TempDir(), "home")
	writeICS(t, other, "dentist.ics", `
BEGIN:VEVENT
UID:dentist
DTSTART;TZID=Europe/Rome:20260325T100000
DTEND;TZID=Europe/Rome:20260325T110000
SUMMARY:Dentist
END:VEVENT
BEGIN:VEVENT
UID:dentist2
RECURRENCE-ID;TZID=Europe/Rome:20260101T100000
DTSTART;TZID=Europe/Rome:20260325T104500
DTEND;TZID=Europe/Rome:20260325T113000
SUMMARY:orphan override still blocks time
END:VEVENT`)
	if _, err := s.Sync(ctx, Source{Name: "home", Path: other}); err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 3, 25, 0, 0, 0, 0, loc)
	res, err := s.FreeSlots(ctx, FreeQuery{From: day, To: day.AddDate(0, 0, 1), MinLength: 30 * time.Minute,
		Hours: WorkingHours{Start: 9 * time.Hour, End: 18 * time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Free {
		got = append(got, f.Start.In(loc).Format("15:04")+"-"+f.End.In(loc).Format("15:04"))
	}
	// Busy: 10:00–11:30 (dentist + override, merged), 14:00–15:30 review.
	// The transparent 08:00 reminder is outside hours and free anyway.
	want := "09:00-10:00 11:30-14:00 15:30-18:00"
	if strings.Join(got, " ") != want {
		t.Fatalf("free %v, want %s (busy %v)", got, want, res.Busy)
	}
	// Only the home calendar: the review is not busy there.
	res, _ = s.FreeSlots(ctx, FreeQuery{From: day, To: day.AddDate(0, 0, 1), Calendars: []string{"home"}, MinLength: 4 * time.Hour,
		Hours: WorkingHours{Start: 9 * time.Hour, End: 18 * time.Hour}})
	if len(res.Free) != 1 || res.Free[0].Start.In(loc).Hour() != 11 {
		t.Fatalf("home only: %+v", res.Free)
	}
	// Weekends excluded by working days: Saturday 28th has no slots.
	sat := time.Date(2026, 3, 28, 0, 0, 0, 0, loc)
	res, _ = s.FreeSlots(ctx, FreeQuery{From: sat, To: sat.AddDate(0, 0, 1), Hours: WorkingHours{Start: 9 * time.Hour, End: 17 * time.Hour,
		Days: []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}}})
	if len(res.Free) != 0 {
		t.Fatalf("weekend slots %+v", res.Free)
	}
	if _, err := s.FreeSlots(ctx, FreeQuery{From: day, To: day.AddDate(0, 0, 1), Hours: WorkingHours{Start: 18 * time.Hour, End: 9 * time.Hour}}); err == nil {
		t.Error("inverted working hours accepted")
	}
	cs, err := s.Conflicts(ctx, Query{From: day, To: day.AddDate(0, 0, 1)})
	if err != nil || len(cs) != 1 || cs[0].A.Summary != "Dentist" {
		t.Fatalf("conflicts %+v %v", cs, err)
	}
}

// A single event longer than a week that started well before the window
// is found through the events_long index.
func TestLongEventOverlapsWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	dir := filepath.Join(t.TempDir(), "trips")
	writeICS(t, dir, "trip.ics", `
BEGIN:VEVENT
UID:trip
DTSTART;VALUE=DATE:20260301
DTEND;VALUE=DATE:20260325
SUMMARY:Conference trip
END:VEVENT`)
	writeICS(t, dir, "old.ics", `
BEGIN:VEVENT
UID:old
DTSTART;VALUE=DATE:20260201
DTEND;VALUE=DATE:20260215
SUMMARY:Over before
END:VEVENT`)
	if _, err := s.Sync(ctx, Source{Name: "trips", Path: dir}); err != nil {
		t.Fatal(err)
	}
	ag, err := s.Agenda(ctx, Query{From: time.Date(2026, 3, 20, 0, 0, 0, 0, loc), To: time.Date(2026, 3, 21, 0, 0, 0, 0, loc)})
	if err != nil || len(ag.Instances) != 1 || ag.Instances[0].Summary != "Conference trip" {
		t.Fatalf("agenda %+v %v", ag.Instances, err)
	}
}

// TestSyncCommitFailure: a batch that cannot be written ends the sync
// with its error (naming the file) instead of waiting on its parsers, and
// the next sync indexes everything.
func TestSyncCommitFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTestStore(t, time.UTC)
	dir := t.TempDir()
	for i := range 40 {
		writeICS(t, dir, fmt.Sprintf("e%02d.ics", i), fmt.Sprintf("BEGIN:VEVENT\nUID:e%d\nDTSTART:20260325T%02d0000Z\nSUMMARY:event %d\nEND:VEVENT", i, i%24, i))
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TRIGGER fail_e17 BEFORE INSERT ON files WHEN NEW.name = 'e17.ics'
		BEGIN SELECT RAISE(ABORT, 'injected commit failure'); END`); err != nil {
		t.Fatal(err)
	}
	_, err := s.Sync(ctx, Source{Name: "work", Path: dir})
	if err == nil || !strings.Contains(err.Error(), "e17.ics") || !strings.Contains(err.Error(), "injected commit failure") {
		t.Fatalf("Sync = %v, want the injected failure naming e17.ics", err)
	}
	if _, err := s.db.ExecContext(ctx, `DROP TRIGGER fail_e17`); err != nil {
		t.Fatal(err)
	}
	st, err := s.Sync(ctx, Source{Name: "work", Path: dir})
	if err != nil || st.Events != 40 || len(st.Skipped) != 0 {
		t.Fatalf("rerun: %+v %v", st, err)
	}
}
