package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/memory"
	"github.com/hestia-dev/hestia/internal/store"
)

func TestMemoryCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	r := run(t, home, nil, "memory", "add", "user", "Lives", "in", "Ghent.")
	if r.code != 0 || !strings.Contains(r.stdout, "Lives in Ghent.") {
		t.Fatalf("add: %+v", r)
	}
	if r := run(t, home, nil, "memory", "add", "memory", "lives in ghent"); r.code == 0 || !strings.Contains(r.stderr, "duplicate") {
		t.Fatalf("duplicate add: %+v", r)
	}
	r = run(t, home, map[string]string{"EDITOR": "sed -i s/Ghent/Bruges/"}, "memory", "edit", "user")
	if r.code != 0 {
		t.Fatalf("edit: %+v", r)
	}
	r = run(t, home, nil, "memory", "show", "user", "--json")
	var shown map[string]string
	if json.Unmarshal([]byte(r.stdout), &shown); shown["USER.md"] != "Lives in Bruges.\n" {
		t.Fatalf("show after edit: %+v", r)
	}
	if r := run(t, home, nil, "memory", "rm", "user", "Bruges"); r.code != 0 {
		t.Fatalf("rm: %+v", r)
	}

	// Seed the queue as the proposer would, then review it from the CLI.
	db, err := store.Open(context.Background(), filepath.Join(home, "db", "memory.db"), memory.Schema)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := memory.OpenProfile(filepath.Join(home, "memory"))
	cs, err := memory.NewQueue(db, p, nil).Enqueue(context.Background(), []memory.Candidate{
		{Source: "idle", Target: "user", Text: "Plays the cello.", Confidence: "high"},
		{Source: "idle", Target: "user", Text: "Session id is 42 right now", Confidence: "low"},
	})
	db.Close()
	if err != nil || len(cs) != 2 {
		t.Fatal(err)
	}
	r = run(t, home, nil, "memory", "queue")
	if r.code != 0 || !strings.Contains(r.stdout, "Plays the cello.") || !strings.Contains(r.stdout, "! transient") {
		t.Fatalf("queue: %+v", r)
	}
	if r := run(t, home, nil, "memory", "queue", "accept", cs[0].ID, "--text", "Plays the cello in an orchestra."); r.code != 0 {
		t.Fatalf("accept: %+v", r)
	}
	if r := run(t, home, nil, "memory", "queue", "reject", cs[1].ID); r.code != 0 {
		t.Fatalf("reject: %+v", r)
	}
	r = run(t, home, nil, "memory", "show", "user")
	if !strings.Contains(r.stdout, "Plays the cello in an orchestra.") || strings.Contains(r.stdout, "Session") {
		t.Fatalf("after review: %+v", r)
	}
	for _, bad := range [][]string{{"memory"}, {"memory", "add", "diary", "x"}, {"memory", "add", "user"}, {"memory", "edit", "user"}, {"memory", "queue", "accept", "nope"}, {"memory", "frob"}} {
		if r := run(t, home, nil, bad...); r.code == 0 || r.stderr == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}
