package calwrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
)

func ptr[T any](v T) *T { return &v }

// file reads one of the home list's files.
func (e *taskEnv) file(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeTodos writes a file of the home list holding the VTODO bodies
// given, and syncs the index.
func (e *taskEnv) writeTodos(t *testing.T, name string, bodies ...string) {
	t.Helper()
	s := "BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:x\n"
	for _, b := range bodies {
		s += "BEGIN:VTODO\nDTSTAMP:20260101T080000Z\n" + strings.TrimSpace(b) + "\nEND:VTODO\n"
	}
	if err := os.WriteFile(filepath.Join(e.home, name), crlf(s+"END:VCALENDAR\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
}

func (e *taskEnv) sync(t *testing.T) {
	t.Helper()
	if _, err := e.idx.Sync(context.Background(), calendar.Source{Name: "home", Path: e.home}); err != nil {
		t.Fatal(err)
	}
}

func has(t *testing.T, data string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(data, w) {
			t.Fatalf("lacks %q:\n%s", w, data)
		}
	}
}

func lacks(t *testing.T, data string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(data, w) {
			t.Fatalf("still has %q:\n%s", w, data)
		}
	}
}

// TestUpdateTask: each field changes, old → new on the card; the write
// is journaled, read back, and not repeated for the same call; due and
// priority are cleared with "none" and 0, notes with "".
func TestUpdateTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	a := TaskUpdateArgs{Text: "rent", Summary: ptr("Pay the March rent"), Notes: ptr("bank transfer\nref 42"), Priority: ptr(3), Due: ptr("2026-03-24")}
	want := `update task "Pay the rent" (rent) in list "home": title "Pay the rent" → "Pay the March rent"; notes none → "bank transfer\nref 42"; priority 1 → 3; due Wed 2026-03-18 → Tue 2026-03-24`
	if got := e.w.PreviewUpdateTask(ctx, a); got != want {
		t.Fatalf("preview\n%s\nwant\n%s", got, want)
	}
	op, err := e.w.UpdateTask(ctx, "u1", a)
	if err != nil || op.State != StateDone || op.Kind != KindTaskUpdate || op.UID != "rent" || op.Summary != "Pay the March rent" || op.ETag == "" || op.Checks != 1 {
		t.Fatalf("update %+v %v", op, err)
	}
	data := e.file(t, "rent.ics")
	has(t, data, "SUMMARY:Pay the March rent", `DESCRIPTION:bank transfer\nref 42`, "PRIORITY:3", "DUE;VALUE=DATE:20260324", "SEQUENCE:1", "DTSTAMP:20260320T080000Z")
	// The same call again is the first op; nothing is written twice.
	if op2, err := e.w.UpdateTask(ctx, "u1", a); err != nil || op2.ID != op.ID {
		t.Fatalf("repeat %+v %v", op2, err)
	}
	if e.file(t, "rent.ics") != data {
		t.Fatal("a repeated call wrote again")
	}
	if got := e.open(t); !strings.HasPrefix(got, "Water the plants 03-16|Pay the March rent 03-24|") {
		t.Fatalf("open tasks: %s", got)
	}
	// Clearing: due "none", priority 0, notes "".
	a = TaskUpdateArgs{UID: "rent", Due: ptr("none"), Priority: ptr(0), Notes: ptr("")}
	if got := e.w.PreviewUpdateTask(ctx, a); got != `update task "Pay the March rent" (rent) in list "home": notes "bank transfer\nref 42" → none; priority 3 → none; due Tue 2026-03-24 → none` {
		t.Fatalf("clearing preview %q", got)
	}
	if op, err = e.w.UpdateTask(ctx, "u2", a); err != nil || op.State != StateDone {
		t.Fatalf("clear %+v %v", op, err)
	}
	data = e.file(t, "rent.ics")
	lacks(t, data, "DUE", "PRIORITY", "DESCRIPTION")
	has(t, data, "SEQUENCE:2")
	// A due time on a task without one is written in the user's zone.
	if op, err = e.w.UpdateTask(ctx, "u3", TaskUpdateArgs{UID: "milk", Due: ptr("2026-03-25T10:00")}); err != nil || op.State != StateDone {
		t.Fatalf("timed due %+v %v", op, err)
	}
	has(t, e.file(t, "milk.ics"), "DUE;TZID=Europe/Rome:20260325T100000")
	if got := e.open(t); got != "Water the plants 03-16|Buy milk 03-25|Boss's task|Buy milk (oat)|Pay the March rent" {
		t.Fatalf("open tasks after clearing: %s", got)
	}
	// The same values again change nothing and are said to.
	if _, err := e.w.UpdateTask(ctx, "u4", TaskUpdateArgs{UID: "milk", Summary: ptr("Buy milk")}); err == nil || !strings.Contains(err.Error(), "nothing changes") {
		t.Fatalf("no-op update: %v", err)
	}
	ops, _ := e.w.List(ctx, StateDone, 10)
	if len(ops) != 3 {
		t.Fatalf("journal %+v", ops)
	}
}

