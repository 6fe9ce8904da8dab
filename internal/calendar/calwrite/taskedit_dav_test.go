package calwrite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/davsync"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

// serverMeddler is a CalDAV backend where another client changes one
// object on the server right after the writer first reads it.
type serverMeddler struct {
	calwrite.Backend
	mu     sync.Mutex
	href   string
	change func([]byte) []byte
}

func (m *serverMeddler) meddle(href string, change func([]byte) []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.href, m.change = href, change
}

func (m *serverMeddler) Get(ctx context.Context, href string) (calwrite.Object, error) {
	obj, err := m.Backend.Get(ctx, href)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil && href == m.href {
		m.href = ""
		if _, err := m.Backend.Update(ctx, href, m.change(obj.Data), obj.ETag); err != nil {
			return obj, err
		}
	}
	return obj, err
}

func todoICS(body string) string {
	return strings.ReplaceAll("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//other client//EN\nBEGIN:VTODO\nDTSTAMP:20260101T000000Z\n"+strings.TrimSpace(body)+"\nEND:VTODO\nEND:VCALENDAR\n", "\n", "\r\n")
}

// TestRadicaleTaskUpdateAndDelete: tasks on a real CalDAV server
// (Radicale) are changed field by field, cleared, reopened and deleted
// with If-Match, each confirmed by reading back; a recurring task's
// series is changed and deleted only with series; a task changed on the
// server under the write is never clobbered (412, journaled failed).
func TestRadicaleTaskUpdateAndDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "carol", davtest.Collection{Name: "todo", Display: "To do", Components: "VTODO"})
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	acc := davsync.Account{Name: "dav", URL: base, Username: "carol", Password: "x"}
	cols, err := davsync.Discover(ctx, acc)
	if err != nil || len(cols) != 1 {
		t.Fatalf("discover %+v %v", cols, err)
	}
	col := cols[0]
	mirror := filepath.Join(t.TempDir(), "todo")
	be := davsync.Backend{Account: acc, Collection: col.Path}
	for href, body := range map[string]string{
		"rent.ics":  "UID:rent\nSUMMARY:Pay the rent\nDUE;VALUE=DATE:20260318\nPRIORITY:1\nSTATUS:NEEDS-ACTION",
		"bins.ics":  "UID:bins\nSUMMARY:Take the bins out\nDUE;VALUE=DATE:20260302\nRRULE:FREQ=WEEKLY;BYDAY=MO",
		"milk.ics":  "UID:milk\nSUMMARY:Buy milk",
		"taxes.ics": "UID:taxes\nSUMMARY:File the taxes\nDESCRIPTION:form 730",
	} {
		if _, err := be.Create(ctx, href, []byte(todoICS(body))); err != nil {
			t.Fatal(err)
		}
	}
	be.Dir = mirror
	now := time.Date(2026, 3, 20, 9, 0, 0, 0, loc)
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	src := calendar.Source{Name: "dav/todo", Path: mirror}
	resync := func(ctx context.Context) error {
		if _, err := davsync.Mirror(ctx, acc, col, mirror); err != nil {
			return err
		}
		_, err := idx.Sync(ctx, src)
		return err
	}
	if err := resync(ctx); err != nil {
		t.Fatal(err)
	}
	m := &serverMeddler{Backend: be}
	targets := func(context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{src.Name: {Name: src.Name, Backend: m, Resync: resync}}, nil
	}
	w, err := calwrite.Open(ctx, calwrite.Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	server := func(href string) string {
		t.Helper()
		obj, err := be.Get(ctx, href)
		if err != nil {
			t.Fatalf("server copy of %s: %v", href, err)
		}
		return string(obj.Data)
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
				s += " " + x.Due.In(loc).Format("01-02 15:04")
			}
			out = append(out, s)
		}
		return strings.Join(out, "|")
	}
	s, p, n := "Pay the March rent", 4, "by bank transfer"
	d := "2026-03-27T12:00"
	a := calwrite.TaskUpdateArgs{Text: "rent", Summary: &s, Priority: &p, Notes: &n, Due: &d}
	if got := w.PreviewUpdateTask(ctx, a); got != `update task "Pay the rent" (rent) in list "dav/todo": title "Pay the rent" → "Pay the March rent"; notes none → "by bank transfer"; priority 1 → 4; due Wed 2026-03-18 → Fri 2026-03-27 12:00` {
		t.Fatalf("preview %q", got)
	}
	op, err := w.UpdateTask(ctx, "u1", a)
	if err != nil || op.State != calwrite.StateDone || op.Calendar != "dav/todo" {
		t.Fatalf("update %+v %v", op, err)
	}
	got := server("rent.ics")
	for _, want := range []string{"SUMMARY:Pay the March rent", "PRIORITY:4", "DESCRIPTION:by bank transfer", "DUE;TZID=Europe/Rome:20260327T120000", "SEQUENCE:1"} {
		if !strings.Contains(got, want) {
			t.Fatalf("server copy lacks %q:\n%s", want, got)
		}
	}
	if obj, _ := be.Get(ctx, "rent.ics"); obj.ETag != op.ETag {
		t.Fatalf("journaled ETag %s, server %s", op.ETag, obj.ETag)
	}
	// Cleared: due, priority, notes.
	none, zero, empty := "none", 0, ""
	if op, err = w.UpdateTask(ctx, "u2", calwrite.TaskUpdateArgs{UID: "rent", Due: &none, Priority: &zero, Notes: &empty}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("clear %+v %v", op, err)
	}
	if got := server("rent.ics"); strings.Contains(got, "DUE") || strings.Contains(got, "PRIORITY") || strings.Contains(got, "DESCRIPTION") {
		t.Fatalf("server copy after clearing:\n%s", got)
	}
	// Completed, then reopened.
	if _, err := w.CompleteTask(ctx, "c1", calwrite.TaskCompleteArgs{UID: "milk"}); err != nil {
		t.Fatal(err)
	}
	if op, err = w.UpdateTask(ctx, "u3", calwrite.TaskUpdateArgs{Text: "milk", Reopen: true}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("reopen %+v %v", op, err)
	}
	if got := server("milk.ics"); !strings.Contains(got, "STATUS:NEEDS-ACTION") || strings.Contains(got, "COMPLETED:") {
		t.Fatalf("server copy after reopening:\n%s", got)
	}
	// The recurring task: renamed as a series, moved, deleted only with
	// series.
	bins := "Put the bins out"
	mon := "2026-03-30"
	if got := w.PreviewUpdateTask(ctx, calwrite.TaskUpdateArgs{UID: "bins", Summary: &bins, Due: &mon}); !strings.Contains(got, "due Mon 2026-03-16 → Mon 2026-03-30 (the series runs from then on)") ||
		!strings.Contains(got, "this changes the whole series") {
		t.Fatalf("recurring preview %q", got)
	}
	if op, err = w.UpdateTask(ctx, "u4", calwrite.TaskUpdateArgs{UID: "bins", Summary: &bins, Due: &mon}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("recurring update %+v %v", op, err)
	}
	if got := server("bins.ics"); !strings.Contains(got, "SUMMARY:Put the bins out") || !strings.Contains(got, "DUE;VALUE=DATE:20260330") || !strings.Contains(got, "RRULE:FREQ=WEEKLY;BYDAY=MO") {
		t.Fatalf("server copy of the series:\n%s", got)
	}
	if _, err := w.DeleteTask(ctx, "d1", calwrite.TaskDeleteArgs{UID: "bins"}); err == nil || !strings.Contains(err.Error(), "series: true") {
		t.Fatalf("recurring delete without series: %v", err)
	}
	if op, err = w.DeleteTask(ctx, "d2", calwrite.TaskDeleteArgs{UID: "bins", Series: true}); err != nil || op.State != calwrite.StateDone || op.Kind != calwrite.KindTaskDelete {
		t.Fatalf("series delete %+v %v", op, err)
	}
	if _, err := be.Get(ctx, "bins.ics"); !errors.Is(err, calwrite.ErrNotFound) {
		t.Fatalf("the series is still on the server: %v", err)
	}
	if got := open(); got != "Buy milk|File the taxes|Pay the March rent" {
		t.Fatalf("open tasks: %s", got)
	}

	// Another client changes the task on the server under the write: the
	// If-Match fails, the op is failed, their version kept.
	m.meddle("taxes.ics", func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "DESCRIPTION:form 730", "DESCRIPTION:form 730 (sent by the accountant)", 1))
	})
	title := "File the 2025 taxes"
	op, err = w.UpdateTask(ctx, "u5", calwrite.TaskUpdateArgs{UID: "taxes", Summary: &title})
	if !errors.Is(err, calwrite.ErrConflict) || op.State != calwrite.StateFailed {
		t.Fatalf("stale update %+v %v", op, err)
	}
	if got := server("taxes.ics"); !strings.Contains(got, "sent by the accountant") || strings.Contains(got, title) {
		t.Fatalf("server copy after a stale update:\n%s", got)
	}
	m.meddle("taxes.ics", func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "SUMMARY:File the taxes", "SUMMARY:File the taxes!", 1))
	})
	op, err = w.DeleteTask(ctx, "d3", calwrite.TaskDeleteArgs{UID: "taxes"})
	if !errors.Is(err, calwrite.ErrConflict) || op.State != calwrite.StateFailed {
		t.Fatalf("stale delete %+v %v", op, err)
	}
	if got := server("taxes.ics"); !strings.Contains(got, "SUMMARY:File the taxes!") {
		t.Fatalf("server copy after a stale delete:\n%s", got)
	}
	// Read afresh, the write goes through and keeps the other changes.
	if err := resync(ctx); err != nil {
		t.Fatal(err)
	}
	if op, err = w.UpdateTask(ctx, "u6", calwrite.TaskUpdateArgs{UID: "taxes", Summary: &title}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("update after the conflict %+v %v", op, err)
	}
	if got := server("taxes.ics"); !strings.Contains(got, "SUMMARY:"+title) || !strings.Contains(got, "sent by the accountant") {
		t.Fatalf("server copy:\n%s", got)
	}
	if op, err = w.DeleteTask(ctx, "d4", calwrite.TaskDeleteArgs{Text: "taxes"}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("delete %+v %v", op, err)
	}
	if _, err := be.Get(ctx, "taxes.ics"); !errors.Is(err, calwrite.ErrNotFound) {
		t.Fatalf("the task is still on the server: %v", err)
	}
}
