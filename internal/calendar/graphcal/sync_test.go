package graphcal

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/msgraph"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
)

// env is one Graph calendar mirrored into a folder and indexed.
type env struct {
	fake  *graphtest.Server
	calID string
	col   *Collection
	idx   *calendar.Store
	src   calendar.Source
	now   time.Time

	mu     sync.Mutex
	sleeps []time.Duration
}

var (
	berlin = mustZone("Europe/Berlin")
	rome   = mustZone("Europe/Rome")
)

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	fake := graphtest.New("secret-token")
	t.Cleanup(fake.Close)
	e := &env{fake: fake, now: time.Date(2026, 3, 20, 9, 0, 0, 0, time.UTC)}
	e.calID = fake.AddCalendar("Calendar", true)
	client := &msgraph.Client{BaseURL: fake.URL, Tokens: msgraph.StaticToken("secret-token"),
		Sleep: func(ctx context.Context, d time.Duration) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.sleeps = append(e.sleeps, d)
			return nil
		}}
	dir := filepath.Join(t.TempDir(), "Calendar")
	e.col = &Collection{Client: client, Calendar: Calendar{ID: e.calID, Name: "Calendar", CanEdit: true}, Dir: dir,
		Floating: rome, Now: func() time.Time { return e.now }, PageSize: 2}
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: rome, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	e.idx = idx
	e.src = calendar.Source{Name: "work/Calendar", Path: dir}
	return e
}

// sync runs a mirror pass and indexes the folder.
func (e *env) sync(t *testing.T) Stats {
	t.Helper()
	ctx := context.Background()
	st, err := e.col.Sync(ctx)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, err := e.idx.Sync(ctx, e.src); err != nil {
		t.Fatalf("index: %v", err)
	}
	return st
}

func (e *env) agenda(t *testing.T, from, to time.Time) []calendar.Instance {
	t.Helper()
	ag, err := e.idx.Agenda(context.Background(), calendar.Query{From: from, To: to})
	if err != nil {
		t.Fatal(err)
	}
	return ag.Instances
}

func summaries(ins []calendar.Instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Summary)
	}
	sort.Strings(out)
	return out
}

func single(subject string, start time.Time, minutes int, zone string) graphtest.Event {
	return graphtest.Event{Subject: subject, Start: graphtest.At(start, zone), End: graphtest.At(start.Add(time.Duration(minutes)*time.Minute), zone),
		OriginalStartTimeZone: zone, OriginalEndTimeZone: zone, ShowAs: "busy"}
}

func TestInitialSyncPagesAndIncrementalDelta(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	day := time.Date(2026, 3, 23, 0, 0, 0, 0, berlin)
	var ids []string
	for i, name := range []string{"One", "Two", "Three", "Four", "Five"} {
		ids = append(ids, e.fake.AddEvent(e.calID, single(name, day.Add(time.Duration(9+i)*time.Hour), 30, "W. Europe Standard Time")))
	}
	// Outside the window: never listed.
	e.fake.AddEvent(e.calID, single("Far away", time.Date(2031, 1, 5, 9, 0, 0, 0, berlin), 30, "W. Europe Standard Time"))
	st := e.sync(t)
	if st.Mode != ModeFull || st.Changed != 5 || st.Written != 5 || st.Files != 5 {
		t.Fatalf("first pass %+v", st)
	}
	pages := 0
	for _, r := range e.fake.Requests() {
		if strings.Contains(r, "/pages/") {
			pages++
		}
	}
	if pages != 2 { // 5 events at 2 a page: the first page and two more
		t.Errorf("followed %d next links, want 2", pages)
	}
	ins := e.agenda(t, day, day.AddDate(0, 0, 1))
	if got := summaries(ins); strings.Join(got, ",") != "Five,Four,One,Three,Two" {
		t.Fatalf("agenda %v", got)
	}
	if ins[0].Start.In(berlin).Hour() != 9 || ins[0].Zone != "Europe/Berlin" {
		t.Errorf("first instance %+v", ins[0])
	}

	// Nothing changed: an empty round, nothing written.
	if st := e.sync(t); st.Mode != ModeIncremental || st.Changed != 0 || st.Written != 0 || st.Deleted != 0 {
		t.Errorf("idle pass %+v", st)
	}

	// Added, updated and deleted behind our back.
	e.fake.AddEvent(e.calID, single("Six", day.Add(16*time.Hour), 30, "W. Europe Standard Time"))
	e.fake.UpdateEvent(ids[0], func(ev *graphtest.Event) { ev.Subject = "One (renamed)" })
	e.fake.DeleteEvent(ids[1])
	st = e.sync(t)
	if st.Mode != ModeIncremental || st.Changed != 2 || st.Removed != 1 || st.Written != 2 || st.Deleted != 1 || st.Files != 5 {
		t.Fatalf("incremental pass %+v", st)
	}
	if got := summaries(e.agenda(t, day, day.AddDate(0, 0, 1))); strings.Join(got, ",") != "Five,Four,One (renamed),Six,Three" {
		t.Fatalf("agenda after changes %v", got)
	}
	// The search index follows too.
	res, err := e.idx.Search(context.Background(), calendar.SearchQuery{Text: "renamed"})
	if err != nil || len(res) != 1 {
		t.Errorf("search: %v %v", res, err)
	}
}

