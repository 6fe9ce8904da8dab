package graphcal

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
)

var update = flag.Bool("update", false, "rewrite the golden .ics files")

func loadEvent(t testing.TB, name string) *Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "events", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev Event
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// TestObjectGolden pins the whole mapping of each sample event; the
// checks below say which lines matter and why.
func TestObjectGolden(t *testing.T) {
	t.Parallel()
	ents, err := os.ReadDir(filepath.Join("testdata", "events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := strings.TrimSuffix(e.Name(), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, warns, err := Object(loadEvent(t, e.Name()), nil, nil)
			got := string(data)
			if err != nil {
				got = "error: " + err.Error() + "\n"
			}
			for _, w := range warns {
				got += "warning: " + w + "\n"
			}
			path := filepath.Join("testdata", "golden", name+".ics")
			if *update {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs from %s:\n%s", name, path, got)
			}
		})
	}
}

func TestObjectMeeting(t *testing.T) {
	t.Parallel()
	data, warns, err := Object(loadEvent(t, "meeting.json"), nil, nil)
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	s := string(data)
	for _, want := range []string{
		// 13:30 UTC is 14:30 in Berlin in March (before the switch).
		"DTSTART;TZID=Europe/Berlin:20260324T143000",
		"DTEND;TZID=Europe/Berlin:20260324T151500",
		"UID:040000008200E00074C5B7101A82E00800000000D0A2B3C4",
		`SUMMARY:Budget review\; Q2\, "final"`,
		`DESCRIPTION:Agenda:\nnumbers & plans\n\nDial-in below`,
		"LOCATION:Room 4.12",
		"TRANSP:OPAQUE", "X-MICROSOFT-CDO-BUSYSTATUS:TENTATIVE",
		"CLASS:PRIVATE",
		"CATEGORIES:Finance,Red category",
		"ORGANIZER;CN=Ada 'the boss' Lovelace:mailto:ada@example.com",
		"ATTENDEE;CN=Bob;PARTSTAT=ACCEPTED;ROLE=REQ-PARTICIPANT:mailto:bob@example.com",
		"ATTENDEE;CN=Carol;PARTSTAT=TENTATIVE;ROLE=OPT-PARTICIPANT:mailto:carol@example.com",
		"ATTENDEE;CN=Room 4.12;CUTYPE=RESOURCE;PARTSTAT=NEEDS-ACTION;ROLE=NON-PARTICIPANT:mailto:room412@example.com",
		"CONFERENCE;VALUE=URI:https://teams.microsoft.com/l/meetup-join/19%3ameeting",
		"BEGIN:VALARM", "TRIGGER:-PT15M",
		"DTSTAMP:20260301T100000Z",
	} {
		if !strings.Contains(s, want+"\r\n") {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "No address") {
		t.Error("an attendee without an address was written")
	}
	evs, err := calendar.ParseICS(bytes.NewReader(data), time.UTC)
	if err != nil || len(evs) != 1 {
		t.Fatal(evs, err)
	}
	e := evs[0]
	if !e.Start.Equal(time.Date(2026, 3, 24, 13, 30, 0, 0, time.UTC)) || e.Zone != "Europe/Berlin" || len(e.Attendees) != 3 || e.Organizer == nil {
		t.Errorf("index reads %+v", e)
	}
}

func TestObjectAllDayAndZones(t *testing.T) {
	t.Parallel()
	data, warns, err := Object(loadEvent(t, "allday.json"), nil, nil)
	if err != nil || len(warns) != 0 {
		t.Fatal(err, warns)
	}
	for _, want := range []string{"DTSTART;VALUE=DATE:20260406", "DTEND;VALUE=DATE:20260408", "TRANSP:TRANSPARENT"} {
		if !strings.Contains(string(data), want+"\r\n") {
			t.Errorf("missing %q in\n%s", want, data)
		}
	}
	// An unknown (custom) zone: the instant is kept, in UTC, and named.
	data, warns, err = Object(loadEvent(t, "unknown-zone.json"), nil, nil)
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "tzone://Microsoft/Custom") {
		t.Fatal(err, warns)
	}
	if !strings.Contains(string(data), "DTSTART:20260325T160000Z\r\n") || !strings.Contains(string(data), "STATUS:CANCELLED\r\n") {
		t.Errorf("got\n%s", data)
	}
	// A Windows zone Graph writes on start itself, without
	// originalStartTimeZone (an event read without Prefer: UTC).
	ev := &Event{ID: "x", ICalUID: "x", Subject: "x",
		Start: &DateTimeTimeZone{DateTime: "2026-07-01T09:00:00.0000000", TimeZone: "Pacific Standard Time"},
		End:   &DateTimeTimeZone{DateTime: "2026-07-01T10:00:00.0000000", TimeZone: "Pacific Standard Time"}}
	data, _, err = Object(ev, nil, nil)
	if err != nil || !strings.Contains(string(data), "DTSTART;TZID=America/Los_Angeles:20260701T090000\r\n") {
		t.Errorf("%v\n%s", err, data)
	}
}

func TestRRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, rule string }{
		// The end date's last second in Berlin (CEST), in UTC.
		{"series-weekly.json", "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;WKST=MO;UNTIL=20260630T215959Z"},
		{"series-monthly.json", "RRULE:FREQ=MONTHLY;BYDAY=TU;BYSETPOS=2;INTERVAL=2;COUNT=6"},
		{"series-yearly-allday.json", "RRULE:FREQ=YEARLY;BYMONTH=7;BYMONTHDAY=14"},
	} {
		data, _, err := Object(loadEvent(t, c.file), nil, nil)
		if err != nil || !strings.Contains(string(data), c.rule+"\r\n") {
			t.Errorf("%s: %v\n%s", c.file, err, data)
		}
	}
	if _, _, err := Object(loadEvent(t, "bad-pattern.json"), nil, nil); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown pattern: %v", err)
	}
	// The UID Hestia gave (transactionId) wins over iCalUId.
	if data, _, _ := Object(loadEvent(t, "series-weekly.json"), nil, nil); !strings.Contains(string(data), "UID:0123456789abcdef0123456789abcdef@hestia\r\n") {
		t.Errorf("uid:\n%s", data)
	}
}

func TestSeriesWithExceptions(t *testing.T) {
	t.Parallel()
	master := loadEvent(t, "series-weekly.json")
	moved := &Event{ID: "x1", Type: "exception", SeriesMasterID: master.ID, OriginalStart: "2026-03-04T07:30:00Z", Subject: "Standup (moved)",
		Start: &DateTimeTimeZone{DateTime: "2026-03-04T12:00:00.0000000", TimeZone: "UTC"}, End: &DateTimeTimeZone{DateTime: "2026-03-04T12:15:00.0000000", TimeZone: "UTC"}}
	broken := &Event{ID: "x2", Type: "exception", SeriesMasterID: master.ID, OriginalStart: "not a time"}
	cancelled := []time.Time{time.Date(2026, 3, 9, 7, 30, 0, 0, time.UTC)}
	data, warns, err := Object(master, []*Event{moved, broken}, cancelled)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "x2") {
		t.Errorf("warnings %v", warns)
	}
	s := string(data)
	for _, want := range []string{"EXDATE;TZID=Europe/Berlin:20260309T083000", "RECURRENCE-ID;TZID=Europe/Berlin:20260304T083000", "DTSTART;TZID=Europe/Berlin:20260304T130000"} {
		if !strings.Contains(s, want+"\r\n") {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	evs, err := calendar.ParseICS(bytes.NewReader(data), time.UTC)
	if err != nil || len(evs) != 2 {
		t.Fatal(evs, err)
	}
}

// TestWindowsZones checks the generated table: it is what Go's copy of
// CLDR's windowsZones.xml says, and every zone it names exists.
func TestWindowsZones(t *testing.T) {
	t.Parallel()
	if len(windowsZones) < 130 {
		t.Fatalf("only %d zones", len(windowsZones))
	}
	for win, iana := range windowsZones {
		if _, err := time.LoadLocation(iana); err != nil {
			t.Errorf("%s → %s: %v", win, iana, err)
		}
	}
	for win, want := range map[string]string{"W. Europe Standard Time": "Europe/Berlin", "Pacific Standard Time": "America/Los_Angeles",
		"India Standard Time": "Asia/Calcutta", "tzone://Microsoft/Utc": "UTC", "Europe/Rome": "Europe/Rome", "UTC": "UTC"} {
		if loc, ok := Zone(win); !ok || loc.String() != want {
			t.Errorf("Zone(%q) = %v, %v; want %s", win, loc, ok, want)
		}
	}
	for _, bad := range []string{"", "Mars Standard Time", "tzone://Microsoft/Custom", "../../etc/passwd"} {
		if loc, ok := Zone(bad); ok || loc != time.UTC {
			t.Errorf("Zone(%q) = %v, %v", bad, loc, ok)
		}
	}
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skip("no go command to find Go's source tree:", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "time", "zoneinfo_abbrs_windows.go"))
	if err != nil {
		t.Skip("no Go source tree to compare with:", err)
	}
	row := regexp.MustCompile(`(?m)^\s*"([^"]+)":\s*\{[^}]*\},\s*//\s*(\S+)\s*$`)
	n := 0
	for _, m := range row.FindAllStringSubmatch(string(src), -1) {
		n++
		if windowsZones[m[1]] != m[2] {
			t.Errorf("%s: table %q, Go's %q (run go generate)", m[1], windowsZones[m[1]], m[2])
		}
	}
	if n != len(windowsZones) {
		t.Errorf("Go's table has %d zones, ours %d (run go generate)", n, len(windowsZones))
	}
}

// FuzzObject: whatever JSON Graph sends, the converter never panics, and
// what it writes the calendar index reads whole.
func FuzzObject(f *testing.F) {
	ents, _ := os.ReadDir(filepath.Join("testdata", "events"))
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("testdata", "events", e.Name()))
		if err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"id":"a","start":{"dateTime":"2026-01-01T00:00:00","timeZone":"UTC"},"end":{"dateTime":"2025-01-01T00:00:00","timeZone":"UTC"},"subject":"\r\n\u0000x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ev Event
		if json.Unmarshal(b, &ev) != nil {
			return
		}
		data, _, err := Object(&ev, nil, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not marked malformed: %v", err)
			}
			return
		}
		evs, probs, err := calendar.ParseICSLenient(bytes.NewReader(data), time.UTC)
		if err != nil || len(evs) != 1 {
			t.Fatalf("output not readable (%v, %d events, %v):\n%s", err, len(evs), probs, data)
		}
		for _, p := range probs {
			if p.Skipped {
				t.Fatalf("output component skipped: %v\n%s", p, data)
			}
		}
		if evs[0].UID != UID(&ev) && UID(&ev) == clean(UID(&ev), false) {
			t.Fatalf("uid %q, want %q", evs[0].UID, UID(&ev))
		}
	})
}