// TestUpdateTaskWithStart: a task with DTSTART keeps its span when its due
// moves; a new due before a start without a due is refused.
func TestUpdateTaskWithStart(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	e.writeTodos(t, "report.ics", "UID:report\nSUMMARY:Write the report\nDTSTART;VALUE=DATE:20260323\nDUE;VALUE=DATE:20260327")
	e.writeTodos(t, "move.ics", "UID:move\nSUMMARY:Plan the move\nDTSTART;TZID=Europe/Rome:20260401T090000")
	a := TaskUpdateArgs{UID: "report", Due: ptr("2026-04-03")}
	if got := e.w.PreviewUpdateTask(ctx, a); got != `update task "Write the report" (report) in list "home": start Mon 2026-03-23 → Mon 2026-03-30; due Fri 2026-03-27 → Fri 2026-04-03` {
		t.Fatalf("preview %q", got)
	}
	if _, err := e.w.UpdateTask(ctx, "r1", a); err != nil {
		t.Fatal(err)
	}
	has(t, e.file(t, "report.ics"), "DTSTART;VALUE=DATE:20260330", "DUE;VALUE=DATE:20260403")
	if _, err := e.w.UpdateTask(ctx, "m1", TaskUpdateArgs{UID: "move", Due: ptr("2026-03-30")}); err == nil || !strings.Contains(err.Error(), "before the task's start") {
		t.Fatalf("due before start: %v", err)
	}
	if _, err := e.w.UpdateTask(ctx, "m2", TaskUpdateArgs{UID: "move", Due: ptr("2026-04-02T12:00")}); err != nil {
		t.Fatal(err)
	}
	has(t, e.file(t, "move.ics"), "DTSTART;TZID=Europe/Rome:20260401T090000", "DUE;TZID=Europe/Rome:20260402T120000")
}

// TestReopenTask: a completed task goes back to NEEDS-ACTION, found by
// words among the completed ones; an open one has nothing to reopen.
func TestReopenTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	if _, err := e.w.CompleteTask(ctx, "c1", TaskCompleteArgs{UID: "milk"}); err != nil {
		t.Fatal(err)
	}
	a := TaskUpdateArgs{Text: "buy milk", Reopen: true}
	if got := e.w.PreviewUpdateTask(ctx, a); got != `update task "Buy milk" (milk) in list "home": status completed → needs-action` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.UpdateTask(ctx, "r1", a)
	if err != nil || op.State != StateDone {
		t.Fatalf("reopen %+v %v", op, err)
	}
	data := e.file(t, "milk.ics")
	has(t, data, "STATUS:NEEDS-ACTION", "SEQUENCE:2")
	lacks(t, data, "COMPLETED:", "PERCENT-COMPLETE")
	if got := e.open(t); !strings.Contains(got, "|Buy milk|") {
		t.Fatalf("open tasks after reopening: %s", got)
	}
	if _, err := e.w.UpdateTask(ctx, "r2", TaskUpdateArgs{UID: "milk", Reopen: true}); err == nil || !strings.Contains(err.Error(), "is not completed") {
		t.Fatalf("reopening an open task: %v", err)
	}
	if _, err := e.w.UpdateTask(ctx, "r3", TaskUpdateArgs{Text: "rent", Reopen: true}); err == nil || !strings.Contains(err.Error(), "no completed task matches") {
		t.Fatalf("reopening by words of an open task: %v", err)
	}
}

