package calendar

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Real-world file shapes (issue 34 items 7–12): each fixture in
// testdata/fidelity is one defect or convention seen in exports.

func parseFixture(t *testing.T, name string, floating *time.Location) ([]Event, []Problem) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "fidelity", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	evs, probs, err := ParseICSLenient(f, floating)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs, probs
}

func byUID(evs []Event) map[string]Event {
	m := map[string]Event{}
	for _, e := range evs {
		m[e.UID] = e
	}
	return m
}

func TestLenientKeepsGoodComponents(t *testing.T) {
	t.Parallel()
	evs, probs := parseFixture(t, "bad-components.ics", time.UTC)
	var summaries []string
	for _, e := range evs {
		summaries = append(summaries, e.Summary)
	}
	want := []string{"Good before", "No UID", "Empty rule", "Negative count", "Good after"}
	if !slices.Equal(summaries, want) {
		t.Fatalf("events %q, want %q", summaries, want)
	}
	m := byUID(evs)
	if e := m["empty-rrule"]; e.RRule != "" {
		t.Errorf("empty RRULE kept as %q", e.RRule)
	}
	if e := m["negative-count"]; e.RRule != "" || len(e.Warnings) == 0 {
		t.Errorf("COUNT=-1: rule %q warnings %q, want DTSTART only with a warning", e.RRule, e.Warnings)
	}
	// One problem per defect, each naming its component.
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	all := strings.Join(got, "\n")
	for _, w := range []string{
		"repaired VCALENDAR: END:VTODOO read as END:VTODO",
		"repaired VEVENT hestia-nouid-",
		"repaired VEVENT empty-rrule: empty RRULE",
		"repaired VEVENT negative-count: RRULE \"FREQ=DAILY;COUNT=-1\" ignored",
		"skipped VEVENT no-start: VEVENT no-start without DTSTART",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("problems lack %q:\n%s", w, all)
		}
	}
	if len(probs) != 5 {
		t.Errorf("%d problems, want 5:\n%s", len(probs), all)
	}
	// The derived UID is stable across parses.
	again, _ := parseFixture(t, "bad-components.ics", time.UTC)
	if again[1].UID != evs[1].UID || !strings.HasPrefix(evs[1].UID, "hestia-nouid-") {
		t.Errorf("derived UID %q then %q", evs[1].UID, again[1].UID)
	}
	// The strict parser still refuses the file, naming the skipped one.
	f, _ := os.Open(filepath.Join("testdata", "fidelity", "bad-components.ics"))
	defer f.Close()
	if _, err := ParseICS(f, time.UTC); err == nil || !strings.Contains(err.Error(), "no-start") {
		t.Errorf("strict parse: %v", err)
	}
}

func TestLenientStructureRepairs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"unclosed event", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260101T100000Z\r\n", "VEVENT not closed"},
		{"stray END", "BEGIN:VCALENDAR\r\nEND:VALARM\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260101T100000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "END:VALARM without BEGIN dropped"},
		{"bare VEVENT", "BEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260101T100000Z\r\nEND:VEVENT\r\n", "VEVENT outside VCALENDAR wrapped"},
		{"DATE with Z", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART;VALUE=DATE:20131210\r\nRDATE;VALUE=DATE:20141210Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", ""},
		{"outer END closes inner", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:a\r\nDTSTART:20260101T100000Z\r\nBEGIN:VALARM\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n", "VALARM closed before END:VEVENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			evs, probs, err := ParseICSLenient(strings.NewReader(tc.body), time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(probs) != 0 || len(evs) != 1 {
					t.Errorf("events %+v problems %v, want the event as it is", evs, probs)
				}
				return
			}
			if len(probs) == 0 || !strings.Contains(probs[0].Reason, tc.want) || len(evs) != 1 {
				t.Errorf("events %+v problems %v, want %q", evs, probs, tc.want)
			}
		})
	}
	// Not iCalendar at all is still an error naming why.
	if _, _, err := ParseICSLenient(strings.NewReader("hello\r\n"), time.UTC); err == nil {
		t.Error("text accepted as iCalendar")
	}
}

func TestTextKeepsUnescapedCommas(t *testing.T) {
	t.Parallel()
	evs, _ := parseFixture(t, "commas.ics", time.UTC)
	e := evs[0]
	if e.Location != "Via Roma 12, Milano" {
		t.Errorf("LOCATION %q", e.Location)
	}
	if e.Summary != "Lunch, then coffee, then work" {
		t.Errorf("SUMMARY %q", e.Summary)
	}
	if e.Description != "Bring: pens, paper\nand the report" {
		t.Errorf("DESCRIPTION %q", e.Description)
	}
	if !slices.Equal(e.Categories, []string{"Work", "Food"}) {
		t.Errorf("CATEGORIES %q (a list: commas split)", e.Categories)
	}
}

