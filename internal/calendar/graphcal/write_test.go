package graphcal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/msgraph/graphtest"
)

// hook wraps the collection so a test can act on the server between
// calwrite reading an event and writing it (a concurrent edit).
type hook struct {
	*Collection
	beforeUpdate func()
}

func (h hook) Update(ctx context.Context, href string, data []byte, etag string) (string, error) {
	if h.beforeUpdate != nil {
		h.beforeUpdate()
	}
	return h.Collection.Update(ctx, href, data, etag)
}

func writer(t *testing.T, e *env, be calwrite.Backend) *calwrite.Writer {
	t.Helper()
	if be == nil {
		be = e.col
	}
	targets := func(ctx context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{e.src.Name: {Name: e.src.Name, Backend: be, Resync: func(ctx context.Context) error {
			if _, err := e.col.Sync(ctx); err != nil {
				return err
			}
			_, err := e.idx.Sync(ctx, e.src)
			return err
		}}}, nil
	}
	w, err := calwrite.Open(context.Background(), calwrite.Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: e.idx, Targets: targets,
		Loc: rome, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func TestWritesJournaledAndConfirmed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.sync(t)
	w := writer(t, e, nil)

	// Create: POST with the UID as transactionId, confirmed by reading
	// the event back, and the mirror names it as calwrite does.
	op, err := w.Create(ctx, "call-1", calwrite.CreateArgs{Calendar: e.src.Name, Summary: "Lunch with Anna", Start: "2026-03-24T12:30", Minutes: 60,
		Location: "Trattoria", Description: "Bring the contract", Attendees: []string{"anna@example.com"}})
	if err != nil || op.State != calwrite.StateDone || op.ETag == "" {
		t.Fatalf("create: %+v %v", op, err)
	}
	ids := e.fake.Events(e.calID)
	if len(ids) != 1 {
		t.Fatalf("server holds %v", ids)
	}
	ev, _ := e.fake.Event(ids[0])
	if ev.TransactionID != op.UID || ev.Subject != "Lunch with Anna" || ev.Location.DisplayName != "Trattoria" || len(ev.Attendees) != 1 ||
		windowsZones[ev.Start.TimeZone] == "" || !strings.HasPrefix(ev.Start.DateTime, "2026-03-24T12:30:00") {
		t.Fatalf("server event %+v", ev)
	}
	// The same call again returns the journaled op, nothing is sent.
	if again, err := w.Create(ctx, "call-1", calwrite.CreateArgs{Calendar: e.src.Name, Summary: "Lunch with Anna", Start: "2026-03-24T12:30", Minutes: 60}); err != nil || again.ID != op.ID || len(e.fake.Events(e.calID)) != 1 {
		t.Fatalf("repeat: %+v %v", again, err)
	}
	// Resync made it a file of the index, under the journal's name.
	day := time.Date(2026, 3, 24, 0, 0, 0, 0, rome)
	ins := e.agenda(t, day, day.AddDate(0, 0, 1))
	if len(ins) != 1 || ins[0].UID != op.UID || !ins[0].Start.Equal(time.Date(2026, 3, 24, 12, 30, 0, 0, rome)) {
		t.Fatalf("agenda %+v", ins)
	}
	if name, err := e.idx.FileOf(ctx, e.src.Name, op.UID); err != nil || name != op.Href {
		t.Fatalf("file %q %v, want %s", name, err, op.Href)
	}

	// Update: a PATCH of what changed, with If-Match.
	newTitle := "Lunch with Anna and Bo"
	up, err := w.Update(ctx, "call-2", calwrite.UpdateArgs{UID: op.UID, Summary: &newTitle, Start: "2026-03-24T13:00"})
	if err != nil || up.State != calwrite.StateDone {
		t.Fatalf("update: %+v %v", up, err)
	}
	ev, _ = e.fake.Event(ids[0])
	if ev.Subject != newTitle || !strings.HasPrefix(ev.Start.DateTime, "2026-03-24T13:00:00") || !strings.HasPrefix(ev.End.DateTime, "2026-03-24T14:00:00") {
		t.Fatalf("after update %+v", ev)
	}

	// Delete: DELETE with If-Match, confirmed by the 404 that follows.
	del, err := w.Delete(ctx, "call-3", calwrite.DeleteArgs{UID: op.UID})
	if err != nil || del.State != calwrite.StateDone || len(e.fake.Events(e.calID)) != 0 {
		t.Fatalf("delete: %+v %v %v", del, err, e.fake.Events(e.calID))
	}
	if ins := e.agenda(t, day, day.AddDate(0, 0, 1)); len(ins) != 0 {
		t.Fatalf("agenda after delete %+v", ins)
	}
}

func TestOccurrenceWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	const zone = "W. Europe Standard Time"
	first := time.Date(2026, 3, 16, 9, 30, 0, 0, berlin)
	master := e.fake.AddEvent(e.calID, graphtest.Event{Subject: "Standup", Start: graphtest.At(first, zone), End: graphtest.At(first.Add(15*time.Minute), zone),
		OriginalStartTimeZone: zone,
		Recurrence: &graphtest.Recurrence{Pattern: graphtest.Pattern{Type: "weekly", Interval: 1, DaysOfWeek: []string{"monday"}},
			Range: graphtest.Range{Type: "noEnd", StartDate: "2026-03-16", RecurrenceTimeZone: zone}}})
	e.sync(t)
	w := writer(t, e, nil)
	uid, _ := e.fake.Event(master)

	// Move one occurrence: calwrite writes a RECURRENCE-ID override, the
	// backend PATCHes that occurrence, Graph makes it an exception.
	inst := time.Date(2026, 3, 23, 9, 30, 0, 0, berlin)
	title := "Standup (late)"
	op, err := w.Update(ctx, "u1", calwrite.UpdateArgs{UID: uid.ICalUID, Instance: inst.Format(time.RFC3339), Summary: &title, Start: "2026-03-23T11:00"})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("update one: %+v %v", op, err)
	}
	// Cancel another: an EXDATE, sent as the DELETE of that occurrence.
	gone := time.Date(2026, 3, 30, 9, 30, 0, 0, berlin)
	op, err = w.Delete(ctx, "d1", calwrite.DeleteArgs{UID: uid.ICalUID, Instance: gone.Format(time.RFC3339)})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("delete one: %+v %v", op, err)
	}
	ins := e.agenda(t, first, first.AddDate(0, 0, 21))
	var got []string
	for _, in := range ins {
		got = append(got, in.Start.In(berlin).Format("01-02 15:04")+" "+in.Summary)
	}
	if strings.Join(got, "|") != "03-16 09:30 Standup|03-23 11:00 Standup (late)" {
		t.Fatalf("agenda %v", got)
	}
	// Changing the recurrence is refused without a request.
	href := FileName(uid.ICalUID, master)
	cur, err := e.col.Get(ctx, href)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.col.Update(ctx, href, []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:"+uid.ICalUID+"\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;TZID=Europe/Berlin:20260316T093000\r\nRRULE:FREQ=DAILY\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), cur.ETag); !errors.Is(err, calwrite.ErrRefused) {
		t.Errorf("rrule change: %v", err)
	}
}

