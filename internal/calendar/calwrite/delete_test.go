package calwrite

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/tools"
)

// recorder is a Backend that notes each write with the ETag it was made
// against (a CalDAV server sees If-Match), and can fail a write after
// making it, as a connection lost before the answer does.
type recorder struct {
	Backend
	mu     sync.Mutex
	writes []string
	lost   map[string]bool // hrefs whose next write is made, then reported lost
}

func (r *recorder) note(op, href, etag string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes = append(r.writes, op+" "+href+" "+etag)
	lost := r.lost[href]
	delete(r.lost, href)
	return lost
}

var errLost = errors.New("connection reset before the answer")

func (r *recorder) Update(ctx context.Context, href string, data []byte, etag string) (string, error) {
	lost := r.note("PUT", href, etag)
	tag, err := r.Backend.Update(ctx, href, data, etag)
	if err == nil && lost {
		return "", errLost
	}
	return tag, err
}

func (r *recorder) Delete(ctx context.Context, href, etag string) error {
	lost := r.note("DELETE", href, etag)
	err := r.Backend.Delete(ctx, href, etag)
	if err == nil && lost {
		return errLost
	}
	return err
}

func (r *recorder) taken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.writes
	r.writes = nil
	return w
}

// setupRecorded is setup with the work calendar's writes recorded, and
// files added to it (name → VEVENTs) and synced.
func setupRecorded(t *testing.T, files map[string]string) (*env, *recorder) {
	t.Helper()
	rec := &recorder{lost: map[string]bool{}}
	e := setupWith(t, func(b Backend) Backend {
		if v, ok := b.(Vdir); ok && filepath.Base(v.Dir) == "work" {
			rec.Backend = b
			return rec
		}
		return b
	})
	for name, body := range files {
		e.write(t, name, body)
	}
	if _, err := e.idx.Sync(context.Background(), e.srcs[0]); err != nil {
		t.Fatal(err)
	}
	return e, rec
}

