package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTasksSubtasks: hestia tasks lists subtasks indented under their
// parent (which says how many are done), a search shows a subtask with
// its parent's title; add --parent, edit --parent, and done/delete
// --with-subtasks write them, and without --with-subtasks a parent is
// refused, its subtasks named.
func TestTasksSubtasks(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"HESTIA_CALENDAR_TIMEZONE": "Europe/Rome"}
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	now := time.Now().In(loc)
	dir := filepath.Join(t.TempDir(), "home")
	writeTodoFile(t, dir, "move.ics", "UID:move\nSUMMARY:Move house")
	writeTodoFile(t, dir, "van.ics", "UID:van\nSUMMARY:Book the van\nRELATED-TO;RELTYPE=PARENT:move\nDUE;VALUE=DATE:"+now.AddDate(0, 0, 3).Format("20060102"))
	writeTodoFile(t, dir, "kitchen.ics", "UID:kitchen\nSUMMARY:Pack the kitchen\nRELATED-TO:move")
	writeTodoFile(t, dir, "plates.ics", "UID:plates\nSUMMARY:Wrap the plates\nRELATED-TO:kitchen")
	writeTodoFile(t, dir, "cups.ics", "UID:cups\nSUMMARY:Wrap the cups\nRELATED-TO:kitchen\nSTATUS:COMPLETED\nCOMPLETED:20260301T100000Z")
	writeTodoFile(t, dir, "milk.ics", "UID:milk\nSUMMARY:Buy milk")
	if r := run(t, home, env, "cal", "import", dir, "--name", "home"); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	file := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return string(b)
	}
	r := run(t, home, env, "tasks")
	due := now.AddDate(0, 0, 3).Format("Mon 2006-01-02")
	// The tree is listed where its most urgent task, the van, belongs.
	want := "Next 7 days\n" +
		"  [ ] Move house (0 of 2 done)  [home]  move\n" +
		"      [ ] " + due + "  Book the van  [home]  van\n" +
		"      [ ] Pack the kitchen (1 of 2 done)  [home]  kitchen\n" +
		"          [ ] Wrap the plates  [home]  plates\n" +
		"No due date\n" +
		"  [ ] Buy milk  [home]  milk\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("tasks:\n%s\nwant\n%s", r.stdout, want)
	}
	if r = run(t, home, env, "tasks", "list", "kitchen"); r.code != 0 || r.stdout != "No due date\n  [ ] Pack the kitchen (1 of 2 done) — in Move house  [home]  kitchen\n" {
		t.Fatalf("search:\n%s%s", r.stdout, r.stderr)
	}
	r = run(t, home, env, "tasks", "--json")
	if r.code != 0 || !json.Valid([]byte(r.stdout)) || !strings.Contains(r.stdout, `"parent": "move"`) || !strings.Contains(r.stdout, `"subtasks_done": 1`) {
		t.Fatalf("--json: %+v", r)
	}

	r = run(t, home, env, "tasks", "add", "Label the boxes", "--parent", "move house", "--json")
	var out struct {
		Operation struct{ State, Href string }
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &out) != nil || out.Operation.State != "done" {
		t.Fatalf("add --parent: %+v", r)
	}
	if got := file(out.Operation.Href); !strings.Contains(got, "RELATED-TO;RELTYPE=PARENT:move") {
		t.Fatalf("added file:\n%s", got)
	}
	if r = run(t, home, env, "tasks", "add", "x", "--parent", "nothing like it"); r.code == 0 || !strings.Contains(r.stderr, `parent: no open task matches "nothing like it"`) {
		t.Fatalf("add --parent unknown: %+v", r)
	}
	if r = run(t, home, env, "tasks", "edit", "milk", "--parent", "pack the kitchen"); r.code != 0 || r.stdout != "updated \"Buy milk\" in home (milk)\n" {
		t.Fatalf("edit --parent: %+v", r)
	}
	if got := file("milk.ics"); !strings.Contains(got, "RELATED-TO;RELTYPE=PARENT:kitchen") {
		t.Fatalf("moved file:\n%s", got)
	}
	if r = run(t, home, env, "tasks", "edit", "milk", "--parent", "none"); r.code != 0 || strings.Contains(file("milk.ics"), "RELATED-TO") {
		t.Fatalf("edit --parent none: %+v\n%s", r, file("milk.ics"))
	}

	if r = run(t, home, env, "tasks", "done", "move"); r.code == 0 ||
		!strings.Contains(r.stderr, `task "Move house" has 4 open subtasks: "Book the van", "Label the boxes", "Pack the kitchen", "Wrap the plates"`) ||
		!strings.Contains(r.stderr, "--with-subtasks") {
		t.Fatalf("done with open subtasks: %+v", r)
	}
	r = run(t, home, env, "tasks", "done", "move", "--with-subtasks")
	want = "completed subtask \"Wrap the plates\" in home (plates)\n" +
		"completed subtask \"Pack the kitchen\" in home (kitchen)\n"
	if r.code != 0 || !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "completed \"Move house\" in home (move)\n") || strings.Count(r.stdout, "\n") != 5 {
		t.Fatalf("done --with-subtasks:\n%s%s", r.stdout, r.stderr)
	}
	if r = run(t, home, env, "tasks", "delete", "move"); r.code == 0 || !strings.Contains(r.stderr, `has 5 subtasks`) {
		t.Fatalf("delete with subtasks: %+v", r)
	}
	if r = run(t, home, env, "tasks", "delete", "move", "--with-subtasks"); r.code != 0 || strings.Count(r.stdout, "deleted subtask") != 5 {
		t.Fatalf("delete --with-subtasks: %+v", r)
	}
	for _, f := range []string{"move.ics", "van.ics", "kitchen.ics", "plates.ics", "cups.ics", out.Operation.Href} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s: %v", f, err)
		}
	}
	if r = run(t, home, env, "tasks"); r.stdout != "No due date\n  [ ] Buy milk  [home]  milk\n" {
		t.Fatalf("left:\n%s", r.stdout)
	}
}
