package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/watch"
)

func TestWatchCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(paths.DBDir(), 0o700)
	vt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := os.ReadFile(filepath.Join("..", "watch", "testdata", "train", "3.json"))
		w.Write(b)
	}))
	defer vt.Close()
	e, err := watch.Open(context.Background(), paths.DB(watch.Schema.Name), watch.Options{Adapters: []watch.Adapter{&watch.TrainAdapter{BaseURL: vt.URL}}})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.Create(context.Background(), watch.Spec{Source: "train", Ref: "S01700/9544/1767571200000", Instruction: "tell me when it arrives",
		ExpiresAt: time.Now().Add(time.Hour), Rules: []watch.Rule{{Event: "train.arrived"}}})
	e.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, home, nil, "watch", "list", "--json")
	var l struct{ Watches []watch.Watch }
	if err := json.Unmarshal([]byte(r.stdout), &l); r.code != 0 || err != nil || len(l.Watches) != 1 || l.Watches[0].ID != w.ID {
		t.Fatalf("list: %+v %v", r, err)
	}
	r = run(t, home, nil, "watch", "show", w.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "tell me when it arrives") || !strings.Contains(r.stdout, "on train.arrived") {
		t.Fatalf("show: %+v", r)
	}
	r = run(t, home, nil, "watch", "stop", w.ID, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"state": "stopped"`) {
		t.Fatalf("stop: %+v", r)
	}
	if r := run(t, home, nil, "watch", "list"); !strings.Contains(r.stdout, "stopped") {
		t.Fatalf("list after stop: %+v", r)
	}
	for _, bad := range [][]string{{"watch", "frob"}, {"watch", "show"}, {"watch", "list", "--state", "sleeping"}} {
		if r := run(t, home, nil, bad...); r.code != 2 {
			t.Errorf("%v: exit %d %q", bad, r.code, r.stderr)
		}
	}
	if r := run(t, home, nil, "watch", "show", "w_nope"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("show unknown: %+v", r)
	}
	// Bare `hestia watch` and `hestia actions` list (so does flags-only).
	for _, bare := range [][]string{{"watch"}, {"watch", "--json"}, {"actions"}, {"actions", "--json"}} {
		if r := run(t, home, nil, bare...); r.code != 0 || r.stdout == "" {
			t.Errorf("%v must list: %+v", bare, r)
		}
	}
	r = run(t, home, nil, "actions", "list", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"actions": []`) {
		t.Errorf("actions list: %+v", r)
	}
	if r := run(t, home, nil, "actions", "list"); r.code != 0 || !strings.Contains(r.stdout, "new 0, read 0") {
		t.Errorf("actions list: %+v", r)
	}
	for _, bad := range [][]string{{"actions", "frob"}, {"actions", "list", "--state", "open"}, {"actions", "list", "--limit", "0"}} {
		if r := run(t, home, nil, bad...); r.code != 2 {
			t.Errorf("%v: exit %d", bad, r.code)
		}
	}
}