func TestExpiredDeltaTokenResyncs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	day := time.Date(2026, 3, 23, 0, 0, 0, 0, berlin)
	keep := e.fake.AddEvent(e.calID, single("Kept", day.Add(9*time.Hour), 30, "W. Europe Standard Time"))
	gone := e.fake.AddEvent(e.calID, single("Gone", day.Add(10*time.Hour), 30, "W. Europe Standard Time"))
	e.sync(t)
	e.fake.ExpireTokens()
	e.fake.DeleteEvent(gone)
	e.fake.UpdateEvent(keep, func(ev *graphtest.Event) { ev.Subject = "Kept, changed" })
	st := e.sync(t)
	if !st.Resynced || st.Mode != ModeFull || st.Files != 1 || st.Deleted != 1 {
		t.Fatalf("resync pass %+v", st)
	}
	if got := summaries(e.agenda(t, day, day.AddDate(0, 0, 1))); strings.Join(got, ",") != "Kept, changed" {
		t.Fatalf("agenda %v", got)
	}
	// The new round's token works.
	if st := e.sync(t); st.Resynced || st.Mode != ModeIncremental {
		t.Errorf("after resync %+v", st)
	}
}

func TestThrottlingHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.AddEvent(e.calID, single("One", time.Date(2026, 3, 23, 9, 0, 0, 0, berlin), 30, "W. Europe Standard Time"))
	e.fake.Throttle(2, "7")
	start := time.Now()
	e.sync(t)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the pass slept for real: %v", d)
	}
	e.mu.Lock()
	sleeps := append([]time.Duration(nil), e.sleeps...)
	e.mu.Unlock()
	if len(sleeps) != 2 || sleeps[0] != 7*time.Second || sleeps[1] != 7*time.Second || e.fake.Throttled() != 2 {
		t.Fatalf("waits %v, throttled %d", sleeps, e.fake.Throttled())
	}
	// Without Retry-After the client backs off by itself.
	e.fake.Throttle(2, "")
	e.sync(t)
	e.mu.Lock()
	sleeps = append([]time.Duration(nil), e.sleeps[2:]...)
	e.mu.Unlock()
	if len(sleeps) != 2 || sleeps[0] != time.Second || sleeps[1] != 2*time.Second {
		t.Fatalf("backoff %v", sleeps)
	}
	// A wait longer than the client accepts fails the pass; nothing is
	// lost and the next pass goes on.
	e.fake.Throttle(1, "3600")
	if _, err := e.col.Sync(context.Background()); err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("long throttle: %v", err)
	}
	if st := e.sync(t); st.Files != 1 {
		t.Errorf("after throttling %+v", st)
	}
}

