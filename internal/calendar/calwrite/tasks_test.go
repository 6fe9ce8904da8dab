package calwrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
)

type taskEnv struct {
	w        *Writer
	idx      *calendar.Store
	home, ro string
	loc      *time.Location
	now      time.Time
}

func crlf(s string) []byte {
	return []byte(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\n", "\r\n"))
}

const plantsICS = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//t//EN
BEGIN:VTODO
UID:plants
DTSTAMP:20260101T080000Z
SUMMARY:Water the plants
DTSTART;TZID=Europe/Rome:20260302T090000
DUE;TZID=Europe/Rome:20260302T180000
RRULE:FREQ=WEEKLY;BYDAY=MO
END:VTODO
END:VCALENDAR
`

func setupTasks(t *testing.T) *taskEnv {
	t.Helper()
	return setupTasksWith(t, nil)
}

// setupTasksWith is setupTasks with each list's backend wrapped by wrap
// (when not nil).
func setupTasksWith(t *testing.T, wrap func(Backend) Backend) *taskEnv {
	t.Helper()
	ctx := context.Background()
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	e := &taskEnv{loc: loc, now: time.Date(2026, 3, 20, 9, 0, 0, 0, loc)} // a Friday
	e.home, e.ro = filepath.Join(t.TempDir(), "home"), filepath.Join(t.TempDir(), "shared")
	os.MkdirAll(e.home, 0o755)
	os.MkdirAll(e.ro, 0o755)
	os.WriteFile(filepath.Join(e.home, "plants.ics"), crlf(plantsICS), 0o644)
	for name, body := range map[string]string{
		"rent.ics":  "UID:rent\nSUMMARY:Pay the rent\nDUE;VALUE=DATE:20260318\nPRIORITY:1",
		"milk.ics":  "UID:milk\nSUMMARY:Buy milk",
		"milk2.ics": "UID:milk-oat\nSUMMARY:Buy milk (oat)",
	} {
		os.WriteFile(filepath.Join(e.home, name), crlf("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:x\nBEGIN:VTODO\nDTSTAMP:20260101T080000Z\n"+body+"\nEND:VTODO\nEND:VCALENDAR\n"), 0o644)
	}
	os.WriteFile(filepath.Join(e.ro, "boss.ics"), crlf("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:x\nBEGIN:VTODO\nUID:boss\nDTSTAMP:20260101T080000Z\nSUMMARY:Boss's task\nEND:VTODO\nEND:VCALENDAR\n"), 0o644)
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	srcs := []calendar.Source{{Name: "home", Path: e.home}, {Name: "shared", Path: e.ro, ReadOnly: true}}
	for _, s := range srcs {
		if _, err := idx.Sync(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	targets := func(ctx context.Context) (map[string]Target, error) {
		m := map[string]Target{}
		for _, s := range srcs {
			var be Backend = Vdir{Dir: s.Path}
			if wrap != nil {
				be = wrap(be)
			}
			m[s.Name] = Target{Name: s.Name, ReadOnly: s.ReadOnly, Backend: be, Resync: func(ctx context.Context) error { _, err := idx.Sync(ctx, s); return err }}
		}
		return m, nil
	}
	w, err := Open(ctx, Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e.w, e.idx = w, idx
	return e
}

func (e *taskEnv) open(t *testing.T) string {
	t.Helper()
	ts, err := e.idx.Todos(context.Background(), calendar.TodoQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range ts {
		s := x.Summary
		if x.Due != nil {
			s += " " + x.Due.In(e.loc).Format("01-02")
		}
		out = append(out, s)
	}
	return strings.Join(out, "|")
}

func TestAddTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	// With two lists holding tasks (one read-only), the writable one is
	// picked.
	a := TaskAddArgs{Summary: "Call the plumber", Due: "2026-03-24", Priority: 2, Notes: "leak under the sink\nsince Monday"}
	if got := e.w.PreviewAddTask(ctx, a); got != `add task "Call the plumber" due Tue 2026-03-24 (priority 2), with notes to list "home"` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.AddTask(ctx, "k1", a)
	if err != nil || op.State != StateDone || op.Kind != KindTaskCreate || op.Calendar != "home" || op.ETag == "" {
		t.Fatalf("add %+v %v", op, err)
	}
	data, _ := os.ReadFile(filepath.Join(e.home, op.Href))
	for _, want := range []string{"BEGIN:VTODO", "UID:" + op.UID, "DUE;VALUE=DATE:20260324", "PRIORITY:2", "STATUS:NEEDS-ACTION", `DESCRIPTION:leak under the sink\nsince Monday`} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("written file lacks %q:\n%s", want, data)
		}
	}
	// The same call again returns the first op; no second file.
	if op2, err := e.w.AddTask(ctx, "k1", a); err != nil || op2.ID != op.ID {
		t.Fatalf("repeat %+v %v", op2, err)
	}
	files, _ := filepath.Glob(filepath.Join(e.home, "*.ics"))
	if len(files) != 5 {
		t.Fatalf("files %v", files)
	}
	// A timed due date is written with the user's TZID.
	op, err = e.w.AddTask(ctx, "k2", TaskAddArgs{Summary: "Submit the form", Due: "2026-03-23T17:30", List: "home"})
	if err != nil || op.State != StateDone {
		t.Fatalf("timed add %+v %v", op, err)
	}
	data, _ = os.ReadFile(filepath.Join(e.home, op.Href))
	if !strings.Contains(string(data), "DUE;TZID=Europe/Rome:20260323T173000") {
		t.Fatalf("timed due:\n%s", data)
	}
	if got := e.open(t); got != "Water the plants 03-16|Pay the rent 03-18|Submit the form 03-23|Call the plumber 03-24|Boss's task|Buy milk|Buy milk (oat)" {
		t.Fatalf("open tasks after adds: %s", got)
	}
}

func TestCompleteTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	// Ambiguous words are refused with the candidates; the exact summary
	// picks one.
	if _, err := e.w.CompleteTask(ctx, "", TaskCompleteArgs{Text: "milk"}); err == nil || !strings.Contains(err.Error(), "2 open tasks match") || !strings.Contains(err.Error(), "uid milk-oat") {
		t.Fatalf("ambiguous: %v", err)
	}
	if got := e.w.PreviewCompleteTask(ctx, TaskCompleteArgs{Text: "buy milk"}); got != `complete task "Buy milk" (milk) in list "home"` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.CompleteTask(ctx, "c1", TaskCompleteArgs{Text: "buy milk"})
	if err != nil || op.State != StateDone || op.Kind != KindTaskComplete || op.UID != "milk" {
		t.Fatalf("complete %+v %v", op, err)
	}
	data, _ := os.ReadFile(filepath.Join(e.home, "milk.ics"))
	for _, want := range []string{"STATUS:COMPLETED", "COMPLETED:20260320T080000Z", "PERCENT-COMPLETE:100", "SEQUENCE:1", "DTSTAMP:20260320T080000Z"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("completed file lacks %q:\n%s", want, data)
		}
	}
	if _, err := e.w.CompleteTask(ctx, "c2", TaskCompleteArgs{UID: "milk"}); err == nil || !strings.Contains(err.Error(), "already completed") {
		t.Fatalf("second completion: %v", err)
	}
	// A recurring task: the occurrence shown (Monday the 16th, missed) is
	// completed by an override, and the series moves to the 23rd.
	if got := e.w.PreviewCompleteTask(ctx, TaskCompleteArgs{UID: "plants"}); !strings.Contains(got, "the occurrence of Mon 2026-03-16 (the series goes on)") {
		t.Fatalf("recurring preview %q", got)
	}
	op, err = e.w.CompleteTask(ctx, "c3", TaskCompleteArgs{UID: "plants"})
	if err != nil || op.State != StateDone || op.Instance != "2026-03-16T09:00:00+01:00" {
		t.Fatalf("recurring complete %+v %v", op, err)
	}
	data, _ = os.ReadFile(filepath.Join(e.home, "plants.ics"))
	for _, want := range []string{"RECURRENCE-ID;TZID=Europe/Rome:20260316T090000", "DUE;TZID=Europe/Rome:20260316T180000", "RRULE:FREQ=WEEKLY;BYDAY=MO"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("recurring file lacks %q:\n%s", want, data)
		}
	}
	if strings.Count(string(data), "RRULE") != 1 {
		t.Fatalf("the override carries the rule:\n%s", data)
	}
	if got := e.open(t); got != "Pay the rent 03-18|Water the plants 03-23|Boss's task|Buy milk (oat)" {
		t.Fatalf("open tasks after completions: %s", got)
	}
	// Completing it again completes the 23rd, the next one, ahead of
	// time; the 30th is next.
	if _, err := e.w.CompleteTask(ctx, "c4", TaskCompleteArgs{Text: "plants"}); err != nil {
		t.Fatal(err)
	}
	if got := e.open(t); !strings.Contains(got, "Water the plants 03-30") {
		t.Fatalf("after a second completion: %s", got)
	}
	ops, _ := e.w.List(ctx, StateDone, 10)
	if len(ops) != 3 {
		t.Fatalf("journal %+v", ops)
	}
}

// TestTaskWritesRefused: bad, hostile or stale task writes are refused
// with a clear error and leave every file as it was.
func TestTaskWritesRefused(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	before := snapshot(t, e.home, e.ro)
	adds := []struct {
		a    TaskAddArgs
		want string
	}{
		{TaskAddArgs{Summary: " "}, "summary is required"},
		{TaskAddArgs{Summary: "x\r\nATTENDEE:mailto:eve@attacker.test"}, "control character"},
		{TaskAddArgs{Summary: "x", Priority: 11}, "priority"},
		{TaskAddArgs{Summary: "x", Due: "someday"}, "not a time"},
		{TaskAddArgs{Summary: "x", Due: "2099-01-01"}, "20 years"},
		{TaskAddArgs{Summary: "x", List: "shared"}, "read-only"},
		{TaskAddArgs{Summary: "x", List: "../etc"}, `no task list "../etc"`},
		{TaskAddArgs{Summary: strings.Repeat("x", 5000)}, "longer than"},
	}
	for _, c := range adds {
		if _, err := e.w.AddTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("add %+v: %v (want %q)", c.a, err, c.want)
		}
	}
	completes := []struct {
		a    TaskCompleteArgs
		want string
	}{
		{TaskCompleteArgs{}, "uid or words"},
		{TaskCompleteArgs{UID: "nope"}, "no task with uid"},
		{TaskCompleteArgs{UID: "boss"}, "read-only"},
		{TaskCompleteArgs{Text: "nothing like this"}, "no open task matches"},
		{TaskCompleteArgs{Text: "milk"}, "give the uid"},
		{TaskCompleteArgs{UID: "milk", List: "nope"}, "nope"},
	}
	for _, c := range completes {
		if _, err := e.w.CompleteTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("complete %+v: %v (want %q)", c.a, err, c.want)
		}
	}
	if after := snapshot(t, e.home, e.ro); after != before {
		t.Fatalf("files changed by refused writes")
	}
	// The file changed between planning and writing: the conditional
	// update is a conflict, journaled failed, and the newer file kept.
	p, err := e.w.planCompletion(ctx, TaskCompleteArgs{UID: "rent"}, false)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(e.home, "rent.ics"), append(p.obj.Data, ' '), 0o644)
	if _, err := p.target.Backend.Update(ctx, p.obj.Href, p.data, p.obj.ETag); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
}

// TestConfirmPendingTask: a task create left unknown (the daemon stopped
// between write and confirmation) is settled by reading back, never
// written again.
func TestConfirmPendingTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	op, _, err := e.w.begin(ctx, "k", Op{Kind: KindTaskCreate, Calendar: "home", UID: "ghost@hestia", Href: hrefFor("ghost@hestia"), Summary: "ghost"})
	if err != nil {
		t.Fatal(err)
	}
	e.now = e.now.Add(2 * time.Minute)
	if n, err := e.w.ConfirmPending(ctx, 10); err != nil || n != 1 {
		t.Fatalf("confirm: %d %v", n, err)
	}
	ops, _ := e.w.List(ctx, StateFailed, 10)
	if len(ops) != 1 || ops[0].ID != op.ID || !strings.Contains(ops[0].Error, "never stored") {
		t.Fatalf("journal %+v", ops)
	}
}
