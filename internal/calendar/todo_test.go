package calendar

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseTodos(t *testing.T) {
	t.Parallel()
	loc := rome(t)
	data, err := os.ReadFile("testdata/tasks/broken.ics")
	if err != nil {
		t.Fatal(err)
	}
	o, err := ParseObjects(bytes.NewReader(data), loc)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Events) != 0 || len(o.Todos) != 2 {
		t.Fatalf("parsed %d events, %d to-dos: %+v", len(o.Events), len(o.Todos), o.Todos)
	}
	bd := o.Todos[0]
	// A bad DUE and COMPLETED are dropped, PRIORITY ignored,
	// PERCENT-COMPLETE clamped, a clumsy STATUS read; the task stays.
	if bd.UID != "broken-dates" || !bd.Due.IsZero() || !bd.Completed.IsZero() || bd.Priority != 0 || bd.Percent != 100 ||
		bd.Status != TodoNeedsAction || bd.Done() {
		t.Fatalf("repaired to-do %+v", bd)
	}
	nouid := o.Todos[1]
	if !strings.HasPrefix(nouid.UID, "hestia-nouid-") || nouid.Parent != "rent-2026" || nouid.DueZone != "America/New_York" ||
		nouid.Due.UTC().Format(time.RFC3339) != "2026-03-26T16:00:00Z" {
		t.Fatalf("to-do without UID %+v", nouid)
	}
	var got []string
	for _, p := range o.Problems {
		got = append(got, p.String())
	}
	joined := strings.Join(got, "\n")
	for _, want := range []string{
		`repaired VTODO broken-dates: DUE ignored: bad DATE-TIME "2026-03-25"`,
		"repaired VTODO broken-dates: PRIORITY 12 is outside 0–9; ignored",
		"repaired VTODO broken-dates: PERCENT-COMPLETE 140 clamped to 100",
		"repaired VTODO broken-dates: COMPLETED ignored",
		`skipped VTODO bad-override: VTODO bad-override RECURRENCE-ID: bad DATE "tomorrow"`,
		"repaired VTODO hestia-nouid-",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems lack %q:\n%s", want, joined)
		}
	}
	// The event parser is unchanged by to-dos: no events, no problems.
	evs, probs, err := ParseICSLenient(bytes.NewReader(data), loc)
	if err != nil || len(evs) != 0 || len(probs) != 0 {
		t.Fatalf("ParseICSLenient: %v %v %v", evs, probs, err)
	}
}

func TestTodoNextOccurrence(t *testing.T) {
	t.Parallel()
	loc := rome(t)
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	weekly := Todo{UID: "w", Start: at("2026-03-02 09:00"), Due: at("2026-03-02 18:00"), RRule: "FREQ=WEEKLY;BYDAY=MO"}
	day := func(s string) time.Time { return at(s + " 00:00") }
	never := func(time.Time) bool { return false }
	cases := []struct {
		name  string
		today string
		done  func(time.Time) bool
		want  string // original start, due
	}{
		// Wednesday the 18th: Monday the 16th was missed and is shown.
		{"last missed", "2026-03-18", never, "03-16 09:00 due 03-16 18:00"},
		// Completed: the next Monday.
		{"last done", "2026-03-18", func(o time.Time) bool { return o.Equal(at("2026-03-16 09:00")) }, "03-23 09:00 due 03-23 18:00"},
		// On the Monday itself it is due today; the week before, missed,
		// is not shown any more.
		{"due today", "2026-03-23", never, "03-23 09:00 due 03-23 18:00"},
		// The next ones done ahead of time are skipped.
		{"ahead done", "2026-03-17", func(o time.Time) bool { return !o.After(at("2026-03-30 09:00")) }, "04-06 09:00 due 04-06 18:00"},
	}
	for _, c := range cases {
		occ, ok := weekly.NextOccurrence(day(c.today), c.done)
		got := occ.Original.Format("01-02 15:04") + " due " + occ.Due.Format("01-02 15:04")
		if !ok || got != c.want {
			t.Errorf("%s: %s %v, want %s", c.name, got, ok, c.want)
		}
	}
	// A finished series with every occurrence done has nothing left.
	count := Todo{UID: "c", Due: day("2026-03-02"), DueAllDay: true, RRule: "FREQ=DAILY;COUNT=3"}
	if occ, ok := count.NextOccurrence(day("2026-03-10"), func(time.Time) bool { return true }); ok {
		t.Fatalf("finished series: %+v", occ)
	}
	// Anchored on DUE alone (no DTSTART), all-day.
	if occ, ok := count.NextOccurrence(day("2026-03-10"), never); !ok || occ.Due.Format("01-02") != "03-04" || !occ.Start.IsZero() {
		t.Fatalf("DUE-anchored: %+v %v", occ, ok)
	}
}

