package davsync

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

const rentTodo = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other client//EN\r\nBEGIN:VTODO\r\nUID:rent\r\nDTSTAMP:20260101T000000Z\r\n" +
	"SUMMARY:Pay the rent\r\nDUE;VALUE=DATE:20260318\r\nPRIORITY:1\r\nSTATUS:NEEDS-ACTION\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"

const binsTodo = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other client//EN\r\nBEGIN:VTODO\r\nUID:bins\r\nDTSTAMP:20260101T000000Z\r\n" +
	"SUMMARY:Take the bins out\r\nDUE;VALUE=DATE:20260302\r\nRRULE:FREQ=WEEKLY;BYDAY=MO\r\nEND:VTODO\r\nEND:VCALENDAR\r\n"

// TestRadicaleTasks: a VTODO-only collection (a task list, as iCloud
// Reminders and Nextcloud keep them) is discovered beside a calendar,
// mirrored and indexed; tasks are added and completed on the server with
// If-None-Match / If-Match, confirmed by reading back, and the mirror
// follows.
func TestRadicaleTasks(t *testing.T) {
	ctx := context.Background()
	base := davtest.Start(t, "alice",
		davtest.Collection{Name: "work", Display: "Work", Components: "VEVENT"},
		davtest.Collection{Name: "todo", Display: "To do", Components: "VTODO"},
		davtest.Collection{Name: "diary", Display: "Diary", Components: "VJOURNAL"})
	acc := Account{Name: "radicale", URL: base, Username: "alice", Password: "x"}
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	cols, err := Discover(ctx, acc)
	if err != nil {
		t.Fatal(err)
	}
	var col Collection
	for _, c := range cols {
		if c.Path == "/alice/todo/" {
			col = c
		}
	}
	// The journal-only collection holds neither events nor to-dos.
	if len(cols) != 2 || col.Name != "To do" {
		t.Fatalf("discover %+v", cols)
	}
	be := Backend{Account: acc, Collection: col.Path}
	for href, data := range map[string]string{"rent.ics": rentTodo, "bins.ics": binsTodo} {
		if _, err := be.Create(ctx, href, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	mirror := filepath.Join(t.TempDir(), "todo")
	be.Dir = mirror
	now := time.Date(2026, 3, 20, 9, 0, 0, 0, loc)
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	src := calendar.Source{Name: "radicale/todo", Path: mirror}
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
	open := func() string {
		ts, err := idx.Todos(ctx, calendar.TodoQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range ts {
			s := x.Summary
			if x.Due != nil {
				s += " " + x.Due.Format("01-02")
			}
			if x.Overdue {
				s += "!"
			}
			out = append(out, s)
		}
		return strings.Join(out, "|")
	}
	if got := open(); got != "Take the bins out 03-16!|Pay the rent 03-18!" {
		t.Fatalf("synced tasks %s", got)
	}
	targets := func(context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{src.Name: {Name: src.Name, Backend: be, Resync: resync}}, nil
	}
	w, err := calwrite.Open(ctx, calwrite.Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	op, err := w.AddTask(ctx, "a1", calwrite.TaskAddArgs{Summary: "Book the dentist", Due: "2026-03-25T10:00", Priority: 3})
	if err != nil || op.State != calwrite.StateDone || op.Calendar != "radicale/todo" {
		t.Fatalf("add %+v %v", op, err)
	}
	obj, err := be.Get(ctx, op.Href)
	if err != nil || !strings.Contains(string(obj.Data), "UID:"+op.UID) || obj.ETag != op.ETag || !strings.Contains(string(obj.Data), "DUE;TZID=Europe/Rome:20260325T100000") {
		t.Fatalf("server copy %+v %v", obj, err)
	}
	if op, err = w.CompleteTask(ctx, "c1", calwrite.TaskCompleteArgs{Text: "rent"}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("complete %+v %v", op, err)
	}
	if obj, _ = be.Get(ctx, "rent.ics"); !strings.Contains(string(obj.Data), "STATUS:COMPLETED") || !strings.Contains(string(obj.Data), "PERCENT-COMPLETE:100") {
		t.Fatalf("server copy after completion:\n%s", obj.Data)
	}
	// The recurring task: this week's missed occurrence is completed by an
	// override on the server; next Monday's is shown.
	if op, err = w.CompleteTask(ctx, "c2", calwrite.TaskCompleteArgs{UID: "bins"}); err != nil || op.State != calwrite.StateDone || op.Instance == "" {
		t.Fatalf("complete recurring %+v %v", op, err)
	}
	if obj, _ = be.Get(ctx, "bins.ics"); !strings.Contains(string(obj.Data), "RECURRENCE-ID;VALUE=DATE:20260316") {
		t.Fatalf("server copy of the recurring task:\n%s", obj.Data)
	}
	if got := open(); got != "Take the bins out 03-23|Book the dentist 03-25" {
		t.Fatalf("tasks after writes %s", got)
	}
	// Someone else changes the task on the server: a stale completion is
	// refused by the server (412) and journaled failed.
	cur, _ := be.Get(ctx, op.Href)
	if _, err := be.Update(ctx, "bins.ics", []byte(binsTodo), `"stale"`); !errors.Is(err, calwrite.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if after, _ := be.Get(ctx, "bins.ics"); after.ETag != cur.ETag {
		t.Fatal("stale update changed the server copy")
	}
}
