package calwrite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/calendar/davsync"
	"github.com/hestia-dev/hestia/internal/calendar/davsync/davtest"
)

// TestRadicaleSubtasks: subtasks written by other clients on a real
// CalDAV server (Radicale) nest under their parent once mirrored and
// indexed (a parent on no list, a cycle left at the top); a subtask added
// through the writer carries RELATED-TO;RELTYPE=PARENT on the server; a
// parent is completed only with with_subtasks, which completes its open
// subtasks on the server first; and deleted with them.
func TestRadicaleSubtasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := davtest.Start(t, "dora", davtest.Collection{Name: "todo", Display: "To do", Components: "VTODO"})
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	acc := davsync.Account{Name: "dav", URL: base, Username: "dora", Password: "x"}
	cols, err := davsync.Discover(ctx, acc)
	if err != nil || len(cols) != 1 {
		t.Fatalf("discover %+v %v", cols, err)
	}
	col := cols[0]
	mirror := filepath.Join(t.TempDir(), "todo")
	be := davsync.Backend{Account: acc, Collection: col.Path}
	for href, body := range map[string]string{
		// As Nextcloud Tasks and Thunderbird write them.
		"move.ics":    "UID:move\nSUMMARY:Move house\nRELATED-TO;RELTYPE=CHILD:van",
		"van.ics":     "UID:van\nSUMMARY:Book the van\nRELATED-TO;RELTYPE=PARENT:move\nDUE;VALUE=DATE:20260321",
		"kitchen.ics": "UID:kitchen\nSUMMARY:Pack the kitchen\nRELATED-TO:move",
		"plates.ics":  "UID:plates\nSUMMARY:Wrap the plates\nRELATED-TO:kitchen",
		"keys.ics":    "UID:keys\nSUMMARY:Return the keys\nRELATED-TO:a-task-on-no-list",
		"egg.ics":     "UID:egg\nSUMMARY:Egg\nRELATED-TO:hen",
		"hen.ics":     "UID:hen\nSUMMARY:Hen\nRELATED-TO:egg",
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
	targets := func(context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{src.Name: {Name: src.Name, Backend: be, Resync: resync}}, nil
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
	tree := func() string {
		t.Helper()
		ts, err := idx.Todos(ctx, calendar.TodoQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range ts {
			s := x.Summary
			if x.Parent != "" {
				s += "<" + x.ParentSummary
			}
			if x.Subtasks > 0 {
				s += fmt.Sprintf(" (%d/%d)", x.SubtasksDone, x.Subtasks)
			}
			out = append(out, s)
		}
		return strings.Join(out, "|")
	}
	if got := tree(); got != "Book the van<Move house|Egg|Hen|Move house (0/2)|Pack the kitchen<Move house (0/1)|Return the keys|Wrap the plates<Pack the kitchen" {
		t.Fatalf("tree: %s", got)
	}

	op, err := w.AddTask(ctx, "a1", calwrite.TaskAddArgs{Summary: "Wrap the glasses", Parent: "pack the kitchen"})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("add subtask %+v %v", op, err)
	}
	if got := server(op.Href); !strings.Contains(got, "RELATED-TO;RELTYPE=PARENT:kitchen") {
		t.Fatalf("server copy of the subtask:\n%s", got)
	}
	if got := tree(); !strings.Contains(got, "Pack the kitchen<Move house (0/2)|Return the keys|Wrap the glasses<Pack the kitchen|") {
		t.Fatalf("tree after adding: %s", got)
	}

	if _, err := w.CompleteTask(ctx, "c0", calwrite.TaskCompleteArgs{UID: "move"}); err == nil || !strings.Contains(err.Error(), `has 4 open subtasks: "Book the van", "Pack the kitchen", "Wrap the glasses", "Wrap the plates"`) {
		t.Fatalf("refusal: %v", err)
	}
	res, err := w.CompleteTaskWithSubtasks(ctx, "c1", calwrite.TaskCompleteArgs{Text: "move house", WithSubtasks: true})
	if err != nil || res.State != calwrite.StateDone || len(res.Subtasks) != 4 {
		t.Fatalf("complete with subtasks %+v %v", res, err)
	}
	for _, href := range []string{"move.ics", "van.ics", "kitchen.ics", "plates.ics", op.Href} {
		if got := server(href); !strings.Contains(got, "STATUS:COMPLETED") {
			t.Fatalf("server copy of %s:\n%s", href, got)
		}
	}
	if got := server("move.ics"); !strings.Contains(got, "RELATED-TO;RELTYPE=CHILD:van") {
		t.Fatalf("the parent lost its CHILD relation:\n%s", got)
	}
	if got := tree(); got != "Egg|Hen|Return the keys" {
		t.Fatalf("tree after completing: %s", got)
	}

	// Delete: refused with subtasks (done ones too), then with them.
	if _, err := w.DeleteTask(ctx, "d0", calwrite.TaskDeleteArgs{UID: "kitchen"}); err == nil || !strings.Contains(err.Error(), `has 2 subtasks`) {
		t.Fatalf("delete refusal: %v", err)
	}
	del, err := w.DeleteTaskWithSubtasks(ctx, "d1", calwrite.TaskDeleteArgs{UID: "move", WithSubtasks: true})
	if err != nil || del.State != calwrite.StateDone || len(del.Subtasks) != 4 {
		t.Fatalf("delete with subtasks %+v %v", del, err)
	}
	for _, href := range []string{"move.ics", "van.ics", "kitchen.ics", "plates.ics", op.Href} {
		if _, err := be.Get(ctx, href); !errors.Is(err, calwrite.ErrNotFound) {
			t.Fatalf("%s is still on the server: %v", href, err)
		}
	}
}
