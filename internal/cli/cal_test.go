package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeCal(t *testing.T, dir, name, vevent string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	body := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + strings.ReplaceAll(strings.TrimSpace(vevent), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCalCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	dir := filepath.Join(t.TempDir(), "work")
	writeCal(t, dir, "a.ics", `
BEGIN:VEVENT
UID:a
DTSTART;TZID=Europe/Rome:20260302T093000
DTEND;TZID=Europe/Rome:20260302T100000
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4
SUMMARY:Standup
END:VEVENT`)
	writeCal(t, dir, "b.ics", `
BEGIN:VEVENT
UID:b
DTSTART;TZID=Europe/Rome:20260303T140000
DTEND;TZID=Europe/Rome:20260303T160000
SUMMARY:Design review
ATTENDEE;CN=Anna Bianchi:mailto:anna@polimi.it
END:VEVENT`)
	os.WriteFile(filepath.Join(dir, "bad.ics"), []byte("not a calendar"), 0o644)

	r := run(t, home, env, "cal", "import", dir, "--name", "work")
	if r.code != 0 || !strings.Contains(r.stdout, "work: 3 files, 3 added") || !strings.Contains(r.stdout, "skipped bad.ics") {
		t.Fatalf("import: %+v", r)
	}
	// A bad component is named per file and component; the file's other
	// events are imported.
	other := filepath.Join(t.TempDir(), "other")
	writeCal(t, other, "mixed.ics", `
BEGIN:VEVENT
UID:nostart
SUMMARY:no start
END:VEVENT
BEGIN:VEVENT
UID:kept
DTSTART:20270305T100000Z
SUMMARY:Kept
END:VEVENT`)
	r = run(t, home, env, "cal", "import", other, "--name", "other")
	if r.code != 0 || !strings.Contains(r.stdout, "1 events, 0 skipped, 1 warnings") || !strings.Contains(r.stdout, "warning mixed.ics: skipped VEVENT nostart: VEVENT nostart without DTSTART") {
		t.Fatalf("import with a bad component: %+v", r)
	}
	r = run(t, home, env, "cal", "agenda", "--from", "2026-03-02", "--to", "2026-03-09")
	if r.code != 0 || !strings.Contains(r.stdout, "09:30-10:00  Standup") || !strings.Contains(r.stdout, "14:00-16:00  Design review") {
		t.Fatalf("agenda: %+v", r)
	}
	r = run(t, home, env, "cal", "agenda", "--from", "2026-03-01", "--to", "2026-04-01", "--json")
	var ag struct {
		Instances []struct {
			Summary string
			Start   string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &ag); err != nil || len(ag.Instances) != 5 {
		t.Fatalf("agenda json: %v %s", err, r.stdout)
	}
	r = run(t, home, env, "cal", "search", "anna", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "Design review") || strings.Contains(r.stdout, "Standup") {
		t.Fatalf("search: %+v", r)
	}
	r = run(t, home, env, "cal", "free", "--from", "2026-03-03", "--to", "2026-03-04", "--min", "1h")
	if r.code != 0 || r.stdout != "Tue 2026-03-03 09:00-14:00 (5h)\nTue 2026-03-03 16:00-18:00 (2h)\n" {
		t.Fatalf("free: %+v", r)
	}
	os.Remove(filepath.Join(dir, "b.ics"))
	r = run(t, home, env, "cal", "sync")
	if r.code != 0 || !strings.Contains(r.stdout, "1 removed") {
		t.Fatalf("sync: %+v", r)
	}
	r = run(t, home, env, "cal", "calendars")
	if r.code != 0 || !strings.Contains(r.stdout, "work: 1 events, 1 files skipped") {
		t.Fatalf("calendars: %+v", r)
	}
	for _, bad := range [][]string{{"cal"}, {"cal", "frob"}, {"cal", "agenda", "--from", "soon"}, {"cal", "free"},
		{"cal", "agenda", "--from", "2026-03-02", "--to", "2026-03-01"}, {"cal", "search"}, {"cal", "agenda", "--calendar", "nope"}} {
		if r := run(t, home, env, bad...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}

// TestCalImportHidesOlderVersions: two files of one folder holding versions
// of one event import as one event, the older version named and counted;
// removing the newer file brings the older back at the next sync.
func TestCalImportHidesOlderVersions(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "UTC"}
	dir := filepath.Join(t.TempDir(), "invites")
	for _, f := range []struct{ name, seq, start, summary string }{
		{"invite.ics", "0", "20260310T100000Z", "Kickoff (first date)"},
		{"invite (1).ics", "1", "20260312T140000Z", "Kickoff (moved)"},
	} {
		writeCal(t, dir, f.name, `
BEGIN:VEVENT
UID:kickoff@example.org
SEQUENCE:`+f.seq+`
DTSTART:`+f.start+`
DURATION:PT1H
SUMMARY:`+f.summary+`
END:VEVENT`)
	}
	r := run(t, home, env, "cal", "import", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "1 warnings") ||
		!strings.Contains(r.stdout, "warning invite.ics: repaired VEVENT kickoff@example.org: older version (SEQUENCE 0) hidden for the newer one in invite (1).ics") ||
		!strings.Contains(r.stdout, "1 older versions hidden") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, env, "cal", "agenda", "--from", "2026-03-09", "--to", "2026-03-16")
	if r.code != 0 || !strings.Contains(r.stdout, "Kickoff (moved)") || strings.Contains(r.stdout, "first date") {
		t.Fatalf("agenda: %+v", r)
	}
	r = run(t, home, env, "cal", "search", "kickoff")
	if r.code != 0 || !strings.Contains(r.stdout, "Kickoff (moved)") || strings.Contains(r.stdout, "first date") {
		t.Fatalf("search: %+v", r)
	}
	os.Remove(filepath.Join(dir, "invite (1).ics"))
	r = run(t, home, env, "cal", "sync")
	if r.code != 0 || strings.Contains(r.stdout, "hidden") {
		t.Fatalf("sync: %+v", r)
	}
	r = run(t, home, env, "cal", "agenda", "--from", "2026-03-09", "--to", "2026-03-16")
	if r.code != 0 || !strings.Contains(r.stdout, "Kickoff (first date)") || strings.Contains(r.stdout, "moved") {
		t.Fatalf("agenda after removal: %+v", r)
	}
}