func TestConflictReported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	id := e.fake.AddEvent(e.calID, single("Review", time.Date(2026, 3, 24, 15, 0, 0, 0, berlin), 30, "W. Europe Standard Time"))
	e.sync(t)
	ev, _ := e.fake.Event(id)
	// Someone edits the event in Outlook between calwrite's read and its
	// write: the If-Match no longer holds.
	h := hook{Collection: e.col, beforeUpdate: func() { e.fake.UpdateEvent(id, func(ev *graphtest.Event) { ev.Subject = "Review (moved by Ada)" }) }}
	w := writer(t, e, h)
	title := "Review v2"
	op, err := w.Update(ctx, "u1", calwrite.UpdateArgs{UID: ev.ICalUID, Summary: &title})
	if !errors.Is(err, calwrite.ErrConflict) || op.State != calwrite.StateFailed || !strings.Contains(op.Error, "changed since it was read") {
		t.Fatalf("conflict: %+v %v", op, err)
	}
	if now, _ := e.fake.Event(id); now.Subject != "Review (moved by Ada)" {
		t.Errorf("the other edit was overwritten: %q", now.Subject)
	}
	// The server's own 412 (If-Match checked there) is the same class.
	ev, _ = e.fake.Event(id)
	data, _, err := e.col.current(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.UpdateEvent(id, func(ev *graphtest.Event) { ev.Subject = "again" })
	_, err = e.col.Update(ctx, FileName(ev.ICalUID, id), []byte(strings.Replace(string(data), "SUMMARY:", "SUMMARY:x", 1)), ev.ETag)
	if !errors.Is(err, calwrite.ErrConflict) {
		t.Errorf("stale etag: %v", err)
	}
}

func TestResyncKeepsJournaledWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.fake.AddEvent(e.calID, single("Existing", time.Date(2026, 3, 24, 15, 0, 0, 0, berlin), 30, "W. Europe Standard Time"))
	e.sync(t)
	w := writer(t, e, nil)
	op, err := w.Create(ctx, "c1", calwrite.CreateArgs{Calendar: e.src.Name, Summary: "Dentist", Start: "2026-03-25T08:00", Minutes: 30})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("create: %+v %v", op, err)
	}
	// Far outside the window: no pass will ever list it.
	far, err := w.Create(ctx, "c2", calwrite.CreateArgs{Calendar: e.src.Name, Summary: "Anniversary", Start: "2031-06-01T10:00", Minutes: 30})
	if err != nil || far.State != calwrite.StateDone {
		t.Fatalf("create far: %+v %v", far, err)
	}
	e.fake.ExpireTokens()
	if st := e.sync(t); !st.Resynced || st.Files != 2 {
		t.Fatalf("resync %+v", st)
	}
	// The event made here is still one file under its journal name, and
	// the far one is still known by its id: both can be read back and
	// written again.
	if name, err := e.idx.FileOf(ctx, e.src.Name, op.UID); err != nil || name != op.Href {
		t.Fatalf("after resync: %q %v", name, err)
	}
	for _, o := range []calwrite.Op{op, far} {
		obj, err := e.col.Get(ctx, o.Href)
		if err != nil || !strings.Contains(string(obj.Data), o.UID) {
			t.Fatalf("get %s: %v", o.Href, err)
		}
	}
	title := "Dentist (moved)"
	if up, err := w.Update(ctx, "u1", calwrite.UpdateArgs{UID: op.UID, Summary: &title}); err != nil || up.State != calwrite.StateDone {
		t.Fatalf("update after resync: %+v %v", up, err)
	}
	ops, err := w.List(ctx, "", 10)
	if err != nil || len(ops) != 3 {
		t.Fatalf("journal %+v %v", ops, err)
	}
	for _, o := range ops {
		if o.State != calwrite.StateDone {
			t.Errorf("op %+v", o)
		}
	}
	if n := len(e.fake.Events(e.calID)); n != 3 {
		t.Errorf("server holds %d events", n)
	}
}

func TestReadOnlyAndTasksRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	todo := []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VTODO\r\nUID:t1@hestia\r\nDTSTAMP:20260101T000000Z\r\nSUMMARY:x\r\nEND:VTODO\r\nEND:VCALENDAR\r\n")
	if _, err := e.col.Create(ctx, "t1@hestia.ics", todo); !errors.Is(err, calwrite.ErrRefused) {
		t.Errorf("a to-do: %v", err)
	}
	ro := &Collection{Client: e.col.Client, Calendar: Calendar{ID: e.calID, Name: "Calendar"}, Dir: e.col.Dir, Now: e.col.Now}
	if _, err := ro.Create(ctx, "x@hestia.ics", []byte("x")); !errors.Is(err, calwrite.ErrRefused) {
		t.Errorf("read-only: %v", err)
	}
	if len(e.fake.Events(e.calID)) != 0 {
		t.Error("something was created")
	}
}