func TestRecurringSeriesMovedAndCancelled(t *testing.T) {
	t.Parallel()
	for _, partial := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "partial"}[partial], func(t *testing.T) {
			t.Parallel()
			testMovedAndCancelled(t, partial)
		})
	}
}

// testMovedAndCancelled: with partial, the delta lists exceptions without
// their fields, and the mirror reads them whole.
func testMovedAndCancelled(t *testing.T, partial bool) {
	e := newEnv(t)
	e.fake.SetPartialExceptions(partial)
	const zone = "W. Europe Standard Time"
	first := time.Date(2026, 3, 16, 9, 30, 0, 0, berlin) // a Monday, before the switch to summer time
	master := e.fake.AddEvent(e.calID, graphtest.Event{Subject: "Standup", Start: graphtest.At(first, zone), End: graphtest.At(first.Add(15*time.Minute), zone),
		OriginalStartTimeZone: zone, OriginalEndTimeZone: zone,
		Recurrence: &graphtest.Recurrence{Pattern: graphtest.Pattern{Type: "weekly", Interval: 1, DaysOfWeek: []string{"monday", "wednesday"}, FirstDayOfWeek: "monday"},
			Range: graphtest.Range{Type: "numbered", StartDate: "2026-03-16", NumberOfOccurrences: 8, RecurrenceTimeZone: zone}}})
	e.sync(t)
	ins := e.agenda(t, first, first.AddDate(0, 1, 0))
	if len(ins) != 8 {
		t.Fatalf("%d instances: %+v", len(ins), ins)
	}
	for _, in := range ins {
		// 09:30 in Berlin on both sides of the switch (29 March).
		if l := in.Start.In(berlin); l.Hour() != 9 || l.Minute() != 30 || !in.Recurring {
			t.Errorf("instance at %v", l)
		}
	}
	moved := time.Date(2026, 3, 25, 9, 30, 0, 0, berlin)
	cancelled := time.Date(2026, 3, 30, 9, 30, 0, 0, berlin)
	e.fake.MoveOccurrence(master, moved, moved.Add(5*time.Hour), moved.Add(5*time.Hour+30*time.Minute), func(ev *graphtest.Event) { ev.Subject = "Standup (afternoon)" })
	e.fake.CancelOccurrence(master, cancelled)
	st := e.sync(t)
	if st.Changed != 1 || st.Removed != 1 || st.Written != 1 {
		t.Errorf("pass %+v", st)
	}
	ins = e.agenda(t, first, first.AddDate(0, 1, 0))
	if len(ins) != 7 {
		t.Fatalf("%d instances after the changes: %v", len(ins), summaries(ins))
	}
	var sawMoved bool
	for _, in := range ins {
		if in.Start.Equal(cancelled) {
			t.Errorf("the cancelled occurrence is still there: %+v", in)
		}
		if in.Start.Equal(moved) {
			t.Errorf("the moved occurrence is still at its old time")
		}
		if in.Summary == "Standup (afternoon)" {
			sawMoved = true
			if !in.Start.Equal(moved.Add(5*time.Hour)) || in.RecurrenceID == nil || !in.RecurrenceID.Equal(moved) {
				t.Errorf("moved instance %+v", in)
			}
		}
	}
	if !sawMoved {
		t.Errorf("no moved instance in %v", summaries(ins))
	}
	fetched := 0
	for _, r := range e.fake.Requests() {
		if strings.HasPrefix(r, "GET /v1.0/me/events/") && strings.Contains(r, "-OCC-") {
			fetched++
		}
	}
	if want := map[bool]int{false: 0, true: 1}[partial]; fetched != want {
		t.Errorf("exceptions read whole: %d, want %d", fetched, want)
	}
	// Free/busy sees the move too.
	busy, err := e.idx.ConflictsWith(context.Background(), calendar.Interval{Start: moved.Add(5 * time.Hour), End: moved.Add(5*time.Hour + 10*time.Minute)}, nil)
	if err != nil || len(busy) != 1 {
		t.Errorf("conflicts %v %v", busy, err)
	}
}