func TestXWRTimezoneAnchorsFloatingTimes(t *testing.T) {
	t.Parallel()
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}
	evs, _ := parseFixture(t, "google-wr-timezone.ics", rome(t))
	m := byUID(evs)
	call := m["floating-in-ny"]
	if want := time.Date(2026, 3, 10, 9, 0, 0, 0, ny); !call.Start.Equal(want) || call.Zone != "America/New_York" {
		t.Errorf("floating time %v zone %q, want %v in America/New_York", call.Start, call.Zone, want)
	}
	// Dates stay all-day in the user's floating zone.
	if h := m["allday-in-ny"]; !h.AllDay || h.Zone != "floating" {
		t.Errorf("all-day %+v", h)
	}
}

func TestHighestSequenceWins(t *testing.T) {
	t.Parallel()
	evs, probs := parseFixture(t, "versions.ics", time.UTC)
	if len(evs) != 1 || evs[0].Summary != "Second version, restamped" {
		t.Fatalf("versions kept: %+v", evs)
	}
	if len(probs) != 2 || probs[0].Skipped || !strings.Contains(probs[0].Reason, "older version") {
		t.Errorf("problems %v, want the two superseded versions named", probs)
	}
}

// syncFixture indexes one fixture file as a collection.
func syncFixture(t *testing.T, s *Store, name string) SyncStats {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "fidelity", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := s.Sync(context.Background(), Source{Name: strings.TrimSuffix(name, ".ics"), Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func agendaLines(t *testing.T, s *Store, loc *time.Location, path queryPath) []string {
	t.Helper()
	ag, err := s.Agenda(context.Background(), Query{From: time.Date(2026, 3, 1, 0, 0, 0, 0, loc), To: time.Date(2026, 4, 1, 0, 0, 0, 0, loc), path: path})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range ag.Instances {
		out = append(out, in.Start.In(loc).Format("01-02 15:04")+" "+in.Summary)
	}
	return out
}

func TestMovedInstanceReplacesOriginalAcrossValueTypes(t *testing.T) {
	t.Parallel()
	loc := rome(t)
	s := openTestStore(t, loc)
	syncFixture(t, s, "outlook-moved.ics")
	want := []string{
		"03-02 00:00 Gym day", "03-02 10:00 Review",
		"03-09 15:00 Review (moved)", "03-10 00:00 Gym day (moved)",
		"03-16 00:00 Gym day", "03-16 10:00 Review",
		"03-23 00:00 Gym day",
	}
	for _, p := range []queryPath{pathSQL, pathLazy} {
		if got := agendaLines(t, s, loc, p); !slices.Equal(got, want) {
			t.Errorf("path %d agenda:\n%s\nwant:\n%s", p, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestSeveralRRulesGiveTheUnion(t *testing.T) {
	t.Parallel()
	loc := rome(t)
	s := openTestStore(t, loc)
	syncFixture(t, s, "two-rrules.ics")
	want := []string{"03-02 09:00 Training", "03-04 09:00 Training", "03-09 09:00 Training", "03-11 09:00 Training", "03-16 09:00 Training"}
	for _, p := range []queryPath{pathSQL, pathLazy} {
		if got := agendaLines(t, s, loc, p); !slices.Equal(got, want) {
			t.Errorf("path %d agenda:\n%s\nwant:\n%s", p, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestSyncReportsComponentWarnings(t *testing.T) {
	t.Parallel()
	s := openTestStore(t, time.UTC)
	st := syncFixture(t, s, "bad-components.ics")
	if len(st.Skipped) != 0 || st.Events != 5 || len(st.Warnings) != 5 {
		t.Fatalf("stats %+v", st)
	}
	for _, w := range st.Warnings {
		if w.File != "bad-components.ics" || w.Calendar != "bad-components" || w.Component == "" || w.Reason == "" {
			t.Errorf("warning %+v", w)
		}
	}
	ws, total, err := s.Warnings(context.Background(), 2)
	if err != nil || total != 5 || len(ws) != 2 || ws[0].File != "bad-components.ics" {
		t.Fatalf("stored warnings %+v total %d: %v", ws, total, err)
	}
}
