package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// outline renders tasks as "  " per depth + summary, one per line.
func outline(ts []calendar.Task) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", t.Depth), t.Summary)
	}
	return b.String()
}

func TestNest(t *testing.T) {
	t.Parallel()
	tk := func(list, uid, parent string) calendar.Task {
		return calendar.Task{List: list, UID: uid, Summary: uid, Parent: parent}
	}
	for _, c := range []struct {
		name string
		in   []calendar.Task
		want string
	}{
		{"flat", []calendar.Task{tk("h", "a", ""), tk("h", "b", "")}, "a\nb\n"},
		{"children follow their parent, in the order given",
			[]calendar.Task{tk("h", "van", "move"), tk("h", "milk", ""), tk("h", "move", ""), tk("h", "plates", "kitchen"), tk("h", "kitchen", "move")},
			// The tree stands where its most urgent task (the van) was.
			"move\n  van\n  kitchen\n    plates\nmilk\n"},
		{"a parent left out by the filter", []calendar.Task{tk("h", "van", "move"), tk("h", "milk", "")}, "van\nmilk\n"},
		{"same uid in another list is not the parent", []calendar.Task{tk("w", "move", ""), tk("h", "van", "move")}, "move\nvan\n"},
		{"a cycle from several answers is listed once", []calendar.Task{tk("h", "a", "b"), tk("h", "b", "a"), tk("h", "c", "")}, "c\na\n  b\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := outline(Nest(c.in)); got != c.want {
				t.Fatalf("got\n%swant\n%s", got, c.want)
			}
		})
	}
}