// TestSeriesMatchesGraph compares, pattern by pattern, the instances the
// index expands from the RRULE written with those the fake computes.
func TestSeriesMatchesGraph(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		zone string
		p    graphtest.Pattern
		r    graphtest.Range
	}{
		{"daily", "Pacific Standard Time", graphtest.Pattern{Type: "daily", Interval: 3}, graphtest.Range{Type: "noEnd"}},
		{"weekly2", "W. Europe Standard Time", graphtest.Pattern{Type: "weekly", Interval: 2, DaysOfWeek: []string{"tuesday", "friday"}, FirstDayOfWeek: "sunday"}, graphtest.Range{Type: "endDate", EndDate: "2026-12-31"}},
		{"absMonthly", "Tokyo Standard Time", graphtest.Pattern{Type: "absoluteMonthly", Interval: 1, DayOfMonth: 31}, graphtest.Range{Type: "numbered", NumberOfOccurrences: 10}},
		{"relMonthlyLast", "Eastern Standard Time", graphtest.Pattern{Type: "relativeMonthly", Interval: 1, DaysOfWeek: []string{"friday"}, Index: "last"}, graphtest.Range{Type: "noEnd"}},
		{"relYearly", "GMT Standard Time", graphtest.Pattern{Type: "relativeYearly", Interval: 1, Month: 11, DaysOfWeek: []string{"thursday"}, Index: "fourth"}, graphtest.Range{Type: "noEnd"}},
		{"absYearly", "AUS Eastern Standard Time", graphtest.Pattern{Type: "absoluteYearly", Interval: 1, Month: 2, DayOfMonth: 29}, graphtest.Range{Type: "noEnd"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			loc, _ := Zone(c.zone)
			start := time.Date(2026, 3, 3, 18, 0, 0, 0, loc)
			c.r.StartDate, c.r.RecurrenceTimeZone = start.Format("2006-01-02"), c.zone
			id := e.fake.AddEvent(e.calID, graphtest.Event{Subject: c.name, Start: graphtest.At(start, c.zone), End: graphtest.At(start.Add(time.Hour), c.zone),
				OriginalStartTimeZone: c.zone, Recurrence: &graphtest.Recurrence{Pattern: c.p, Range: c.r}})
			e.sync(t)
			from, to := Window(e.now)
			var want []time.Time
			insts, err := e.col.instances(context.Background(), id, from, to)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range insts {
				os, _ := parseOffset(x.OriginalStart)
				want = append(want, os)
			}
			sort.Slice(want, func(i, j int) bool { return want[i].Before(want[j]) })
			var got []time.Time
			seen := map[int64]bool{}
			for f := from; f.Before(to); f = f.AddDate(0, 6, 0) {
				ag, err := e.idx.Agenda(context.Background(), calendar.Query{From: f, To: f.AddDate(0, 6, 0), Max: 10000, MaxPerSeries: 10000})
				if err != nil {
					t.Fatal(err)
				}
				for _, in := range ag.Instances {
					if !seen[in.Start.Unix()] && in.Start.Before(to) && !in.Start.Before(from) {
						seen[in.Start.Unix()] = true
						got = append(got, in.Start)
					}
				}
			}
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("index %d instances, Graph %d", len(got), len(want))
			}
			for i := range got {
				if !got[i].Equal(want[i]) {
					t.Fatalf("instance %d: index %v, Graph %v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestAllDayEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const zone = "Pacific Standard Time"
	e.fake.AddEvent(e.calID, graphtest.Event{Subject: "Conference", IsAllDay: true, Start: graphtest.Day(2026, 4, 6, zone), End: graphtest.Day(2026, 4, 9, zone), OriginalStartTimeZone: zone, ShowAs: "free"})
	series := e.fake.AddEvent(e.calID, graphtest.Event{Subject: "Gym", IsAllDay: true, Start: graphtest.Day(2026, 4, 4, zone), End: graphtest.Day(2026, 4, 5, zone), OriginalStartTimeZone: zone,
		Recurrence: &graphtest.Recurrence{Pattern: graphtest.Pattern{Type: "weekly", Interval: 1, DaysOfWeek: []string{"saturday"}}, Range: graphtest.Range{Type: "numbered", StartDate: "2026-04-04", NumberOfOccurrences: 4, RecurrenceTimeZone: zone}}})
	e.sync(t)
	// Dates, not instants: in the index's zone (Rome) they are whole days.
	from := time.Date(2026, 4, 1, 0, 0, 0, 0, rome)
	ins := e.agenda(t, from, from.AddDate(0, 1, 0))
	var days []string
	for _, in := range ins {
		if !in.AllDay {
			t.Errorf("%s not all-day", in.Summary)
		}
		days = append(days, in.Summary+"@"+in.Start.Format("01-02")+"/"+in.End.Format("01-02"))
	}
	sort.Strings(days)
	if got := strings.Join(days, " "); got != "Conference@04-06/04-09 Gym@04-04/04-05 Gym@04-11/04-12 Gym@04-18/04-19 Gym@04-25/04-26" {
		t.Fatalf("all-day instances %s", got)
	}
	// A cancelled all-day occurrence becomes an EXDATE on the same date.
	e.fake.CancelOccurrence(series, time.Date(2026, 4, 11, 0, 0, 0, 0, mustZone("America/Los_Angeles")))
	e.sync(t)
	for _, in := range e.agenda(t, from, from.AddDate(0, 1, 0)) {
		if in.Summary == "Gym" && in.Start.Format("01-02") == "04-11" {
			t.Errorf("cancelled all-day occurrence still listed")
		}
	}
}

func TestMalformedEntriesSkipped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	day := time.Date(2026, 3, 23, 0, 0, 0, 0, berlin)
	e.fake.AddEvent(e.calID, single("Good", day.Add(9*time.Hour), 30, "W. Europe Standard Time"))
	e.fake.AddRawEvent(e.calID, "bad-type", `{"id":"bad-type","type":"singleInstance","subject":42}`)
	e.fake.AddRawEvent(e.calID, "bad-time", `{"id":"bad-time","type":"singleInstance","subject":"x","start":{"dateTime":"tomorrow","timeZone":"UTC"},"end":{"dateTime":"2026-03-23T10:00:00","timeZone":"UTC"}}`)
	e.fake.AddRawEvent(e.calID, "orphan", `{"id":"orphan","type":"occurrence","subject":"x","originalStart":"2026-03-23T10:00:00Z"}`)
	e.fake.AddRawEvent(e.calID, "", `{"subject":"no id"}`)
	st := e.sync(t)
	if st.Skipped != 4 || st.Files != 1 || len(st.Warnings) != 4 {
		t.Fatalf("pass %+v", st)
	}
	joined := strings.Join(st.Warnings, "\n")
	for _, want := range []string{"bad-type skipped: malformed JSON", "bad-time skipped", "orphan skipped: no seriesMasterId", "without an id"} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings lack %q:\n%s", want, joined)
		}
	}
	if got := summaries(e.agenda(t, day, day.AddDate(0, 0, 1))); strings.Join(got, ",") != "Good" {
		t.Errorf("agenda %v", got)
	}
}

func TestWindowsZoneOnDisk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := time.Date(2026, 3, 24, 10, 0, 0, 0, mustZone("Asia/Kolkata"))
	id := e.fake.AddEvent(e.calID, single("Delhi call", start, 60, "India Standard Time"))
	e.sync(t)
	b, err := os.ReadFile(filepath.Join(e.col.Dir, FileName("", id)))
	if err != nil {
		ents, _ := os.ReadDir(e.col.Dir)
		t.Fatal(err, ents)
	}
	if !strings.Contains(string(b), "DTSTART;TZID=Asia/Calcutta:20260324T100000\r\n") {
		t.Errorf("file:\n%s", b)
	}
}