// TestUpdateRecurringTask: a change goes to the series (the card says
// so), into the open overrides that inherited the value but not into a
// completed one; a new due moves the series, in its form; reopening
// reopens the occurrence completed last; a series running from its due
// keeps one.
func TestUpdateRecurringTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	// The 16th is completed (an override); another client moved the 23rd
	// (an open override inheriting the title).
	if _, err := e.w.CompleteTask(ctx, "c1", TaskCompleteArgs{UID: "plants"}); err != nil {
		t.Fatal(err)
	}
	data := e.file(t, "plants.ics")
	data = strings.Replace(data, "END:VCALENDAR", "BEGIN:VTODO\r\nUID:plants\r\nDTSTAMP:20260101T080000Z\r\nRECURRENCE-ID;TZID=Europe/Rome:20260323T090000\r\n"+
		"SUMMARY:Water the plants\r\nDTSTART;TZID=Europe/Rome:20260323T100000\r\nDUE;TZID=Europe/Rome:20260323T190000\r\nEND:VTODO\r\nEND:VCALENDAR", 1)
	os.WriteFile(filepath.Join(e.home, "plants.ics"), []byte(data), 0o644)
	e.sync(t)

	a := TaskUpdateArgs{UID: "plants", Summary: ptr("Water the balcony plants"), Priority: ptr(2)}
	if got := e.w.PreviewUpdateTask(ctx, a); got != `update task "Water the plants" (plants) in list "home": title "Water the plants" → "Water the balcony plants"; priority none → 2 — a repeating task (FREQ=WEEKLY;BYDAY=MO): this changes the whole series` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.UpdateTask(ctx, "u1", a)
	if err != nil || op.State != StateDone || op.Instance != "" {
		t.Fatalf("update %+v %v", op, err)
	}
	data = e.file(t, "plants.ics")
	if n := strings.Count(data, "SUMMARY:Water the balcony plants"); n != 2 {
		t.Fatalf("%d components renamed, want the master and the open override:\n%s", n, data)
	}
	if n := strings.Count(data, "SUMMARY:Water the plants"); n != 1 {
		t.Fatalf("the completed override was renamed:\n%s", data)
	}
	if got := e.open(t); !strings.HasPrefix(got, "Pay the rent 03-18|Water the balcony plants 03-23|") {
		t.Fatalf("open tasks: %s", got)
	}

	// A date for a series by time keeps its clock time; DTSTART moves with
	// DUE. The series runs from the 30th.
	a = TaskUpdateArgs{UID: "plants", Due: ptr("2026-03-30")}
	if got := e.w.PreviewUpdateTask(ctx, a); !strings.Contains(got, "start Mon 2026-03-02 09:00 → Mon 2026-03-30 09:00; due Mon 2026-03-23 19:00 → Mon 2026-03-30 18:00 (the series runs from then on) — a repeating task") {
		t.Fatalf("due preview %q", got)
	}
	if _, err := e.w.UpdateTask(ctx, "u2", a); err != nil {
		t.Fatal(err)
	}
	has(t, e.file(t, "plants.ics"), "DTSTART;TZID=Europe/Rome:20260330T090000", "DUE;TZID=Europe/Rome:20260330T180000", "RRULE:FREQ=WEEKLY;BYDAY=MO")
	if got := e.open(t); !strings.HasPrefix(got, "Pay the rent 03-18|Water the balcony plants 03-30|") {
		t.Fatalf("open tasks after the move: %s", got)
	}
	// A due off the rule is written, and the card says where the rule puts
	// the next occurrence.
	if got := e.w.PreviewUpdateTask(ctx, TaskUpdateArgs{UID: "plants", Due: ptr("2026-04-01")}); !strings.Contains(got, "by its rule the next occurrence is due Mon 2026-04-06 18:00") {
		t.Fatalf("off-rule preview %q", got)
	}

	// Reopen: the occurrence completed last (the 16th) is open again.
	e.now = time.Date(2026, 3, 16, 12, 0, 0, 0, e.loc)
	e.writeTodos(t, "bins.ics", "UID:bins\nSUMMARY:Take the bins out\nDUE;VALUE=DATE:20260302\nRRULE:FREQ=WEEKLY;BYDAY=MO")
	if _, err := e.w.CompleteTask(ctx, "c2", TaskCompleteArgs{UID: "bins"}); err != nil {
		t.Fatal(err)
	}
	has(t, e.file(t, "bins.ics"), "RECURRENCE-ID;VALUE=DATE:20260316", "STATUS:COMPLETED")
	a = TaskUpdateArgs{Text: "bins", Reopen: true}
	if got := e.w.PreviewUpdateTask(ctx, a); got != `update task "Take the bins out" (bins) in list "home": the occurrence of Mon 2026-03-16: completed → needs-action` {
		t.Fatalf("reopen preview %q", got)
	}
	op, err = e.w.UpdateTask(ctx, "u3", a)
	if err != nil || op.State != StateDone || op.Instance != "2026-03-16T00:00:00+01:00" {
		t.Fatalf("reopen %+v %v", op, err)
	}
	lacks(t, e.file(t, "bins.ics"), "STATUS:COMPLETED")
	if got := e.open(t); !strings.Contains(got, "Take the bins out 03-16") {
		t.Fatalf("open tasks after reopening: %s", got)
	}
	if _, err := e.w.UpdateTask(ctx, "u4", TaskUpdateArgs{UID: "bins", Reopen: true}); err == nil || !strings.Contains(err.Error(), "no completed occurrence") {
		t.Fatalf("second reopen: %v", err)
	}
	// A series by date takes a date: a time given is its day.
	if _, err := e.w.UpdateTask(ctx, "u5", TaskUpdateArgs{UID: "bins", Due: ptr("2026-03-23T07:00")}); err != nil {
		t.Fatal(err)
	}
	has(t, e.file(t, "bins.ics"), "DUE;VALUE=DATE:20260323")
	// The series runs from its due: it keeps one. A series with a start
	// may lose its due.
	if _, err := e.w.UpdateTask(ctx, "u6", TaskUpdateArgs{UID: "bins", Due: ptr("none")}); err == nil || !strings.Contains(err.Error(), "repeats from its due date") {
		t.Fatalf("clearing the due of a series by due: %v", err)
	}
	if _, err := e.w.UpdateTask(ctx, "u7", TaskUpdateArgs{UID: "plants", Due: ptr("none")}); err != nil {
		t.Fatal(err)
	}
	if data := e.file(t, "plants.ics"); strings.Count(data, "DUE") != 2 || !strings.Contains(data, "DTSTART;TZID=Europe/Rome:20260330T090000") {
		t.Fatalf("after clearing the series' due (the overrides keep theirs):\n%s", data)
	}
}