func taskStore(t *testing.T, now time.Time) *Store {
	t.Helper()
	st, err := Open(context.Background(), Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: now.Location(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func writeTaskFile(t *testing.T, dir, name, body string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func taskSummaries(ts []Task) string {
	var out []string
	for _, t := range ts {
		s := t.Summary
		if t.Overdue {
			s += "!"
		}
		if t.Done {
			s += "✓"
		}
		out = append(out, s)
	}
	return strings.Join(out, "|")
}

func TestTodoIndexAndQueries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	now := time.Date(2026, 3, 20, 10, 0, 0, 0, loc) // a Friday
	st := taskStore(t, now)
	dir := filepath.Join(t.TempDir(), "home")
	for _, f := range []string{"rent.ics", "recurring.ics", "broken.ics"} {
		b, err := os.ReadFile(filepath.Join("testdata/tasks", f))
		if err != nil {
			t.Fatal(err)
		}
		writeTaskFile(t, dir, f, string(b))
	}
	writeTaskFile(t, dir, "done.ics", `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VTODO
UID:done-1
DTSTAMP:20260301T080000Z
SUMMARY:Renew passport
DUE;VALUE=DATE:20260310
STATUS:COMPLETED
COMPLETED:20260309T100000Z
END:VTODO
END:VCALENDAR
`)
	writeTaskFile(t, dir, "today.ics", `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VTODO
UID:today-1
DTSTAMP:20260301T080000Z
SUMMARY:Send the invoice
DESCRIPTION:to Müller GmbH
DUE;TZID=Europe/Rome:20260320T170000
PRIORITY:5
STATUS:IN-PROCESS
PERCENT-COMPLETE:50
END:VTODO
END:VCALENDAR
`)
	// An event beside them is indexed as before.
	writeTaskFile(t, dir, "meet.ics", `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VEVENT
UID:meet
DTSTAMP:20260301T080000Z
DTSTART;TZID=Europe/Rome:20260320T140000
DTEND;TZID=Europe/Rome:20260320T150000
SUMMARY:Meeting
END:VEVENT
END:VCALENDAR
`)
	work := filepath.Join(t.TempDir(), "work")
	writeTaskFile(t, work, "report.ics", `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VTODO
UID:report
DTSTAMP:20260301T080000Z
SUMMARY:Quarterly report
DUE;VALUE=DATE:20260324
PRIORITY:1
END:VTODO
END:VCALENDAR
`)
	sync := func(name, path string) SyncStats {
		t.Helper()
		s, err := st.Sync(ctx, Source{Name: name, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := sync("home", dir)
	if s.Todos != 7 || s.Events != 1 || len(s.Skipped) != 0 {
		t.Fatalf("sync %+v", s)
	}
	// The broken file's components are named, the rest indexed.
	var warned []string
	for _, w := range s.Warnings {
		warned = append(warned, w.File+": "+w.Problem.String())
	}
	if !strings.Contains(strings.Join(warned, "\n"), "broken.ics: skipped VTODO bad-override") {
		t.Fatalf("warnings %v", warned)
	}
	sync("work", work)

	q := func(tq TodoQuery) string {
		t.Helper()
		ts, err := st.Todos(ctx, tq)
		if err != nil {
			t.Fatal(err)
		}
		return taskSummaries(ts)
	}
	// Open tasks by due: overdue first, the recurring one at its missed
	// Monday (the 16th was done, so the 23rd), undated last.
	all := q(TodoQuery{})
	want := "Pay the rent!|Send the invoice|Water the plants|Quarterly report|No UID here|Call the plumber"
	if all != want {
		t.Fatalf("open tasks:\n got %s\nwant %s", all, want)
	}
	if got := q(TodoQuery{DueBefore: time.Date(2026, 3, 21, 0, 0, 0, 0, loc)}); got != "Pay the rent!|Send the invoice" {
		t.Fatalf("due today: %s", got)
	}
	if got := q(TodoQuery{Lists: []string{"work"}}); got != "Quarterly report" {
		t.Fatalf("by list: %s", got)
	}
	if got := q(TodoQuery{Text: "muller"}); got != "Send the invoice" {
		t.Fatalf("text search (diacritics folded): %s", got)
	}
	if got := q(TodoQuery{Text: "money"}); got != "Pay the rent!" {
		t.Fatalf("category search: %s", got)
	}
	if got := q(TodoQuery{IncludeDone: true}); !strings.HasSuffix(got, "|Renew passport✓") {
		t.Fatalf("with done: %s", got)
	}
	ts, _ := st.Todos(ctx, TodoQuery{Text: "plants"})
	if len(ts) != 1 || !ts[0].Recurring || ts[0].Occurrence == nil || ts[0].Occurrence.Format("2006-01-02T15:04") != "2026-03-23T09:00" ||
		ts[0].Due.Format("2006-01-02T15:04") != "2026-03-23T18:00" || ts[0].Overdue {
		t.Fatalf("recurring task %+v", ts)
	}
	if _, err := st.Todos(ctx, TodoQuery{Lists: []string{"nope"}}); !errors.Is(err, ErrBadQuery) {
		t.Fatalf("unknown list: %v", err)
	}
	lists, err := st.TaskLists(ctx)
	if err != nil || strings.Join(lists, ",") != "home,work" {
		t.Fatalf("task lists %v %v", lists, err)
	}
	cals, _ := st.Calendars(ctx)
	if len(cals) != 2 || cals[0].Todos != 6 || cals[0].Events != 1 {
		t.Fatalf("calendars %+v", cals)
	}
	if f, err := st.TodoFileOf(ctx, "home", "plants"); err != nil || f != "recurring.ics" {
		t.Fatalf("TodoFileOf %q %v", f, err)
	}
	// A changed file is re-read; a removed one leaves the index.
	writeTaskFile(t, work, "report.ics", `BEGIN:VCALENDAR
VERSION:2.0
PRODID:x
BEGIN:VTODO
UID:report
DTSTAMP:20260321T080000Z
SEQUENCE:1
SUMMARY:Quarterly report
STATUS:COMPLETED
END:VTODO
END:VCALENDAR
`)
	os.Chtimes(filepath.Join(work, "report.ics"), now, now.Add(time.Minute))
	sync("work", work)
	if got := q(TodoQuery{Lists: []string{"work"}}); got != "" {
		t.Fatalf("after completing: %q", got)
	}
	os.Remove(filepath.Join(dir, "rent.ics"))
	sync("home", dir)
	if got := q(TodoQuery{}); strings.Contains(got, "rent") {
		t.Fatalf("after removal: %s", got)
	}
}

// TestTodoCorpora indexes the libical test calendars that hold VTODOs
// (RFC 2445/2446 examples, a fuzzer's crash file, the large sample) from
// the shared corpus in place: each to-do is indexed or named as skipped or
// repaired, never the whole file, and the events beside them stay.
func TestTodoCorpora(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := corpusPath(t, "libical/test-data")
	st := taskStore(t, time.Date(2026, 3, 20, 10, 0, 0, 0, time.UTC))
	s, err := st.Sync(ctx, Source{Name: "libical", Path: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	// Every file with VTODOs is read (crash.ics and issue253.ics, fuzzer
	// output, only after their mangled lines are dropped); the RFC
	// examples yield their to-dos. large.ics repeats three UIDs 306 times
	// and nests most of them in components it never closes.
	todoFiles := map[string]int{}
	for _, f := range []string{"3.ics", "2445.ics", "2446.ics", "crash.ics", "issue253.ics", "large.ics"} {
		o, err := ParseObjects(bytes.NewReader(mustRead(t, filepath.Join(dir, f))), time.UTC)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		todoFiles[f] = len(o.Todos)
		if len(o.Todos) == 0 && f != "issue253.ics" {
			t.Errorf("%s: no to-do read", f)
		}
	}
	var todoWarnings []string
	for _, w := range s.Warnings {
		if strings.HasPrefix(w.Component, "VTODO") {
			todoWarnings = append(todoWarnings, w.File+": "+w.Problem.String())
		}
	}
	t.Logf("libical: %d files, %d events, %d to-dos, %d files skipped; to-dos per file %v; to-do problems (first %d):\n%s",
		s.Files, s.Events, s.Todos, len(s.Skipped), todoFiles, len(todoWarnings), strings.Join(todoWarnings, "\n"))
	// The fuzzer's file: its unreadable lines are dropped and named by
	// line and component, the rest of the file read.
	o, err := ParseObjects(bytes.NewReader(mustRead(t, filepath.Join(dir, "issue253.ics"))), time.UTC)
	found := false
	for _, p := range o.Problems {
		found = found || (p.Component == "VTODO" && strings.Contains(p.Reason, "line 80") && !p.Skipped)
	}
	if err != nil || !found {
		t.Errorf("issue253.ics: %v %v", o.Problems, err)
	}
	// The simple RFC example is one open task, overdue since 1998.
	ts, err := st.Todos(ctx, TodoQuery{Text: "income taxes", Lists: []string{"libical"}})
	if err != nil || len(ts) == 0 || !ts[0].Overdue || ts[0].Due.Year() != 1998 {
		t.Fatalf("Submit Income Taxes: %+v %v", ts, err)
	}
	// 2446.ics holds one UID in many versions (iTIP messages): the
	// highest SEQUENCE wins.
	o, _ = ParseObjects(bytes.NewReader(mustRead(t, filepath.Join(dir, "2446.ics"))), time.UTC)
	for _, td := range o.Todos {
		if td.UID == "calsrv.example.com-873970198738777-00@example.com" && td.RecurrenceID.IsZero() &&
			(td.Sequence != 1 || td.Status != TodoInProcess || td.Percent != 40) {
			t.Errorf("2446.ics winner %+v", td)
		}
	}
	if s.Todos < 6 {
		t.Errorf("only %d to-dos indexed from the corpus", s.Todos)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParseObjects(f *testing.F) {
	for _, glob := range []string{"testdata/tasks/*.ics", "testdata/*.ics", "testdata/fidelity/*.ics"} {
		seeds, _ := filepath.Glob(glob)
		for _, p := range seeds {
			b, _ := os.ReadFile(p)
			f.Add(b)
		}
	}
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VTODO\r\nUID:x\r\nDUE:20260101\r\nRRULE:FREQ=DAILY;COUNT=3\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"))
	f.Add([]byte("BEGIN:VTODO\r\nDTSTART:20260101T090000\r\nDURATION:P1D\r\nRRULE:FREQ=HOURLY\r\nPRIORITY:x\r\n"))
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VTODO\r\nUID:x\r\nRELATED-TO:x\r\nRELATED-TO;RELTYPE=PARENT:\r\nRELATED-TO;RELTYPE=CHILD:y\r\nRELATED-TO:a\\,b\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"))
	today := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseObjects(bytes.NewReader(data), time.UTC)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for _, td := range o.Todos {
			if td.Parent == td.UID || td.Parent != strings.TrimSpace(td.Parent) {
				t.Fatalf("parent %q of %q", td.Parent, td.UID)
			}
			if td.UID == "" || td.Priority < 0 || td.Priority > 9 || td.Percent < 0 || td.Percent > 100 {
				t.Fatalf("invalid to-do %+v", td)
			}
			switch td.Status {
			case "", TodoNeedsAction, TodoInProcess, TodoCompleted, TodoCancelled:
			default:
				t.Fatalf("status %q", td.Status)
			}
			if td.Recurring() {
				td.NextOccurrence(today, func(time.Time) bool { return false })
			}
		}
	})
}
