package calwrite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// tree renders the home list's open tasks as "summary<parent" lines.
func (e *taskEnv) tree(t *testing.T) string {
	t.Helper()
	ts, err := e.idx.Todos(context.Background(), calendar.TodoQuery{Lists: []string{"home"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range ts {
		s := x.Summary
		if x.Parent != "" {
			s += "<" + x.ParentSummary
		}
		out = append(out, s)
	}
	return strings.Join(out, "|")
}

func (e *taskEnv) moveHouse(t *testing.T) {
	t.Helper()
	e.writeTodos(t, "move.ics", "UID:move\nSUMMARY:Move house\nRELATED-TO;RELTYPE=CHILD:van")
	e.writeTodos(t, "van.ics", "UID:van\nSUMMARY:Book the van\nRELATED-TO;RELTYPE=PARENT:move")
	e.writeTodos(t, "kitchen.ics", "UID:kitchen\nSUMMARY:Pack the kitchen\nRELATED-TO:move\nRELATED-TO;RELTYPE=SIBLING:van")
	e.writeTodos(t, "plates.ics", "UID:plates\nSUMMARY:Wrap the plates\nRELATED-TO:kitchen")
	e.writeTodos(t, "cups.ics", "UID:cups\nSUMMARY:Wrap the cups\nRELATED-TO:kitchen\nSTATUS:COMPLETED\nCOMPLETED:20260319T100000Z")
}

// TestAddSubtask: tasks_add with parent (words or uid) writes
// RELATED-TO;RELTYPE=PARENT in the parent's list; a parent in another
// list, a completed one, an unknown one and one nested too deep are
// refused, saying why.
func TestAddSubtask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	e.moveHouse(t)
	a := TaskAddArgs{Summary: "Label the boxes", Parent: "move house", Due: "2026-03-22"}
	if got := e.w.PreviewAddTask(ctx, a); got != `add subtask "Label the boxes" under "Move house" (move) due Sun 2026-03-22 to list "home"` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.AddTask(ctx, "a1", a)
	if err != nil || op.State != StateDone || op.Calendar != "home" {
		t.Fatalf("add %+v %v", op, err)
	}
	has(t, e.file(t, op.Href), "RELATED-TO;RELTYPE=PARENT:move", "SUMMARY:Label the boxes")
	// By uid, under a subtask.
	if op, err = e.w.AddTask(ctx, "a2", TaskAddArgs{Summary: "Wrap the glasses", Parent: "kitchen", List: "home"}); err != nil || op.State != StateDone {
		t.Fatalf("add by uid %+v %v", op, err)
	}
	want := "Label the boxes<Move house|Book the van<Move house|Buy milk|Buy milk (oat)|Move house|Pack the kitchen<Move house|Wrap the glasses<Pack the kitchen|Wrap the plates<Pack the kitchen"
	if got := e.tree(t); !strings.HasSuffix(got, want) {
		t.Fatalf("tree\n got %s\nwant …%s", got, want)
	}
	// Four levels below the top is the most.
	e.writeTodos(t, "deep.ics", "UID:l3\nSUMMARY:Level three\nRELATED-TO:plates", "UID:l4\nSUMMARY:Level four\nRELATED-TO:l3")
	before := snapshot(t, e.home, e.ro)
	for _, c := range []struct {
		a    TaskAddArgs
		want string
	}{
		{TaskAddArgs{Summary: "x", Parent: "boss", List: "home"}, `the parent task "Boss's task" is in list "shared", not "home": a subtask goes in its parent's list`},
		{TaskAddArgs{Summary: "x", Parent: "boss"}, `task list "shared": calendar is read-only`},
		{TaskAddArgs{Summary: "x", Parent: "cups"}, `the parent task "Wrap the cups" is completed`},
		{TaskAddArgs{Summary: "x", Parent: "nothing like it"}, `parent: no open task matches "nothing like it"`},
		{TaskAddArgs{Summary: "x", Parent: "wrap"}, `parent: 2 open tasks match "wrap"`},
		{TaskAddArgs{Summary: "x", Parent: "l4"}, `task "Level four" is 5 levels down already: subtasks nest at most 5 levels`},
	} {
		if _, err := e.w.AddTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("add %+v: %v (want %q)", c.a, err, c.want)
		}
		if got := e.w.PreviewAddTask(ctx, c.a); !strings.HasPrefix(got, "invalid: ") || !strings.Contains(got, c.want) {
			t.Errorf("preview %+v: %q", c.a, got)
		}
	}
	if after := snapshot(t, e.home, e.ro); after != before {
		t.Fatal("files changed by refused adds")
	}
}

// TestCompleteWithSubtasks: a task with open subtasks is completed only
// with with_subtasks, which completes them first (deepest first, each
// its own journaled op) and says so on the card; a repeated call writes
// nothing again; other relations stay in the files.
func TestCompleteWithSubtasks(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	e.moveHouse(t)
	before := snapshot(t, e.home)
	const refusal = `task "Move house" has 3 open subtasks: "Book the van", "Pack the kitchen", "Wrap the plates"; complete them first, or say with_subtasks: true`
	if _, err := e.w.CompleteTask(ctx, "c0", TaskCompleteArgs{Text: "move house"}); err == nil || !strings.Contains(err.Error(), refusal) {
		t.Fatalf("refusal: %v", err)
	}
	if got := e.w.PreviewCompleteTask(ctx, TaskCompleteArgs{UID: "move"}); !strings.HasPrefix(got, "invalid: "+refusal) {
		t.Fatalf("refused preview %q", got)
	}
	if snapshot(t, e.home) != before {
		t.Fatal("a refused completion wrote")
	}
	a := TaskCompleteArgs{UID: "move", WithSubtasks: true}
	if got := e.w.PreviewCompleteTask(ctx, a); got != `complete task "Move house" (move) in list "home", and with it its 3 open subtasks: "Book the van", "Pack the kitchen", "Wrap the plates"` {
		t.Fatalf("preview %q", got)
	}
	res, err := e.w.CompleteTaskWithSubtasks(ctx, "c1", a)
	if err != nil || res.State != StateDone || res.UID != "move" || len(res.Subtasks) != 3 {
		t.Fatalf("complete %+v %v", res, err)
	}
	var order []string
	for _, o := range res.Subtasks {
		if o.State != StateDone || o.Kind != KindTaskComplete {
			t.Fatalf("subtask op %+v", o)
		}
		order = append(order, o.UID)
	}
	if got := strings.Join(order, ","); got != "plates,kitchen,van" {
		t.Fatalf("completed in the order %s", got)
	}
	for _, f := range []string{"move.ics", "van.ics", "kitchen.ics", "plates.ics"} {
		has(t, e.file(t, f), "STATUS:COMPLETED")
	}
	has(t, e.file(t, "move.ics"), "RELATED-TO;RELTYPE=CHILD:van")
	has(t, e.file(t, "kitchen.ics"), "RELATED-TO:move", "RELATED-TO;RELTYPE=SIBLING:van")
	if got := e.tree(t); strings.Contains(got, "Move") || strings.Contains(got, "Wrap") {
		t.Fatalf("open tasks %s", got)
	}
	// The same call again: the same ops, nothing written.
	snap := snapshot(t, e.home)
	again, err := e.w.CompleteTaskWithSubtasks(ctx, "c1", a)
	if err != nil || again.ID != res.ID || len(again.Subtasks) != 3 || again.Subtasks[0].ID != res.Subtasks[0].ID {
		t.Fatalf("repeat %+v %v", again, err)
	}
	if snapshot(t, e.home) != snap {
		t.Fatal("a repeated call wrote again")
	}
	// A subtask alone, and a task whose subtasks are all done, complete
	// as any task.
	e.writeTodos(t, "a.ics", "UID:a\nSUMMARY:Plan the party", "UID:b\nSUMMARY:Send the invitations\nRELATED-TO:a")
	if op, err := e.w.CompleteTask(ctx, "c2", TaskCompleteArgs{Text: "invitations"}); err != nil || op.State != StateDone {
		t.Fatalf("subtask alone %+v %v", op, err)
	}
	if op, err := e.w.CompleteTask(ctx, "c3", TaskCompleteArgs{Text: "party"}); err != nil || op.State != StateDone {
		t.Fatalf("parent with its subtasks done %+v %v", op, err)
	}
}

// TestDeleteWithSubtasks: a task with subtasks (done ones too) is deleted
// only with with_subtasks; a repeating subtask needs series as well.
func TestDeleteWithSubtasks(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	e.moveHouse(t)
	before := snapshot(t, e.home)
	if _, err := e.w.DeleteTask(ctx, "d0", TaskDeleteArgs{UID: "move"}); err == nil || !strings.Contains(err.Error(),
		`task "Move house" has 4 subtasks: "Book the van", "Pack the kitchen", "Wrap the cups", "Wrap the plates"; delete them first, or say with_subtasks: true`) {
		t.Fatalf("refusal: %v", err)
	}
	if snapshot(t, e.home) != before {
		t.Fatal("a refused delete wrote")
	}
	// A repeating subtask: its series goes only with series.
	if err := os.WriteFile(filepath.Join(e.home, "plants.ics"), crlf(strings.Replace(plantsICS, "RRULE:", "RELATED-TO:kitchen\nRRULE:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	e.sync(t)
	before = snapshot(t, e.home)
	if _, err := e.w.DeleteTask(ctx, "d1", TaskDeleteArgs{UID: "kitchen", WithSubtasks: true}); err == nil || !strings.Contains(err.Error(), `task "Pack the kitchen" has 1 repeating subtask: deleting a repeating task deletes every occurrence`) {
		t.Fatalf("repeating subtask: %v", err)
	}
	if snapshot(t, e.home) != before {
		t.Fatal("a refused delete wrote")
	}
	a := TaskDeleteArgs{UID: "move", WithSubtasks: true, Series: true}
	want := `delete task "Move house" (move) from list "home", and with it its 5 subtasks: "Book the van", "Pack the kitchen", "Water the plants", "Wrap the cups", "Wrap the plates" (1 repeating one, every occurrence)`
	if got := e.w.PreviewDeleteTask(ctx, a); got != want {
		t.Fatalf("preview\n%s\nwant\n%s", got, want)
	}
	res, err := e.w.DeleteTaskWithSubtasks(ctx, "d2", a)
	if err != nil || res.State != StateDone || len(res.Subtasks) != 5 {
		t.Fatalf("delete %+v %v", res, err)
	}
	for _, f := range []string{"move.ics", "van.ics", "kitchen.ics", "plates.ics", "cups.ics", "plants.ics"} {
		if _, err := os.Stat(filepath.Join(e.home, f)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", f, err)
		}
	}
	if got := e.tree(t); got != "Pay the rent|Buy milk|Buy milk (oat)" {
		t.Fatalf("left %s", got)
	}
	if _, err := e.w.DeleteTask(ctx, "d3", TaskDeleteArgs{UID: "milk", Series: true}); err == nil || !strings.Contains(err.Error(), "does not repeat") {
		t.Fatalf("series on a plain task: %v", err)
	}
}

// TestMoveTask: tasks_update with parent moves a task under another of
// its list, or to the top with "none", keeping its other relations; a
// loop, itself, another list and too deep are refused.
func TestMoveTask(t *testing.T) {
	t.Parallel()
	e := setupTasks(t)
	ctx := context.Background()
	e.moveHouse(t)
	e.writeTodos(t, "milk.ics", "UID:milk\nSUMMARY:Buy milk\nRELATED-TO;RELTYPE=SIBLING:van")
	if got := e.w.PreviewUpdateTask(ctx, TaskUpdateArgs{UID: "milk", Parent: ptr("move")}); got != `update task "Buy milk" (milk) in list "home": parent none → "Move house"` {
		t.Fatalf("preview %q", got)
	}
	op, err := e.w.UpdateTask(ctx, "m1", TaskUpdateArgs{UID: "milk", Parent: ptr("move")})
	if err != nil || op.State != StateDone {
		t.Fatalf("move %+v %v", op, err)
	}
	has(t, e.file(t, "milk.ics"), "RELATED-TO;RELTYPE=PARENT:move", "RELATED-TO;RELTYPE=SIBLING:van", "SEQUENCE:1")
	// Under another parent: the relation is replaced.
	if op, err = e.w.UpdateTask(ctx, "m2", TaskUpdateArgs{UID: "milk", Parent: ptr("pack the kitchen")}); err != nil || op.State != StateDone {
		t.Fatalf("move again %+v %v", op, err)
	}
	data := e.file(t, "milk.ics")
	has(t, data, "RELATED-TO;RELTYPE=PARENT:kitchen", "RELATED-TO;RELTYPE=SIBLING:van")
	lacks(t, data, "PARENT:move")
	if got := e.w.PreviewUpdateTask(ctx, TaskUpdateArgs{UID: "milk", Parent: ptr("none"), Priority: ptr(2)}); got != `update task "Buy milk" (milk) in list "home": priority none → 2; parent "Pack the kitchen" → none` {
		t.Fatalf("to the top preview %q", got)
	}
	if op, err = e.w.UpdateTask(ctx, "m3", TaskUpdateArgs{UID: "milk", Parent: ptr("none")}); err != nil || op.State != StateDone {
		t.Fatalf("to the top %+v %v", op, err)
	}
	data = e.file(t, "milk.ics")
	has(t, data, "RELATED-TO;RELTYPE=SIBLING:van")
	lacks(t, data, "PARENT")
	// A subtask whose RELATED-TO has no RELTYPE moves to the top too.
	if op, err = e.w.UpdateTask(ctx, "m4", TaskUpdateArgs{UID: "kitchen", Parent: ptr("none")}); err != nil || op.State != StateDone {
		t.Fatalf("kitchen to the top %+v %v", op, err)
	}
	has(t, e.file(t, "kitchen.ics"), "RELATED-TO;RELTYPE=SIBLING:van")
	lacks(t, e.file(t, "kitchen.ics"), "RELATED-TO:move")
	e.writeTodos(t, "deep.ics", "UID:l2\nSUMMARY:Level two\nRELATED-TO:van", "UID:l3\nSUMMARY:Level three\nRELATED-TO:l2", "UID:l4\nSUMMARY:Level four\nRELATED-TO:l3")
	before := snapshot(t, e.home, e.ro)
	for _, c := range []struct {
		a    TaskUpdateArgs
		want string
	}{
		{TaskUpdateArgs{UID: "move", Parent: ptr("van")}, `task "Book the van" is a subtask of "Move house": moving "Move house" under it would make a loop`},
		{TaskUpdateArgs{UID: "move", Parent: ptr("move")}, `task "Move house" cannot be a subtask of itself`},
		{TaskUpdateArgs{UID: "milk", Parent: ptr("boss")}, `the parent task "Boss's task" is in list "shared", not "home": a task moves only under a task of its own list`},
		{TaskUpdateArgs{UID: "kitchen", Parent: ptr("l3")}, `task "Level three" is 4 levels down already: subtasks nest at most 5 levels`},
		{TaskUpdateArgs{UID: "milk", Parent: ptr("  ")}, `parent is empty`},
		{TaskUpdateArgs{UID: "milk", Parent: ptr("none")}, `nothing changes`},
		{TaskUpdateArgs{UID: "van", Parent: ptr("move")}, `nothing changes`},
	} {
		if _, err := e.w.UpdateTask(ctx, "", c.a); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("update %+v: %v (want %q)", c.a, err, c.want)
		}
	}
	if snapshot(t, e.home, e.ro) != before {
		t.Fatal("refused moves wrote")
	}
}