// TestDeleteTask: a task's file is removed, confirmed gone from the store
// and the index; a recurring one only with series; a file holding other
// items is rewritten without the task; a hidden older version in another
// file leaves the op unknown, and a second delete removes it.
func TestDeleteTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	if got := e.w.PreviewDeleteTask(ctx, TaskDeleteArgs{Text: "rent"}); got != `delete task "Pay the rent" (rent) from list "home"` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.DeleteTask(ctx, "d1", TaskDeleteArgs{Text: "rent"})
	if err != nil || op.State != StateDone || op.Kind != KindTaskDelete || op.Href != "rent.ics" || op.Checks != 1 {
		t.Fatalf("delete %+v %v", op, err)
	}
	if _, err := os.Stat(filepath.Join(e.home, "rent.ics")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
	if got := e.open(t); strings.Contains(got, "rent") {
		t.Fatalf("open tasks: %s", got)
	}
	if op2, err := e.w.DeleteTask(ctx, "d1", TaskDeleteArgs{Text: "rent"}); err != nil || op2.ID != op.ID {
		t.Fatalf("repeat %+v %v", op2, err)
	}

	// Recurring: refused without series, the whole series with it.
	if _, err := e.w.DeleteTask(ctx, "d2", TaskDeleteArgs{UID: "plants"}); err == nil || !strings.Contains(err.Error(), "series: true") || !strings.Contains(err.Error(), "tasks_complete") {
		t.Fatalf("recurring without series: %v", err)
	}
	if got := e.w.PreviewDeleteTask(ctx, TaskDeleteArgs{UID: "plants"}); !strings.HasPrefix(got, "invalid: ") {
		t.Fatalf("recurring preview without series %q", got)
	}
	if _, err := e.w.DeleteTask(ctx, "d3", TaskDeleteArgs{UID: "milk", Series: true}); err == nil || !strings.Contains(err.Error(), "does not repeat") {
		t.Fatalf("series on a single task: %v", err)
	}
	if got := e.w.PreviewDeleteTask(ctx, TaskDeleteArgs{UID: "plants", Series: true}); got != `delete task "Water the plants" (plants) from list "home": the whole repeating series (FREQ=WEEKLY;BYDAY=MO), every occurrence` {
		t.Fatalf("series preview %q", got)
	}
	if op, err = e.w.DeleteTask(ctx, "d4", TaskDeleteArgs{UID: "plants", Series: true}); err != nil || op.State != StateDone {
		t.Fatalf("series delete %+v %v", op, err)
	}

	// A file holding two tasks and a time zone keeps the other one.
	e.writeTodos(t, "pair.ics", "UID:pair-a\nSUMMARY:Fix the bike", "UID:pair-b\nSUMMARY:Oil the chain")
	if got := e.w.PreviewDeleteTask(ctx, TaskDeleteArgs{UID: "pair-a"}); !strings.HasSuffix(got, "; its file pair.ics holds 1 other item(s), which are kept") {
		t.Fatalf("shared-file preview %q", got)
	}
	if op, err = e.w.DeleteTask(ctx, "d5", TaskDeleteArgs{UID: "pair-a"}); err != nil || op.State != StateDone || op.ETag == "" {
		t.Fatalf("shared-file delete %+v %v", op, err)
	}
	data := e.file(t, "pair.ics")
	lacks(t, data, "pair-a", "Fix the bike")
	has(t, data, "UID:pair-b", "Oil the chain")

	// A completed task is deleted by uid.
	if _, err := e.w.CompleteTask(ctx, "c1", TaskCompleteArgs{UID: "milk-oat"}); err != nil {
		t.Fatal(err)
	}
	if got := e.w.PreviewDeleteTask(ctx, TaskDeleteArgs{UID: "milk-oat"}); !strings.HasPrefix(got, `delete completed task "Buy milk (oat)"`) {
		t.Fatalf("completed preview %q", got)
	}
	if op, err = e.w.DeleteTask(ctx, "d6", TaskDeleteArgs{UID: "milk-oat"}); err != nil || op.State != StateDone {
		t.Fatalf("completed delete %+v %v", op, err)
	}

	// An older version of milk in another file: the shown one goes, the
	// older one shows, and the op says so; deleting again removes it.
	e.writeTodos(t, "milk-old.ics", "UID:milk\nSUMMARY:Buy milk (old)\nSEQUENCE:0")
	e.writeTodos(t, "milk.ics", "UID:milk\nSUMMARY:Buy milk\nSEQUENCE:3")
	op, err = e.w.DeleteTask(ctx, "d7", TaskDeleteArgs{UID: "milk"})
	if err != nil || op.State != StateUnknown || op.Href != "milk.ics" || !strings.Contains(op.Error, "milk-old.ics holds another version") {
		t.Fatalf("delete with a hidden version %+v %v", op, err)
	}
	if op, err = e.w.DeleteTask(ctx, "d8", TaskDeleteArgs{UID: "milk"}); err != nil || op.State != StateDone || op.Href != "milk-old.ics" {
		t.Fatalf("second delete %+v %v", op, err)
	}
	if got := e.open(t); got != "Boss's task|Oil the chain" {
		t.Fatalf("open tasks at the end: %s", got)
	}
}