// moveHouse adds a task with subtasks to the env's list.
func (e *env) moveHouse(t *testing.T) {
	t.Helper()
	for name, body := range map[string][]byte{
		"move.ics":    todoFile("move", "SUMMARY:Move house"),
		"van.ics":     todoFile("van", "SUMMARY:Book the van\nRELATED-TO;RELTYPE=PARENT:move\nDUE;VALUE=DATE:20260321"),
		"kitchen.ics": todoFile("kitchen", "SUMMARY:Pack the kitchen\nRELATED-TO:move"),
		"cups.ics":    todoFile("cups", "SUMMARY:Wrap the cups\nRELATED-TO:kitchen\nSTATUS:COMPLETED\nCOMPLETED:20260319T100000Z"),
	} {
		if err := os.WriteFile(filepath.Join(e.dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.d.Store.Sync(context.Background(), calendar.Source{Name: "home", Path: e.dir}); err != nil {
		t.Fatal(err)
	}
}

// TestListSubtasks: tasks_list answers subtasks under their parents with
// parent, parent_summary, depth and the parents' counts; a filter still
// finds a subtask alone, with its parent's title.
func TestListSubtasks(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.moveHouse(t)
	r, res := e.list(t, `{}`)
	if res.IsError {
		t.Fatal(res.Content)
	}
	want := "Pay the rent\nSend the invoice\nMove house\n  Book the van\n  Pack the kitchen\nPlan the trip\nRead the manual\nBuy milk\n"
	if got := outline(r.Tasks); got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
	for _, want := range []string{`"parent":"move","parent_summary":"Move house","depth":1`, `"uid":"move","summary":"Move house","subtasks":2`} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("answer lacks %s:\n%s", want, res.Content)
		}
	}
	r, _ = e.list(t, `{"query":"kitchen"}`)
	if len(r.Tasks) != 1 || r.Tasks[0].ParentSummary != "Move house" || r.Tasks[0].Depth != 0 || r.Tasks[0].Subtasks != 1 || r.Tasks[0].SubtasksDone != 1 {
		t.Fatalf("search: %+v", r.Tasks)
	}
	r, _ = e.list(t, `{"due":"today"}`)
	if got := outline(r.Tasks); got != "Pay the rent\nSend the invoice\n" {
		t.Fatalf("due today: %s", got)
	}
	r, _ = e.list(t, `{"due":"week"}`)
	if got := outline(r.Tasks); got != "Pay the rent\nSend the invoice\nBook the van\nPlan the trip\n" {
		t.Fatalf("due this week: %s", got)
	}
}

// TestSubtaskWrites: the tools take parent and with_subtasks; completing
// or deleting a task with subtasks is refused, naming them, unless
// with_subtasks, and the card says what goes with it; the answer lists
// the subtasks' ops.
func TestSubtaskWrites(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.moveHouse(t)
	ctx := context.Background()
	auth := e.auth(policy.Config{AutoApprove: policy.ThresholdLow})
	prev := func(tool, args string) string {
		tl, err := e.reg.Get(tool)
		if err != nil {
			t.Fatal(err)
		}
		return tl.(tools.Previewer).Preview(ctx, json.RawMessage(args))
	}
	if got := prev("tasks_add", `{"summary":"Label the boxes","parent":"move house"}`); got != `add subtask "Label the boxes" under "Move house" (move) to list "home"` {
		t.Fatalf("add card %q", got)
	}
	op, err := Command(ctx, auth, "hestia tasks add", "tasks_add", calwrite.TaskAddArgs{Summary: "Label the boxes", Parent: "move house"})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("add subtask %+v %v", op, err)
	}
	if _, err := Command(ctx, auth, "Agenda page", "tasks_complete", calwrite.TaskCompleteArgs{UID: "move"}); !errors.Is(err, ErrFailed) ||
		!strings.Contains(err.Error(), `task "Move house" has 3 open subtasks: "Book the van", "Label the boxes", "Pack the kitchen"`) {
		t.Fatalf("complete with open subtasks: %v", err)
	}
	if got := prev("tasks_complete", `{"uid":"move","with_subtasks":true}`); got != `complete task "Move house" (move) in list "home", and with it its 3 open subtasks: "Book the van", "Label the boxes", "Pack the kitchen"` {
		t.Fatalf("complete card %q", got)
	}
	// From a chat, with_subtasks waits for the card as any completion.
	chat := authority.Origin{Kind: authority.Chat, ChatID: "c", Ask: authority.Refuse}
	if out := auth.Invoke(ctx, chat, authority.Call{Tool: "tasks_complete", Args: `{"uid":"move","with_subtasks":true}`}); out.Ran || out.Decision != authority.Deferred {
		t.Fatalf("with_subtasks from a chat ran unasked: %+v", out)
	}
	res, err := Command(ctx, auth, "Agenda page", "tasks_complete", calwrite.TaskCompleteArgs{UID: "move", WithSubtasks: true})
	if err != nil || res.State != calwrite.StateDone || res.UID != "move" || len(res.Subtasks) != 3 {
		t.Fatalf("complete with subtasks %+v %v", res, err)
	}
	r, _ := e.list(t, `{}`)
	if got := outline(r.Tasks); strings.Contains(got, "Move") || strings.Contains(got, "van") {
		t.Fatalf("still open:\n%s", got)
	}
	// Moved: a task under another, then back to the top.
	if got := prev("tasks_update", `{"uid":"milk","parent":"plan the trip"}`); got != `update task "Buy milk" (milk) in list "home": parent none → "Plan the trip"` {
		t.Fatalf("move card %q", got)
	}
	if op, err = Command(ctx, auth, "hestia tasks edit", "tasks_update", calwrite.TaskUpdateArgs{UID: "milk", Parent: ptr("plan the trip")}); err != nil || op.State != calwrite.StateDone {
		t.Fatalf("move %+v %v", op, err)
	}
	r, _ = e.list(t, `{"query":"milk"}`)
	if len(r.Tasks) != 1 || r.Tasks[0].Parent != "trip" {
		t.Fatalf("moved: %+v", r.Tasks)
	}
	// Deleted with its subtasks (the completed ones too).
	if _, err := Command(ctx, auth, "Agenda page", "tasks_delete", calwrite.TaskDeleteArgs{UID: "trip"}); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), `has 1 subtask: "Buy milk"`) {
		t.Fatalf("delete with a subtask: %v", err)
	}
	if res, err = Command(ctx, auth, "Agenda page", "tasks_delete", calwrite.TaskDeleteArgs{UID: "trip", WithSubtasks: true}); err != nil || res.State != calwrite.StateDone || len(res.Subtasks) != 1 || res.Subtasks[0].UID != "milk" {
		t.Fatalf("delete with subtasks %+v %v", res, err)
	}
	for _, f := range []string{"trip.ics", "milk.ics"} {
		if _, err := os.Stat(filepath.Join(e.dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if _, err := Command(ctx, auth, "hestia tasks add", "tasks_add", map[string]any{"summary": "x", "parent": ""}); !errors.Is(err, ErrBadArgs) {
		t.Fatalf("empty parent: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
