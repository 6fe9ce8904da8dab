package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCorporaParse parses every .ics of the shared corpora (libical,
// ical.js): none may panic, every failure must be ErrMalformed with a
// reason, and the well-formed samples must yield events.
func TestCorporaParse(t *testing.T) {
	t.Parallel()
	var files []string
	for _, rel := range []string{"libical/test-data", "icaljs"} {
		root := corpusPath(t, rel)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ics") {
				files = append(files, p)
			}
			return nil
		})
	}
	ok, bad, events := 0, 0, 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ParseICS(bytes.NewReader(data), time.UTC)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || err.Error() == ErrMalformed.Error() {
				t.Errorf("%s: unnamed error %v", p, err)
			}
			bad++
			continue
		}
		ok++
		events += len(evs)
		// Every recurring event expands over a year without error.
		for _, e := range evs {
			if e.RRule == "" {
				continue
			}
			s := Series{Start: e.Start, Duration: e.End.Sub(e.Start), AllDay: e.AllDay, Rule: e.RRule, RDates: e.RDates, ExDates: e.ExDates}
			if _, _, err := s.Expand(e.Start, e.Start.AddDate(1, 0, 0), 0); err != nil {
				t.Errorf("%s: %s: %v", p, e.UID, err)
			}
		}
	}
	t.Logf("%d files parsed (%d events), %d rejected with a reason", ok, events, bad)
	if ok < 10 || events < 10 {
		t.Errorf("too few parsed: %d files, %d events", ok, events)
	}
}

// TestCorporaImportFully counts the real-world files of the shared corpora
// that import fully (no component skipped; repairs allowed), the figure
// issue 34 asks for; run with -v to read it. Before lenient parsing a
// file imported fully only when the strict parse accepted it whole.
func TestCorporaImportFully(t *testing.T) {
	t.Parallel()
	var files []string
	for _, rel := range []string{"libical/test-data", "icaljs"} {
		root := corpusPath(t, rel)
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".ics") {
				files = append(files, p)
			}
			return nil
		})
	}
	strict, full, repaired, partial, unreadable := 0, 0, 0, 0, 0
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseICS(bytes.NewReader(data), time.UTC); err == nil {
			strict++
		}
		_, probs, err := ParseICSLenient(bytes.NewReader(data), time.UTC)
		if err != nil {
			unreadable++
			continue
		}
		skipped := false
		for _, pr := range probs {
			skipped = skipped || pr.Skipped
		}
		switch {
		case skipped:
			partial++
		case len(probs) > 0:
			full++
			repaired++
		default:
			full++
		}
	}
	t.Logf("%d files: %d import fully (%d of them repaired), %d with components skipped, %d unreadable; the strict parser accepts %d whole",
		len(files), full, repaired, partial, unreadable, strict)
	if full < strict {
		t.Errorf("lenient parsing imports fewer files fully (%d) than the strict one (%d)", full, strict)
	}
}

// TestICALJSSamples checks specific ical.js samples against known content.
func TestICALJSSamples(t *testing.T) {
	t.Parallel()
	read := func(name string) []Event {
		t.Helper()
		data, err := os.ReadFile(corpusPath(t, "icaljs/samples/"+name))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := ParseICS(bytes.NewReader(data), time.UTC)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return evs
	}
	evs := read("rdate_exdate.ics")
	if len(evs) != 1 || len(evs[0].ExDates) != 1 {
		t.Fatalf("rdate_exdate: %+v", evs)
	}
	// COUNT=4 daily from the 9th, the 11th excluded by a DATE EXDATE.
	e := evs[0]
	occ, _, err := Series{Start: e.Start, Rule: e.RRule, ExDates: e.ExDates}.Expand(e.Start, e.Start.AddDate(0, 1, 0), 0)
	var days []int
	for _, o := range occ {
		days = append(days, o.Start.Day())
	}
	if err != nil || fmt.Sprint(days) != "[9 10 12]" {
		t.Fatalf("rdate_exdate instances %v %v", days, err)
	}
	evs = read("duration_instead_of_dtend.ics")
	if len(evs) == 0 || !evs[0].End.After(evs[0].Start) {
		t.Fatalf("duration sample: %+v", evs)
	}
}

func FuzzParseICS(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.ics")
	// Real-world defects and conventions (issue 34): bad components,
	// moved all-day instances, several RRULEs, X-WR-TIMEZONE, versions.
	more, _ := filepath.Glob("testdata/fidelity/*.ics")
	seeds = append(seeds, more...)
	for _, p := range seeds {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20260101T090000\r\nRRULE:FREQ=DAILY;COUNT=3\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := ParseICS(bytes.NewReader(data), time.UTC)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		for _, e := range evs {
			if e.UID == "" || e.End.Before(e.Start) {
				t.Fatalf("invalid event %+v", e)
			}
			if rule, ok := strings.CutPrefix(e.Zone, posixPrefix); ok {
				if _, err := locationFromPosix(e.Zone, rule); err != nil {
					t.Fatalf("stored zone does not load: %v", err)
				}
			}
			s := Series{Start: e.Start, Duration: e.End.Sub(e.Start), AllDay: e.AllDay, Rule: e.RRule, RDates: e.RDates, ExDates: e.ExDates}
			occ, _, err := s.Expand(e.Start, e.Start.AddDate(0, 1, 0), 50)
			if err == nil && len(occ) > 50 {
				t.Fatalf("cap exceeded: %d", len(occ))
			}
		}
	})
}