// TestTaskEditsRefused: bad or hostile changes and deletes are refused
// with a clear error and leave every file as it was.
func TestTaskEditsRefused(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	before := snapshot(t, e.home, e.ro)
	updates := []struct {
		a    TaskUpdateArgs
		want string
	}{
		{TaskUpdateArgs{UID: "milk"}, "nothing to change"},
		{TaskUpdateArgs{Summary: ptr("x")}, "uid or words"},
		{TaskUpdateArgs{UID: "milk", Summary: ptr("  ")}, "summary cannot be emptied"},
		{TaskUpdateArgs{UID: "milk", Summary: ptr("x\r\nATTENDEE:mailto:eve@attacker.test")}, "control character"},
		{TaskUpdateArgs{UID: "milk", Notes: ptr("a\x00b")}, "control character"},
		{TaskUpdateArgs{UID: "milk", Notes: ptr(strings.Repeat("x", 5000))}, "longer than"},
		{TaskUpdateArgs{UID: "milk", Priority: ptr(10)}, "priority is 1"},
		{TaskUpdateArgs{UID: "milk", Priority: ptr(-1)}, "priority is 1"},
		{TaskUpdateArgs{UID: "milk", Due: ptr("someday")}, "not a time"},
		{TaskUpdateArgs{UID: "milk", Due: ptr(" ")}, "due is empty"},
		{TaskUpdateArgs{UID: "milk", Due: ptr("2099-01-01")}, "20 years"},
		{TaskUpdateArgs{UID: "milk", Due: ptr("none")}, "no due date to clear"},
		{TaskUpdateArgs{UID: "boss", Summary: ptr("mine now")}, "read-only"},
		{TaskUpdateArgs{UID: "nope", Summary: ptr("x")}, "no task with uid"},
		{TaskUpdateArgs{Text: "milk", Summary: ptr("x")}, `2 open tasks match "milk": "Buy milk" (uid milk, list home), "Buy milk (oat)" (uid milk-oat, list home); give the uid`},
		{TaskUpdateArgs{Text: "nothing like this", Summary: ptr("x")}, "no open task matches"},
		{TaskUpdateArgs{UID: "milk", List: "nope", Summary: ptr("x")}, "nope"},
	}
	for _, c := range updates {
		if _, err := e.w.UpdateTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("update %+v: %v (want %q)", c.a, err, c.want)
		}
		if got := e.w.PreviewUpdateTask(ctx, c.a); !strings.HasPrefix(got, "invalid: ") {
			t.Errorf("preview of %+v: %q", c.a, got)
		}
	}
	deletes := []struct {
		a    TaskDeleteArgs
		want string
	}{
		{TaskDeleteArgs{}, "uid or words"},
		{TaskDeleteArgs{UID: "boss"}, "read-only"},
		{TaskDeleteArgs{Text: "milk"}, "give the uid"},
		{TaskDeleteArgs{UID: "plants"}, "repeats"},
		{TaskDeleteArgs{UID: "rent", Series: true}, "does not repeat"},
	}
	for _, c := range deletes {
		if _, err := e.w.DeleteTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("delete %+v: %v (want %q)", c.a, err, c.want)
		}
	}
	if after := snapshot(t, e.home, e.ro); after != before {
		t.Fatalf("files changed by refused writes")
	}
	if ops, _ := e.w.List(ctx, "", 10); len(ops) != 0 {
		t.Fatalf("refused writes were journaled: %+v", ops)
	}
}