func TestGraphRecurrence(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 16, 9, 30, 0, 0, berlin)
	for rule, want := range map[string]string{
		"FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20260630T215959Z": "weekly [monday wednesday] endDate 2026-06-30",
		"FREQ=MONTHLY;BYDAY=-1FR;COUNT=5":                "relativeMonthly [friday] last numbered",
		"FREQ=MONTHLY;BYDAY=TU;BYSETPOS=2;INTERVAL=2":    "relativeMonthly [tuesday] second noEnd",
		"FREQ=YEARLY":                  "absoluteYearly 3/16 noEnd",
		"FREQ=DAILY;INTERVAL=3":        "daily noEnd",
		"FREQ=MONTHLY;BYMONTHDAY=31":   "absoluteMonthly 31 noEnd",
		"FREQ=HOURLY":                  "refused",
		"FREQ=WEEKLY;BYHOUR=9":         "refused",
		"FREQ=MONTHLY;BYDAY=1MO,2TU":   "refused",
		"FREQ=MONTHLY;BYDAY=3MO":       "relativeMonthly [monday] third noEnd",
		"FREQ=WEEKLY;INTERVAL=1000":    "refused",
		"FREQ=WEEKLY;BYDAY=XX":         "refused",
		"FREQ=MONTHLY;BYMONTH=2":       "refused",
		"FREQ=YEARLY;BYMONTH=13":       "refused",
		"FREQ=DAILY;COUNT=0":           "refused",
		"FREQ=DAILY;UNTIL=yesterday":   "refused",
		"FREQ=YEARLY;BYMONTHDAY=40":    "refused",
		"FREQ=MONTHLY;BYDAY=5MO":       "refused",
		"FREQ":                         "refused",
		"FREQ=WEEKLY;BYDAY=MO;WKST=SU": "weekly [monday] noEnd",
	} {
		rec, err := graphRecurrence(rule, start, false, "W. Europe Standard Time")
		got := "refused"
		if err == nil {
			p, r := rec["pattern"].(map[string]any), rec["range"].(map[string]any)
			got = p["type"].(string)
			if d, ok := p["daysOfWeek"]; ok {
				got += " " + fmt.Sprint(d)
			}
			if i, ok := p["index"]; ok {
				got += " " + i.(string)
			}
			if p["type"] == "absoluteYearly" {
				got += " " + fmt.Sprint(p["month"]) + "/" + fmt.Sprint(p["dayOfMonth"])
			} else if d, ok := p["dayOfMonth"]; ok {
				got += " " + fmt.Sprint(d)
			}
			got += " " + r["type"].(string)
			if ed, ok := r["endDate"]; ok {
				got += " " + ed.(string)
			}
		} else if !errors.Is(err, calwrite.ErrRefused) {
			t.Errorf("%s: error not a refusal: %v", rule, err)
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", rule, got, want)
		}
	}
}

func TestZoneName(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC)
	for in, want := range map[*time.Location]string{
		mustZone("Asia/Kolkata"):    "India Standard Time", // an alias of the table's Asia/Calcutta: same rules
		mustZone("Europe/Berlin"):   "W. Europe Standard Time",
		mustZone("America/Phoenix"): "US Mountain Standard Time",
		time.UTC:                    "UTC",
		time.FixedZone("x", 3600):   "UTC",
		time.Local:                  "UTC",
	} {
		if got := zoneName(in, at); got != want {
			t.Errorf("zoneName(%s) = %q, want %q", in, got, want)
		}
	}
	// Rome is not in the table; a zone with its rules is sent instead.
	got := zoneName(rome, at)
	cand, ok := Zone(got)
	if !ok || !sameRules(rome, cand, at) || got == "UTC" {
		t.Errorf("zoneName(Europe/Rome) = %q", got)
	}
}
