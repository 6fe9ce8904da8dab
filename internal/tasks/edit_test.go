package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// TestUpdateAndDeleteAreGated: tasks_update and tasks_delete wait for a
// card from a chat, the card says what changes; the user's own command
// runs the one call it names; a deny prefix still stops it; bad
// arguments are refused by the schema before anything runs.
func TestUpdateAndDeleteAreGated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	auth := e.auth(policy.Config{AutoApprove: policy.ThresholdLow})
	chat := authority.Origin{Kind: authority.Chat, ChatID: "c", Ask: authority.Refuse}
	for tool, args := range map[string]string{"tasks_update": `{"uid":"milk","summary":"Buy oat milk"}`, "tasks_delete": `{"uid":"milk"}`} {
		if chk := auth.Check(ctx, chat, tool, args); chk.Result.Decision != policy.Gate {
			t.Fatalf("%s from a chat: %+v", tool, chk.Result)
		}
		if out := auth.Invoke(ctx, chat, authority.Call{Tool: tool, Args: args}); out.Ran || out.Decision != authority.Deferred {
			t.Fatalf("%s from a chat ran unasked: %+v", tool, out)
		}
	}
	prev := func(tool, args string) string {
		tl, err := e.reg.Get(tool)
		if err != nil {
			t.Fatal(err)
		}
		return tl.(tools.Previewer).Preview(ctx, json.RawMessage(args))
	}
	if got := prev("tasks_update", `{"text":"trip","due":"2026-03-27","priority":2}`); got != `update task "Plan the trip" (trip) in list "home": priority none → 2; due Wed 2026-03-25 → Fri 2026-03-27` {
		t.Fatalf("update card %q", got)
	}
	if got := prev("tasks_delete", `{"text":"manual"}`); got != `delete task "Read the manual" (later) from list "home"` {
		t.Fatalf("delete card %q", got)
	}
	prio := 2
	due := "2026-03-27"
	op, err := Command(ctx, auth, "hestia tasks edit", "tasks_update", calwrite.TaskUpdateArgs{Text: "trip", Due: &due, Priority: &prio})
	if err != nil || op.State != calwrite.StateDone || op.Kind != calwrite.KindTaskUpdate {
		t.Fatalf("command update: %+v %v", op, err)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, "trip.ics"))
	if !strings.Contains(string(data), "DUE;VALUE=DATE:20260327") || !strings.Contains(string(data), "PRIORITY:2") {
		t.Fatalf("updated:\n%s", data)
	}
	op, err = Command(ctx, auth, "Agenda page", "tasks_update", calwrite.TaskUpdateArgs{UID: "old", Reopen: true})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("command reopen: %+v %v", op, err)
	}
	op, err = Command(ctx, auth, "Agenda page", "tasks_delete", calwrite.TaskDeleteArgs{Text: "manual"})
	if err != nil || op.State != calwrite.StateDone || op.Kind != calwrite.KindTaskDelete {
		t.Fatalf("command delete: %+v %v", op, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "later.ics")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("deleted file: %v", err)
	}
	r, _ := e.list(t, `{}`)
	if names(r.Tasks) != "Pay the rent!|Send the invoice|Plan the trip|Buy milk|Renew passport" {
		t.Fatalf("tasks after the commands: %s", names(r.Tasks))
	}
	// The tool's own refusal, and the schema's.
	if _, err := Command(ctx, auth, "hestia tasks edit", "tasks_update", calwrite.TaskUpdateArgs{UID: "milk"}); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "nothing to change") {
		t.Fatalf("no change: %v", err)
	}
	for tool, bad := range map[string]map[string]any{
		"tasks_update": {"uid": "milk", "priority": 12},
		"tasks_delete": {"uid": "milk", "everything": true},
	} {
		if _, err := Command(ctx, auth, "hestia tasks", tool, bad); !errors.Is(err, ErrBadArgs) {
			t.Errorf("%s %v: %v", tool, bad, err)
		}
	}
	if _, err := Command(ctx, auth, "hestia tasks edit", "tasks_update", map[string]any{"uid": "milk", "due": ""}); !errors.Is(err, ErrBadArgs) {
		t.Errorf("empty due: %v", err)
	}
	denied := e.auth(policy.Config{AutoApprove: policy.ThresholdLow, DenyPrefixes: []string{"tasks_delete"}})
	if _, err := Command(ctx, denied, "hestia tasks delete", "tasks_delete", calwrite.TaskDeleteArgs{UID: "milk"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("delete against a deny prefix: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "milk.ics")); err != nil {
		t.Fatalf("refused delete removed the file: %v", err)
	}
}