// meddler is a backend where another client changes an object right
// after it is first read: the write that follows holds a stale ETag.
type meddler struct {
	Backend
	href   string
	change func(data []byte) []byte
	once   sync.Once
}

func (m *meddler) Get(ctx context.Context, href string) (Object, error) {
	obj, err := m.Backend.Get(ctx, href)
	if err == nil && href == m.href {
		m.once.Do(func() {
			cur, _ := m.Backend.Get(ctx, href)
			if _, err := m.Backend.Update(ctx, href, m.change(cur.Data), cur.ETag); err != nil {
				panic(err)
			}
		})
	}
	return obj, err
}

// TestTaskChangedUnderTheWrite: a task changed by another client between
// the writer's read and its write is not clobbered — the update and the
// delete are refused as conflicts and journaled failed, the other
// client's version kept; a change made between the card and the write is
// kept too, since the write reads the task afresh and sets only its
// fields.
func TestTaskChangedUnderTheWrite(t *testing.T) {
	t.Parallel()
	elsewhere := func(b []byte) []byte {
		return []byte(strings.Replace(string(b), "SUMMARY:Pay the rent", "SUMMARY:Pay the rent (changed elsewhere)", 1))
	}
	var m *meddler
	e := setupTasksWith(t, func(b Backend) Backend {
		if m == nil {
			m = &meddler{Backend: b, href: "rent.ics", change: elsewhere}
		}
		if v, ok := b.(Vdir); ok && strings.HasSuffix(v.Dir, "home") {
			return m
		}
		return b
	})
	ctx := context.Background()
	op, err := e.w.UpdateTask(ctx, "u1", TaskUpdateArgs{UID: "rent", Priority: ptr(5)})
	if !errors.Is(err, ErrConflict) || op.State != StateFailed || op.ID == 0 {
		t.Fatalf("stale update %+v %v", op, err)
	}
	data := e.file(t, "rent.ics")
	has(t, data, "SUMMARY:Pay the rent (changed elsewhere)", "PRIORITY:1")

	m.once = sync.Once{}
	m.change = func(b []byte) []byte { return append(b, ' ') }
	e.sync(t)
	op, err = e.w.DeleteTask(ctx, "d1", TaskDeleteArgs{UID: "rent"})
	if !errors.Is(err, ErrConflict) || op.State != StateFailed {
		t.Fatalf("stale delete %+v %v", op, err)
	}
	if _, err := os.Stat(filepath.Join(e.home, "rent.ics")); err != nil {
		t.Fatal("a stale delete removed the file")
	}

	// Card first, then someone changes the priority, then the write: the
	// title is set and the other client's priority kept.
	m.href = "" // no more meddling
	a := TaskUpdateArgs{UID: "milk", Summary: ptr("Buy whole milk")}
	if got := e.w.PreviewUpdateTask(ctx, a); !strings.Contains(got, `title "Buy milk" → "Buy whole milk"`) {
		t.Fatalf("preview %q", got)
	}
	os.WriteFile(filepath.Join(e.home, "milk.ics"), []byte(strings.Replace(e.file(t, "milk.ics"), "SUMMARY:Buy milk", "SUMMARY:Buy milk\r\nPRIORITY:2", 1)), 0o644)
	if op, err = e.w.UpdateTask(ctx, "u2", a); err != nil || op.State != StateDone {
		t.Fatalf("update after another change %+v %v", op, err)
	}
	has(t, e.file(t, "milk.ics"), "SUMMARY:Buy whole milk", "PRIORITY:2")
	failed, _ := e.w.List(ctx, StateFailed, 10)
	if len(failed) != 2 || failed[0].Kind != KindTaskDelete || failed[1].Kind != KindTaskUpdate {
		t.Fatalf("journal %+v", failed)
	}
}

// TestConfirmPendingTaskDelete: a task delete left unknown is settled by
// reading back: the object gone (or no longer holding the task) is done.
func TestConfirmPendingTaskDelete(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	if _, _, err := e.w.begin(ctx, "k1", Op{Kind: KindTaskDelete, Calendar: "home", UID: "gone", Href: "gone.ics"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.w.begin(ctx, "k2", Op{Kind: KindTaskDelete, Calendar: "home", UID: "milk", Href: "milk.ics"}); err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(2 * time.Minute)
	if n, err := e.w.ConfirmPending(ctx, 10); err != nil || n != 1 {
		t.Fatalf("confirm: %d %v", n, err)
	}
	done, _ := e.w.List(ctx, StateDone, 10)
	unknown, _ := e.w.List(ctx, StateUnknown, 10)
	if len(done) != 1 || done[0].UID != "gone" || len(unknown) != 1 || unknown[0].UID != "milk" {
		t.Fatalf("done %+v, unknown %+v", done, unknown)
	}
}
