package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm/llmtest"
	"github.com/hestia-dev/hestia/internal/notify/pushtest"
	"github.com/hestia-dev/hestia/internal/scheduler"
)

func TestJobsCommands(t *testing.T) {
	home, env, srv := daemonEnv(t,
		llmtest.Text("Two new messages today; nothing urgent."),
		// The second run proposes a gated write: it must wait for the user,
		// not be denied because nobody is attached.
		llmtest.ToolCalls(llmtest.Call("w", "write_file", `{"path":"brief.md","content":"today"}`)),
		llmtest.Text("Saved the briefing."),
	)
	for _, bad := range [][]string{
		{"jobs", "frob"},
		{"jobs", "add", "b", "--cron", "0 8 * *", "--prompt", "p"},
		{"jobs", "add", "b", "--every", "soon", "--prompt", "p"},
		{"jobs", "history", "--limit", "0"},
		{"jobs", "run"},
	} {
		if r := run(t, home, env, bad...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
	// A bare `hestia jobs` (or one with only flags) lists.
	if r := run(t, home, env, "jobs"); r.code != 0 {
		t.Errorf("bare jobs must list: %+v", r)
	}
	if r := run(t, home, env, "jobs", "--json"); r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "[") && !strings.HasPrefix(strings.TrimSpace(r.stdout), "{") {
		t.Errorf("jobs --json must list as JSON: %+v", r)
	}
	if r := run(t, home, env, "jobs", "add", "b", "--cron", "0 8 * *", "--prompt", "p"); !strings.Contains(r.stderr, "cron") {
		t.Errorf("malformed cron error does not name the field: %q", r.stderr)
	}
	r := run(t, home, env, "jobs", "add", "briefing", "--cron", "0 8 * * 1-5", "--prompt", "Brief me on today's mail")
	if r.code != 0 || !strings.Contains(r.stdout, "Added job briefing") {
		t.Fatalf("add: %+v", r)
	}
	if r := run(t, home, env, "jobs", "add", "briefing", "--every", "1h", "--prompt", "x"); r.code != 1 || !strings.Contains(r.stderr, "already exists") {
		t.Errorf("duplicate add: %+v", r)
	}
	r = run(t, home, env, "jobs", "run", "briefing", "--wait", "--json")
	var run1 scheduler.Run
	if err := json.Unmarshal([]byte(r.stdout), &run1); r.code != 0 || err != nil || run1.Status != scheduler.StatusOK || run1.Trigger != scheduler.TriggerManual {
		t.Fatalf("run --wait: %+v (%v)", r, err)
	}
	if got := srv.Requests()[0].Messages; !strings.Contains(got[len(got)-1].Content, "Brief me on today's mail") {
		t.Errorf("the model did not get the job's prompt: %+v", got[len(got)-1])
	}

	// A paired phone subscribes to Web Push (the local stub push service).
	push := pushtest.New(t)
	c, err := (&Env{Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return env[k]
	}}).daemon()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	phone := push.Subscribe("phone")
	if err := c.Do(ctx, "POST", "/api/push/subscriptions", map[string]any{"endpoint": phone.Endpoint, "keys": phone.Keys, "device": "phone"}, nil); err != nil {
		t.Fatal(err)
	}

	// Second run: the gated write waits in the approvals without expiry.
	r = run(t, home, env, "jobs", "run", "briefing", "--json")
	if r.code != 0 {
		t.Fatalf("run: %+v", r)
	}
	var pending struct {
		Approvals []struct {
			ID       string `json:"id"`
			Tool     string `json:"tool"`
			NoExpiry bool   `json:"no_expiry"`
		} `json:"approvals"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(pending.Approvals) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the job's gated call never reached the approvals")
		}
		time.Sleep(50 * time.Millisecond)
		if err := c.Do(ctx, "GET", "/api/approvals", nil, &pending); err != nil {
			t.Fatal(err)
		}
	}
	if p := pending.Approvals[0]; p.Tool != "write_file" || !p.NoExpiry {
		t.Fatalf("pending approval %+v", p)
	}
	// The waiting approval reaches the phone, decrypted by the stub. The
	// first run's result may reach it too (it was waiting for a device),
	// in either order.
	var pl struct{ Title, URL string }
	deadline = time.Now().Add(20 * time.Second)
	for pl.Title != "Approval needed: write_file" {
		if time.Now().After(deadline) {
			t.Fatalf("no approval push reached the stub (messages %d, stub errors %v)", len(push.Messages()), push.Errors())
		}
		time.Sleep(50 * time.Millisecond)
		for _, m := range push.Messages() {
			var got struct{ Title, URL string }
			if err := json.Unmarshal(m.Payload, &got); err != nil {
				t.Fatalf("push payload %s: %v", m.Payload, err)
			}
			if got.Title == "Approval needed: write_file" {
				pl = got
			}
		}
	}
	if !strings.HasPrefix(pl.URL, "/c/") {
		t.Fatalf("approval push URL %q", pl.URL)
	}
	r = run(t, home, env, "jobs", "list", "--json")
	if !strings.Contains(r.stdout, `"running": true`) {
		t.Errorf("the waiting job is not shown running: %s", r.stdout)
	}
	if err := c.Do(ctx, "POST", "/api/approvals/"+pending.Approvals[0].ID, map[string]any{"decision": "approve"}, nil); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		r = run(t, home, env, "jobs", "history", "briefing", "--json")
		var h struct{ Runs []scheduler.Run }
		json.Unmarshal([]byte(r.stdout), &h)
		if len(h.Runs) == 2 && h.Runs[0].Status == scheduler.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second run did not finish: %s", r.stdout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b, err := os.ReadFile(filepath.Join(env["HOME"], "brief.md")); err != nil || string(b) != "today" {
		t.Fatalf("approved write: %q %v", b, err)
	}
	r = run(t, home, env, "jobs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "briefing") || !strings.Contains(r.stdout, "cron 0 8 * * 1-5") {
		t.Errorf("list: %+v", r)
	}
	r = run(t, home, env, "jobs", "history")
	if r.code != 0 || strings.Count(r.stdout, "briefing") != 2 {
		t.Errorf("history: %+v", r)
	}
	if r := run(t, home, env, "jobs", "remove", "briefing"); r.code != 0 {
		t.Errorf("remove: %+v", r)
	}
	if r := run(t, home, env, "jobs", "run", "briefing"); r.code != 1 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("run removed: %+v", r)
	}
}