// write puts a calendar object holding body (VEVENTs) in the work folder.
func (e *env) write(t *testing.T, name, body string) {
	t.Helper()
	data := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\r\n") + "\r\nEND:VCALENDAR\r\n"
	if err := os.WriteFile(filepath.Join(e.dir, name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) etag(t *testing.T, name string) string {
	t.Helper()
	obj, err := Vdir{Dir: e.dir}.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return obj.ETag
}

func (e *env) exists(name string) bool {
	_, err := os.Stat(filepath.Join(e.dir, name))
	return err == nil
}

func (e *env) preview(t *testing.T, tool, args string) string {
	t.Helper()
	return e.tool[tool].(tools.Previewer).Preview(context.Background(), json.RawMessage(args))
}

// Two versions of one meeting, each in its own file of the collection: the
// index shows the newer and hides the older.
const planningOld = `BEGIN:VEVENT
UID:planning
SEQUENCE:0
DTSTAMP:20260301T080000Z
DTSTART;TZID=Europe/Rome:20260324T100000
DTEND;TZID=Europe/Rome:20260324T110000
SUMMARY:Planning (first time)
END:VEVENT`

const planningNew = `BEGIN:VEVENT
UID:planning
SEQUENCE:1
DTSTAMP:20260302T080000Z
DTSTART;TZID=Europe/Rome:20260325T150000
DTEND;TZID=Europe/Rome:20260325T160000
SUMMARY:Planning (second time)
END:VEVENT`

// TestDeleteRemovesEveryVersion: deleting an event held in several files
// of a collection removes every file, each against the ETag it was read
// with, the hidden copies before the shown one, so the older version does
// not come back; the card says how many copies go.
func TestDeleteRemovesEveryVersion(t *testing.T) {
	t.Parallel()
	e, rec := setupRecorded(t, map[string]string{"planning-old.ics": planningOld, "planning-new.ics": planningNew})
	if got := strings.Join(e.agenda(t, "2026-03-24", "2026-03-28"), "|"); got != "03-25 15:00 Planning (second time)" {
		t.Fatalf("agenda before: %s", got)
	}
	args := `{"uid":"planning"}`
	prev := e.preview(t, "calendar_delete", args)
	if !strings.Contains(prev, `"Planning (second time)" (planning) in work (all occurrences)`) ||
		!strings.Contains(prev, `removes all 2 copies of it in calendar "work": planning-new.ics, planning-old.ics`) {
		t.Fatalf("card %q", prev)
	}
	tags := []string{e.etag(t, "planning-old.ics"), e.etag(t, "planning-new.ics")}
	res, op := e.call(t, "calendar_delete", "del-1", args)
	if res.IsError || op.State != StateDone || op.Href != "planning-new.ics" || !slices.Equal(op.Copies, []string{"planning-old.ics"}) {
		t.Fatalf("delete: %+v", res)
	}
	if w := rec.taken(); !slices.Equal(w, []string{"DELETE planning-old.ics " + tags[0], "DELETE planning-new.ics " + tags[1]}) {
		t.Errorf("writes %q", w)
	}
	for _, f := range []string{"planning-old.ics", "planning-new.ics"} {
		if e.exists(f) {
			t.Errorf("%s is still there", f)
		}
	}
	if got := e.agenda(t, "2026-03-24", "2026-03-28"); len(got) != 0 {
		t.Errorf("agenda after delete: %q", got)
	}
	// The journal keeps the copies.
	ops, err := e.w.List(context.Background(), StateDone, 10)
	if err != nil || len(ops) != 1 || !slices.Equal(ops[0].Copies, []string{"planning-old.ics"}) {
		t.Errorf("journal %+v %v", ops, err)
	}
	// An event in one file keeps the card it had.
	if prev := e.preview(t, "calendar_delete", `{"uid":"standup"}`); prev != `delete "Standup" (standup) in work (all occurrences)` {
		t.Errorf("single-file card %q", prev)
	}
}

// TestDeleteOccurrenceReachesOtherFiles: deleting one occurrence excludes
// it from the series and removes its overrides from the other files of
// the collection (a file left with nothing goes, another is rewritten
// without it), so no moved copy of it stays on the calendar.
func TestDeleteOccurrenceReachesOtherFiles(t *testing.T) {
	t.Parallel()
	e, rec := setupRecorded(t, map[string]string{
		"standup-moved.ics": `BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Rome:20260323T093000
SEQUENCE:2
DTSTAMP:20260310T080000Z
DTSTART;TZID=Europe/Rome:20260324T110000
DTEND;TZID=Europe/Rome:20260324T113000
SUMMARY:Standup (moved)
END:VEVENT`,
		"standup-notes.ics": `BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Rome:20260323T093000
SEQUENCE:1
DTSTAMP:20260305T080000Z
DTSTART;TZID=Europe/Rome:20260323T120000
DTEND;TZID=Europe/Rome:20260323T123000
SUMMARY:Standup (older move)
END:VEVENT
BEGIN:VEVENT
UID:standup
RECURRENCE-ID;TZID=Europe/Rome:20260330T093000
SEQUENCE:1
DTSTAMP:20260305T080000Z
DTSTART;TZID=Europe/Rome:20260330T100000
DTEND;TZID=Europe/Rome:20260330T103000
SUMMARY:Standup (late)
END:VEVENT`,
	})
	if got := strings.Join(e.agenda(t, "2026-03-16", "2026-04-07"), "|"); got != "03-16 09:30 Standup|03-24 11:00 Standup (moved)|03-30 10:00 Standup (late)|04-06 09:30 Standup" {
		t.Fatalf("agenda before: %s", got)
	}
	args := `{"uid":"standup","instance":"2026-03-23T09:30"}`
	prev := e.preview(t, "calendar_delete", args)
	if !strings.Contains(prev, "delete the occurrence 2026-03-23T09:30 of") ||
		!strings.Contains(prev, `its 2 other copies in calendar "work" are removed too: standup-moved.ics, standup-notes.ics`) {
		t.Fatalf("card %q", prev)
	}
	// Another occurrence has no other copy to name.
	if prev := e.preview(t, "calendar_delete", `{"uid":"standup","instance":"2026-04-06T09:30"}`); strings.Contains(prev, "cop") {
		t.Errorf("card for a plain occurrence %q", prev)
	}
	tags := []string{e.etag(t, "standup.ics"), e.etag(t, "standup-moved.ics"), e.etag(t, "standup-notes.ics")}
	res, op := e.call(t, "calendar_delete", "occ-1", args)
	if res.IsError || op.State != StateDone || op.Href != "standup.ics" || !slices.Equal(op.Copies, []string{"standup-moved.ics", "standup-notes.ics"}) {
		t.Fatalf("delete: %+v", res)
	}
	if w := rec.taken(); !slices.Equal(w, []string{"PUT standup-notes.ics " + tags[2], "PUT standup.ics " + tags[0], "DELETE standup-moved.ics " + tags[1]}) {
		t.Errorf("writes %q", w)
	}
	if e.exists("standup-moved.ics") {
		t.Error("standup-moved.ics, holding only the occurrence, is still there")
	}
	notes, _ := os.ReadFile(filepath.Join(e.dir, "standup-notes.ics"))
	if strings.Contains(string(notes), "20260323T093000") || !strings.Contains(string(notes), "RECURRENCE-ID;TZID=Europe/Rome:20260330T093000") {
		t.Errorf("standup-notes.ics:\n%s", notes)
	}
	series, _ := os.ReadFile(filepath.Join(e.dir, "standup.ics"))
	if !strings.Contains(string(series), "EXDATE;TZID=Europe/Rome:20260323T093000") {
		t.Errorf("standup.ics:\n%s", series)
	}
	if got := strings.Join(e.agenda(t, "2026-03-16", "2026-04-07"), "|"); got != "03-16 09:30 Standup|03-30 10:00 Standup (late)|04-06 09:30 Standup" {
		t.Errorf("agenda after delete: %s", got)
	}
	// The whole series then goes with the file holding only an override
	// of it.
	res, op = e.call(t, "calendar_delete", "all-1", `{"uid":"standup"}`)
	if res.IsError || op.State != StateDone || !slices.Equal(op.Copies, []string{"standup-notes.ics"}) {
		t.Fatalf("delete series: %+v", res)
	}
	if e.exists("standup.ics") || e.exists("standup-notes.ics") {
		t.Error("a file of the series is still there")
	}
	if got := e.agenda(t, "2026-03-01", "2026-05-01"); len(got) != 0 {
		t.Errorf("agenda after deleting the series: %q", got)
	}
}

// TestIsOverride: an override is matched by UID and the instance its
// RECURRENCE-ID names, in whatever form that is written.
func TestIsOverride(t *testing.T) {
	t.Parallel()
	rome, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	inst := time.Date(2026, 3, 23, 9, 30, 0, 0, rome)
	day := time.Date(2026, 3, 23, 0, 0, 0, 0, rome)
	for _, c := range []struct {
		comp string
		inst time.Time
		want bool
	}{
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID;TZID=Europe/Rome:20260323T093000\r\nEND:VEVENT", inst, true},
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID:20260323T083000Z\r\nEND:VEVENT", inst, true},
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID;VALUE=DATE:20260323\r\nEND:VEVENT", day, true},
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID;VALUE=DATE:20260324\r\nEND:VEVENT", day, false},
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID;TZID=Europe/Rome:20260330T093000\r\nEND:VEVENT", inst, false},
		{"BEGIN:VEVENT\r\nUID:other\r\nRECURRENCE-ID;TZID=Europe/Rome:20260323T093000\r\nEND:VEVENT", inst, false},
		{"BEGIN:VEVENT\r\nUID:s\r\nDTSTART;TZID=Europe/Rome:20260323T093000\r\nEND:VEVENT", inst, false},
		{"BEGIN:VTODO\r\nUID:s\r\nRECURRENCE-ID;TZID=Europe/Rome:20260323T093000\r\nEND:VTODO", inst, false},
		{"BEGIN:VEVENT\r\nUID:s\r\nRECURRENCE-ID:garbage\r\nEND:VEVENT", inst, false},
	} {
		cal, err := decode([]byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\n" + c.comp + "\r\nEND:VCALENDAR\r\n"))
		if err != nil {
			t.Fatalf("%s: %v", c.comp, err)
		}
		if got := overrideIn(cal, "s", c.inst, rome); got != c.want {
			t.Errorf("%s: %v, want %v", c.comp, got, c.want)
		}
	}
}

// TestDeleteRefusesFilesHoldingOtherEvents: a version of the event in a
// file that also holds another event is not deleted with it; nothing is
// written.
func TestDeleteRefusesFilesHoldingOtherEvents(t *testing.T) {
	t.Parallel()
	e, rec := setupRecorded(t, map[string]string{"planning-new.ics": planningNew, "planning-old.ics": planningOld + `
BEGIN:VEVENT
UID:review
DTSTAMP:20260301T080000Z
DTSTART;TZID=Europe/Rome:20260326T100000
DTEND;TZID=Europe/Rome:20260326T110000
SUMMARY:Review
END:VEVENT`})
	before := snapshot(t, e.dir)
	res, _ := e.call(t, "calendar_delete", "del-1", `{"uid":"planning"}`)
	if !res.IsError || !strings.Contains(res.Content, "planning-old.ics") || !strings.Contains(res.Content, "holds other events too") {
		t.Fatalf("delete: %+v", res)
	}
	if w := rec.taken(); len(w) != 0 {
		t.Errorf("writes %q", w)
	}
	if snapshot(t, e.dir) != before {
		t.Error("files changed by a refused delete")
	}
	if ops, _ := e.w.List(context.Background(), "", 10); len(ops) != 0 {
		t.Errorf("journal %+v", ops)
	}
}

// TestDeleteLostAnswerIsConfirmedAcrossCopies: when the answer to the last
// delete is lost the op is left unknown, and ConfirmPending calls it done
// only once every copy is gone.
func TestDeleteLostAnswerIsConfirmedAcrossCopies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, rec := setupRecorded(t, map[string]string{"planning-old.ics": planningOld, "planning-new.ics": planningNew})
	rec.lost["planning-new.ics"] = true
	res, op := e.call(t, "calendar_delete", "del-1", `{"uid":"planning"}`)
	if !res.IsError || !strings.Contains(res.Content, "state unknown") || !strings.Contains(res.Content, "1 of the 2 copies") {
		t.Fatalf("delete: %+v", res)
	}
	ops, err := e.w.List(ctx, StateUnknown, 10)
	if err != nil || len(ops) != 1 || !slices.Equal(ops[0].Copies, []string{"planning-old.ics"}) {
		t.Fatalf("journal %+v %v", ops, err)
	}
	op = ops[0]
	// Someone puts the older copy back before the check: not done.
	e.write(t, "planning-old.ics", planningOld)
	*e.clock = e.clock.Add(2 * time.Minute)
	if _, err := e.w.ConfirmPending(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if ops, _ := e.w.List(ctx, StateUnknown, 10); len(ops) != 1 || ops[0].ID != op.ID {
		t.Fatalf("confirmed with a copy left: %+v", ops)
	}
	if err := os.Remove(filepath.Join(e.dir, "planning-old.ics")); err != nil {
		t.Fatal(err)
	}
	if n, err := e.w.ConfirmPending(ctx, 5); err != nil || n != 1 {
		t.Fatalf("confirm %d %v", n, err)
	}
	if ops, _ := e.w.List(ctx, StateDone, 10); len(ops) != 1 || ops[0].ID != op.ID {
		t.Fatalf("not done: %+v", ops)
	}
}

// TestCopiesOfListsHiddenVersions: the index lists every version of an
// event with its file, the shown master's first.
func TestCopiesOfListsHiddenVersions(t *testing.T) {
	t.Parallel()
	e, _ := setupRecorded(t, map[string]string{"planning-old.ics": planningOld, "planning-new.ics": planningNew})
	cs, err := e.idx.CopiesOf(context.Background(), "work", "planning")
	if err != nil {
		t.Fatal(err)
	}
	want := []calendar.EventCopy{{File: "planning-new.ics"}, {File: "planning-old.ics", Superseded: true}}
	if !slices.Equal(cs, want) {
		t.Fatalf("copies %+v", cs)
	}
	if cs, err := e.idx.CopiesOf(context.Background(), "shared", "planning"); err != nil || len(cs) != 0 {
		t.Fatalf("other calendar: %+v %v", cs, err)
	}
}
