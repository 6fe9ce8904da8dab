package app

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
)

// The task API with subtasks: GET /api/tasks answers each subtask's
// parent (uid and title) and depth under its parent, a parent's counts;
// POST /api/tasks adds a subtask with parent; completing or deleting a
// parent with subtasks is refused (409, the subtasks named) unless
// with_subtasks, and then the operation lists the subtasks' ops.
func TestTaskRoutesSubtasks(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "home")
	writeTodo(t, dir, "move", "SUMMARY:Move house")
	writeTodo(t, dir, "van", "SUMMARY:Book the van\nRELATED-TO;RELTYPE=PARENT:move")
	writeTodo(t, dir, "kitchen", "SUMMARY:Pack the kitchen\nRELATED-TO:move\nSTATUS:COMPLETED\nCOMPLETED:20260301T100000Z")
	writeTodo(t, dir, "milk", "SUMMARY:Buy milk")
	a := testApp(t, t.TempDir())
	a.Config.Calendar.Sources = []config.VdirSource{{Name: "home", Path: dir}}
	a.Config.Calendar.Timezone = "UTC"
	base, stop := start(t, a)
	defer stop()
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type task struct {
		UID           string `json:"uid"`
		Parent        string `json:"parent"`
		ParentSummary string `json:"parent_summary"`
		Depth         int    `json:"depth"`
		Subtasks      int    `json:"subtasks"`
		SubtasksDone  int    `json:"subtasks_done"`
	}
	list := func() []task {
		t.Helper()
		code, body := call("GET", "/api/tasks", "")
		var r struct{ Tasks []task }
		if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("GET /api/tasks: %d %s", code, body)
		}
		return r.Tasks
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(list()) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the list to be indexed")
		}
		time.Sleep(25 * time.Millisecond)
	}
	got := list()
	// The tree stands where its first task would ("Book the van" sorts
	// before "Buy milk").
	want := []task{{UID: "move", Subtasks: 2, SubtasksDone: 1}, {UID: "van", Parent: "move", ParentSummary: "Move house", Depth: 1}, {UID: "milk"}}
	if len(got) != len(want) {
		t.Fatalf("tasks %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("task %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	code, body := call("POST", "/api/tasks", `{"summary":"Label the boxes","parent":"move"}`)
	if code != http.StatusOK || !strings.Contains(body, `"state":"done"`) {
		t.Fatalf("add subtask: %d %s", code, body)
	}
	code, body = call("POST", "/api/tasks/complete", `{"uid":"move","list":"home"}`)
	if code != http.StatusConflict || !strings.Contains(body, `has 2 open subtasks: \"Book the van\", \"Label the boxes\"`) {
		t.Fatalf("complete with open subtasks: %d %s", code, body)
	}
	code, body = call("POST", "/api/tasks/complete", `{"uid":"move","list":"home","with_subtasks":true}`)
	var res struct {
		Operation struct {
			UID      string `json:"uid"`
			State    string `json:"state"`
			Subtasks []struct {
				UID   string `json:"uid"`
				State string `json:"state"`
			} `json:"subtasks"`
		} `json:"operation"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &res) != nil || res.Operation.State != "done" || len(res.Operation.Subtasks) != 2 {
		t.Fatalf("complete with_subtasks: %d %s", code, body)
	}
	if got := list(); len(got) != 1 || got[0].UID != "milk" {
		t.Fatalf("open tasks after: %+v", got)
	}
	code, body = call("POST", "/api/tasks/delete", `{"uid":"move","list":"home"}`)
	if code != http.StatusConflict || !strings.Contains(body, "has 3 subtasks") {
		t.Fatalf("delete with subtasks: %d %s", code, body)
	}
	if code, body = call("POST", "/api/tasks/delete", `{"uid":"move","list":"home","with_subtasks":true}`); code != http.StatusOK || strings.Count(body, `"kind":"task_delete"`) != 4 {
		t.Fatalf("delete with_subtasks: %d %s", code, body)
	}
	for _, f := range []string{"move.ics", "van.ics", "kitchen.ics"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s: %v", f, err)
		}
	}
	if code, body = call("POST", "/api/tasks", `{"summary":"x","parent":"nothing like it"}`); code != http.StatusConflict || !strings.Contains(body, "parent: no open task matches") {
		t.Fatalf("add under an unknown parent: %d %s", code, body)
	}
}
