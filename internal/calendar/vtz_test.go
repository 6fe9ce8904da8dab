package calendar

import (
	"context"

	"github.com/emersion/go-ical"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Outlook writes zones as "(UTC+01:00) Amsterdam, Berlin, …" with only a
// VTIMEZONE to describe them; their daylight saving rules must hold.
const outlookZone = `
BEGIN:VTIMEZONE
TZID:(UTC+01:00) Amsterdam\, Berlin\, Bern\, Rome\, Stockholm\, Vienna
BEGIN:STANDARD
DTSTART:16010101T030000
TZOFFSETFROM:+0200
TZOFFSETTO:+0100
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=10
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:16010101T020000
TZOFFSETFROM:+0100
TZOFFSETTO:+0200
RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3
END:DAYLIGHT
END:VTIMEZONE`

// A southern-hemisphere zone written by an older exporter: the first
// Sunday expressed as BYDAY plus a seven-day BYMONTHDAY range, an earlier
// rule closed by UNTIL, and a half-hour offset.
const southZone = `
BEGIN:VTIMEZONE
TZID:Custom/Adelaide
BEGIN:STANDARD
DTSTART:19900318T030000
TZOFFSETFROM:+1030
TZOFFSETTO:+0930
RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=3SU;UNTIL=20070318T163000Z
END:STANDARD
BEGIN:STANDARD
DTSTART:20080406T030000
TZOFFSETFROM:+1030
TZOFFSETTO:+0930
TZNAME:ACST
RRULE:FREQ=YEARLY;BYMONTH=4;BYDAY=SU;BYMONTHDAY=1,2,3,4,5,6,7
END:STANDARD
BEGIN:DAYLIGHT
DTSTART:20081005T020000
TZOFFSETFROM:+0930
TZOFFSETTO:+1030
TZNAME:ACDT
RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=1SU
END:DAYLIGHT
END:VTIMEZONE`

func TestCustomVTimezoneKeepsDaylightSaving(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	loc := rome(t)
	s := openTestStore(t, loc)
	dir := filepath.Join(t.TempDir(), "work")
	writeICS(t, dir, "weekly.ics", outlookZone+`
BEGIN:VEVENT
UID:weekly-outlook
DTSTART;TZID="(UTC+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna":20260316T100000
DTEND;TZID="(UTC+01:00) Amsterdam, Berlin, Bern, Rome, Stockholm, Vienna":20260316T110000
RRULE:FREQ=WEEKLY;COUNT=4
SUMMARY:Weekly sync
END:VEVENT`)
	writeICS(t, dir, "south.ics", southZone+`
BEGIN:VEVENT
UID:south
DTSTART;TZID=Custom/Adelaide:20260401T090000
DTEND;TZID=Custom/Adelaide:20260401T093000
RRULE:FREQ=DAILY;COUNT=8
SUMMARY:Adelaide call
END:VEVENT`)
	if st, err := s.Sync(ctx, Source{Name: "work", Path: dir}); err != nil || st.Added != 2 {
		t.Fatalf("sync %+v %v", st, err)
	}
	ag, err := s.Agenda(ctx, Query{From: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	var weekly, south []string
	for _, in := range ag.Instances {
		if len(in.Warnings) > 0 {
			t.Errorf("%s: warnings %v (the zone's rules should be used, not approximated)", in.Summary, in.Warnings)
		}
		u := in.Start.UTC().Format("01-02 15:04")
		switch in.Summary {
		case "Weekly sync":
			weekly = append(weekly, u)
		case "Adelaide call":
			south = append(south, u)
		}
	}
	// 10:00 local each week: UTC+1 before the last Sunday of March, UTC+2 after.
	if got, want := strings.Join(weekly, " "), "03-16 09:00 03-23 09:00 03-30 08:00 04-06 08:00"; got != want {
		t.Errorf("weekly sync at %s UTC, want %s", got, want)
	}
	// 09:00 local daily: UTC+10:30 until the first Sunday of April (the 5th) at 03:00, then UTC+9:30.
	if got, want := strings.Join(south, " "), "03-31 22:30 04-01 22:30 04-02 22:30 04-03 22:30 04-04 23:30 04-05 23:30 04-06 23:30 04-07 23:30"; got != want {
		t.Errorf("Adelaide call at %s UTC, want %s", got, want)
	}
	// The rule agrees with the IANA zone it imitates over a decade of instants.
	custom := LoadZone("posix:"+mustPosix(t, outlookZone), time.UTC)
	for ti := time.Date(2020, 1, 1, 0, 30, 0, 0, time.UTC); ti.Year() < 2031; ti = ti.Add(97 * time.Hour) {
		_, a := ti.In(custom).Zone()
		_, b := ti.In(loc).Zone()
		if a != b {
			t.Fatalf("at %v the custom rule gives %d s, Europe/Rome %d s", ti, a, b)
		}
	}
}

func mustPosix(t *testing.T, vtz string) string {
	t.Helper()
	cal, err := ical.NewDecoder(strings.NewReader("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" +
		strings.ReplaceAll(strings.TrimSpace(vtz), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n")).Decode()
	if err != nil || len(cal.Children) != 1 {
		t.Fatalf("decode: %v", err)
	}
	rule, ok := posixFromVTimezone(cal.Children[0])
	if !ok {
		t.Fatal("no POSIX rule for the zone")
	}
	return rule
}

// Rules the POSIX form cannot carry fall back to the fixed standard offset
// and say so.
func TestUnexpressibleVTimezoneFallsBackToOffset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, rule string }{
		{"every five years", "FREQ=YEARLY;INTERVAL=5;BYMONTH=3;BYDAY=-1SU"},
		{"fifth week", "FREQ=YEARLY;BYMONTH=3;BYDAY=5SU"},
		{"no weekday", "FREQ=YEARLY;BYMONTH=3;BYMONTHDAY=30"},
		{"bad month", "FREQ=YEARLY;BYMONTH=13;BYDAY=-1SU"},
	} {
		vtz := strings.ReplaceAll(outlookZone, "RRULE:FREQ=YEARLY;BYDAY=-1SU;BYMONTH=3", "RRULE:"+tc.rule)
		vtz = strings.ReplaceAll(vtz, `(UTC+01:00) Amsterdam\, Berlin\, Bern\, Rome\, Stockholm\, Vienna`, "Z")
		cal := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + strings.ReplaceAll(strings.TrimSpace(vtz), "\n", "\r\n") +
			"\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Z:20260701T100000\r\nEND:VEVENT" +
			"\r\nBEGIN:VEVENT\r\nUID:y\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Z:20260702T100000\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
		evs, err := ParseICS(strings.NewReader(cal), time.UTC)
		if err != nil || len(evs) != 2 {
			t.Fatalf("%s: parse: %v", tc.name, err)
		}
		// The second event meets the zone in the parser's cache and must
		// be approximated the same way.
		for _, ev := range evs {
			if ev.Zone != "fixed:3600" || len(ev.Warnings) == 0 || ev.Start.UTC().Hour() != 9 {
				t.Errorf("%s: %s: zone %q, warnings %v, start %v", tc.name, ev.UID, ev.Zone, ev.Warnings, ev.Start.UTC())
			}
		}
	}
}
