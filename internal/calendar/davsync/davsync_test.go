package davsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
	"github.com/hestia-dev/hestia/internal/davmirror"
)

const standup = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nBEGIN:VEVENT\r\nUID:standup\r\nDTSTAMP:20260101T000000Z\r\n" +
	"DTSTART;TZID=Europe/Rome:20260302T093000\r\nDTEND;TZID=Europe/Rome:20260302T100000\r\nRRULE:FREQ=WEEKLY;BYDAY=MO\r\nSUMMARY:Standup\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"

func TestRadicaleSyncAndWrites(t *testing.T) {
	ctx := context.Background()
	base := davtest.StartRadicale(t, "alice", "work", "Work")
	acc := Account{Name: "radicale", URL: base, Username: "alice", Password: "x"}
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	cols, err := Discover(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != 1 || cols[0].Name != "Work" || cols[0].Path != "/alice/work/" {
		t.Fatalf("discover %+v", cols)
	}
	col := cols[0]
	be := Backend{Account: acc, Collection: col.Path}
	// Someone else's client puts a recurring event on the server.
	if _, err := be.Create(ctx, "standup.ics", []byte(standup)); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Create(ctx, "standup.ics", []byte(standup)); !errors.Is(err, calwrite.ErrConflict) {
		t.Fatalf("second create: %v", err)
	}
	mirror := filepath.Join(t.TempDir(), "mirror")
	be.Dir = mirror
	st, err := Mirror(ctx, acc, col, mirror)
	if err != nil || st.Fetched != 1 {
		t.Fatalf("mirror %+v %v", st, err)
	}
	if st, err = Mirror(ctx, acc, col, mirror); err != nil || st.Fetched != 0 || st.Unchanged != 1 {
		b, _ := os.ReadFile(filepath.Join(mirror, davmirror.ICalendar.StateFile))
		t.Fatalf("second mirror %+v %v %s", st, err, b)
	}
	now := func() time.Time { return time.Date(2026, 3, 20, 9, 0, 0, 0, loc) }
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	src := calendar.Source{Name: "radicale/Work", Path: mirror}
	resync := func(ctx context.Context) error {
		if _, err := Mirror(ctx, acc, col, mirror); err != nil {
			return err
		}
		_, err := idx.Sync(ctx, src)
		return err
	}
	if err := resync(ctx); err != nil {
		t.Fatal(err)
	}
	targets := func(context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{src.Name: {Name: src.Name, Backend: be, Resync: resync}}, nil
	}
	w, err := calwrite.Open(ctx, calwrite.Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	agenda := func() string {
		ag, err := idx.Agenda(ctx, calendar.Query{From: time.Date(2026, 3, 16, 0, 0, 0, 0, loc), To: time.Date(2026, 4, 1, 0, 0, 0, 0, loc)})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, in := range ag.Instances {
			out = append(out, in.Start.Format("01-02 15:04")+" "+in.Summary)
		}
		return strings.Join(out, "|")
	}
	if got := agenda(); got != "03-16 09:30 Standup|03-23 09:30 Standup|03-30 09:30 Standup" {
		t.Fatalf("synced agenda %s", got)
	}
	op, err := w.Create(ctx, "k1", calwrite.CreateArgs{Summary: "Dentist", Start: "2026-03-25T10:00", Minutes: 45})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("create %+v %v", op, err)
	}
	// Confirmed on the server by UID.
	obj, err := be.Get(ctx, op.Href)
	if err != nil || !strings.Contains(string(obj.Data), "UID:"+op.UID) || obj.ETag != op.ETag {
		t.Fatalf("server copy %+v %v", obj, err)
	}
	sum := "Standup (moved)"
	if op, err = w.Update(ctx, "k2", calwrite.UpdateArgs{UID: "standup", Instance: "2026-03-23T09:30", Start: "2026-03-23T11:00", Summary: &sum}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("update instance %+v %v", op, err)
	}
	if op, err = w.Delete(ctx, "k3", calwrite.DeleteArgs{UID: "standup", Instance: "2026-03-30T09:30"}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("delete instance %+v %v", op, err)
	}
	if got := agenda(); got != "03-16 09:30 Standup|03-23 11:00 Standup (moved)|03-25 10:00 Dentist" {
		t.Fatalf("agenda after writes %s", got)
	}
	// A stale ETag is refused by the server, and the journal says failed.
	cur, _ := be.Get(ctx, "standup.ics")
	if _, err := be.Update(ctx, "standup.ics", []byte(standup), `"stale"`); !errors.Is(err, calwrite.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if after, _ := be.Get(ctx, "standup.ics"); after.ETag != cur.ETag {
		t.Fatal("stale update changed the server copy")
	}
	if op, err = w.Delete(ctx, "k4", calwrite.DeleteArgs{UID: "standup"}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("delete %+v %v", op, err)
	}
	if _, err := be.Get(ctx, "standup.ics"); !errors.Is(err, calwrite.ErrNotFound) {
		t.Fatalf("deleted object still on the server: %v", err)
	}
	if got := agenda(); got != "03-25 10:00 Dentist" {
		t.Fatalf("agenda after delete %s", got)
	}
}
