package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// A run journals its result: the summary a built-in job reports with
// SetResult, the text a user job's runner reports, nothing when none was
// reported, and the result of a failed run too.
func TestRunResultJournaled(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	ctx := context.Background()
	if err := s.Register(ctx, Def{Name: "sum", Schedule: Schedule{Every: Duration(time.Hour)}, Run: func(ctx context.Context) error {
		SetResult(ctx, "  imported 3 messages \n")
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(ctx, Def{Name: "quiet", Schedule: Schedule{Every: Duration(time.Hour)}, Run: func(ctx context.Context) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	var ended []Run
	s.opts.OnRunEnd = func(r Run) { ended = append(ended, r) }
	s.SetPromptRunner(func(ctx context.Context, j Job) (string, error) {
		SetResult(ctx, "You have two meetings today.")
		if j.Name == "bad" {
			return "", errors.New("model down")
		}
		return "", nil
	})
	for _, n := range []string{"good", "bad"} {
		if _, err := s.Add(ctx, UserJob{Name: n, Schedule: Schedule{Every: Duration(time.Hour)}, Prompt: "brief me"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"sum", "quiet", "good", "bad"} {
		if _, err := s.RunNow(ctx, n); err != nil {
			t.Fatal(err)
		}
		s.Wait()
	}
	want := map[string][2]string{"sum": {StatusOK, "imported 3 messages"}, "quiet": {StatusOK, ""},
		"good": {StatusOK, "You have two meetings today."}, "bad": {StatusError, "You have two meetings today."}}
	for n, w := range want {
		h := history(t, s, n)
		if len(h) != 1 || h[0].Status != w[0] || h[0].Result != w[1] {
			t.Errorf("%s: runs = %+v, want status %s result %q", n, h, w[0], w[1])
		}
	}
	if len(ended) != 4 || ended[0].Result != "imported 3 messages" {
		t.Errorf("OnRunEnd did not carry the result: %+v", ended)
	}
	SetResult(ctx, "outside a run") // no panic, no effect
}

// The delivery setting is stored with the job, set at creation or later,
// and survives reopening.
func TestDeliverStored(t *testing.T) {
	t.Parallel()
	s, c, path := newSched(t)
	ctx := context.Background()
	if _, err := s.Add(ctx, UserJob{Name: "brief", Schedule: Schedule{Every: Duration(time.Hour)}, Prompt: "p", Deliver: []string{"telegram"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, UserJob{Name: "x", Schedule: Schedule{Every: Duration(time.Hour)}, Prompt: "p", Deliver: []string{"fax"}}); err == nil || !strings.Contains(err.Error(), `"fax"`) {
		t.Fatalf("bad deliver accepted: %v", err)
	}
	j, err := s.SetDeliver(ctx, "brief", []string{"push", "telegram"})
	if err != nil || !reflect.DeepEqual(j.Deliver, []string{"push", "telegram"}) {
		t.Fatalf("SetDeliver = %+v, %v", j.Deliver, err)
	}
	if _, err := s.SetDeliver(ctx, "nope", nil); err == nil {
		t.Fatal("SetDeliver on a missing job succeeded")
	}
	s.Close()
	s2 := open(t, path, c)
	j, err = s2.Get(ctx, "brief")
	if err != nil || !reflect.DeepEqual(j.Deliver, []string{"push", "telegram"}) {
		t.Fatalf("after reopen: %+v, %v", j.Deliver, err)
	}
	if j, _ = s2.SetDeliver(ctx, "brief", nil); j.Deliver != nil {
		t.Fatalf("clearing kept %q", j.Deliver)
	}
}

// A database made by the first schema version gains the result and
// deliver columns, keeping its rows.
func TestMigrationAddsResultAndDeliver(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "scheduler.db")
	old := Schema
	old.Migrations = old.Migrations[:1]
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(old.Migrations[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO runs (job, trigger, started_at, status) VALUES ('a', 'manual', 1, 'ok'); PRAGMA user_version = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, path, &clock{t: t0})
	h, err := s.History(context.Background(), "", 10)
	if err != nil || len(h) != 1 || h[0].Result != "" {
		t.Fatalf("history after migration = %+v, %v", h, err)
	}
}
