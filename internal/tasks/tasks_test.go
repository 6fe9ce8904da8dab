package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

type env struct {
	d     Deps
	dir   string
	reg   *tools.Registry
	rules *policy.RuleStore
	audit *audit.Log
	auth  func(cfg policy.Config) *authority.Authority
}

func todoFile(uid, body string) []byte {
	return []byte(strings.ReplaceAll("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:x\nBEGIN:VTODO\nUID:"+uid+"\nDTSTAMP:20260101T000000Z\n"+body+"\nEND:VTODO\nEND:VCALENDAR\n", "\n", "\r\n"))
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	now := func() time.Time { return time.Date(2026, 3, 20, 9, 0, 0, 0, loc) } // a Friday
	dir := filepath.Join(t.TempDir(), "home")
	os.MkdirAll(dir, 0o755)
	for name, body := range map[string][]byte{
		"rent.ics":    todoFile("rent", "SUMMARY:Pay the rent\nDUE;VALUE=DATE:20260318\nPRIORITY:1"),
		"invoice.ics": todoFile("invoice", "SUMMARY:Send the invoice\nDUE;TZID=Europe/Rome:20260320T170000\nDESCRIPTION:"+strings.Repeat("long notes ", 100)),
		"trip.ics":    todoFile("trip", "SUMMARY:Plan the trip\nDUE;VALUE=DATE:20260325"),
		"later.ics":   todoFile("later", "SUMMARY:Read the manual\nDUE;VALUE=DATE:20260415"),
		"milk.ics":    todoFile("milk", "SUMMARY:Buy milk"),
		"old.ics":     todoFile("old", "SUMMARY:Renew passport\nSTATUS:COMPLETED\nCOMPLETED:20260301T100000Z"),
	} {
		os.WriteFile(filepath.Join(dir, name), body, 0o644)
	}
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	src := calendar.Source{Name: "home", Path: dir}
	if _, err := idx.Sync(ctx, src); err != nil {
		t.Fatal(err)
	}
	targets := func(context.Context) (map[string]calwrite.Target, error) {
		return map[string]calwrite.Target{"home": {Name: "home", Backend: calwrite.Vdir{Dir: dir}, Resync: func(ctx context.Context) error {
			_, err := idx.Sync(ctx, src)
			return err
		}}}, nil
	}
	w, err := calwrite.Open(ctx, calwrite.Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e := &env{d: Deps{Store: idx, Writer: w, Now: now, Loc: loc}, dir: dir, reg: tools.NewRegistry()}
	for _, tl := range Tools(e.d) {
		if err := e.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	pdb, err := store.Open(ctx, filepath.Join(t.TempDir(), "policy.db"), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pdb.Close() })
	if e.rules, err = policy.NewRuleStore(ctx, pdb, now, nil); err != nil {
		t.Fatal(err)
	}
	adb, err := store.Open(ctx, filepath.Join(t.TempDir(), "audit.db"), audit.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adb.Close() })
	e.audit = audit.New(adb, now, nil)
	e.auth = func(cfg policy.Config) *authority.Authority {
		engine, err := policy.New(cfg, e.rules, policy.NewModes(now), nil)
		if err != nil {
			t.Fatal(err)
		}
		return authority.New(authority.Deps{Tools: e.reg, Policy: engine, Audit: e.audit, Clock: now})
	}
	return e
}

func (e *env) list(t *testing.T, args string) (ListResult, tools.Result) {
	t.Helper()
	out := e.auth(policy.Config{AutoApprove: policy.ThresholdLow}).Invoke(context.Background(), authority.Origin{Kind: authority.Chat, ChatID: "c"},
		authority.Call{ID: "l", Tool: "tasks_list", Args: args})
	if !out.Ran {
		t.Fatalf("tasks_list not run: %+v", out)
	}
	var r ListResult
	if !out.Result.IsError {
		if err := json.Unmarshal([]byte(out.Result.Content), &r); err != nil {
			t.Fatalf("%v: %s", err, out.Result.Content)
		}
	}
	return r, out.Result
}

func names(ts []calendar.Task) string {
	var out []string
	for _, t := range ts {
		s := t.Summary
		if t.Overdue {
			s += "!"
		}
		out = append(out, s)
	}
	return strings.Join(out, "|")
}

func TestTasksList(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cases := []struct{ args, want string }{
		{`{}`, "Pay the rent!|Send the invoice|Plan the trip|Read the manual|Buy milk"},
		{`{"due":"overdue"}`, "Pay the rent!"},
		{`{"due":"today"}`, "Pay the rent!|Send the invoice"},
		{`{"due":"week"}`, "Pay the rent!|Send the invoice|Plan the trip"},
		{`{"query":"invoice"}`, "Send the invoice"},
		{`{"include_completed":true,"query":"passport"}`, "Renew passport"},
		{`{"lists":["home"],"limit":2}`, "Pay the rent!|Send the invoice"},
	}
	for _, c := range cases {
		r, res := e.list(t, c.args)
		if res.IsError || names(r.Tasks) != c.want {
			t.Errorf("%s: %s (%s), want %s", c.args, names(r.Tasks), res.Content, c.want)
		}
	}
	r, _ := e.list(t, `{"limit":2}`)
	if !r.Truncated || strings.Join(r.Lists, ",") != "home" {
		t.Fatalf("truncation and lists: %+v", r)
	}
	// Notes are cut for the model.
	r, _ = e.list(t, `{"query":"invoice"}`)
	if n := len([]rune(r.Tasks[0].Description)); n != descriptionChars+1 {
		t.Fatalf("description of %d runes", n)
	}
	for _, bad := range []string{`{"due":"yesterday"}`, `{"lists":["nope"]}`} {
		out := e.auth(policy.Config{AutoApprove: policy.ThresholdLow}).Invoke(context.Background(), authority.Origin{Kind: authority.Chat}, authority.Call{Tool: "tasks_list", Args: bad})
		if out.Ran && !out.Result.IsError || !out.Ran && out.ArgErr == nil {
			t.Errorf("%s accepted: %+v", bad, out)
		}
	}
}

func TestToolSpecs(t *testing.T) {
	t.Parallel()
	for _, tl := range Tools(Deps{}) {
		s := tl.Spec()
		switch s.Name {
		case "tasks_list":
			if !s.ReadOnly || s.Risk != tools.RiskLow || !s.UntrustedOutput {
				t.Errorf("%s: %+v", s.Name, s)
			}
		case "tasks_add", "tasks_complete", "tasks_update", "tasks_delete":
			if s.ReadOnly || !s.Egress || s.Risk != tools.RiskMedium {
				t.Errorf("%s: %+v", s.Name, s)
			}
		default:
			t.Errorf("unexpected tool %s", s.Name)
		}
		if tools.GroupOf(s.Name) != "tasks" {
			t.Errorf("%s is in group %s", s.Name, tools.GroupOf(s.Name))
		}
		if tl.Available(context.Background()) == nil {
			t.Errorf("%s available without a store", s.Name)
		}
	}
}

// TestWritesAreGated: from a chat the writes wait for a card (the default
// threshold runs low-risk tools only); the user's own command runs the
// one call it names, audited; a deny prefix or a rule that asks still
// stops it.
func TestWritesAreGated(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	auth := e.auth(policy.Config{AutoApprove: policy.ThresholdLow})
	chk := auth.Check(ctx, authority.Origin{Kind: authority.Chat, ChatID: "c"}, "tasks_add", `{"summary":"x"}`)
	if chk.Result.Decision != policy.Gate {
		t.Fatalf("tasks_add from a chat: %+v", chk.Result)
	}
	out := auth.Invoke(ctx, authority.Origin{Kind: authority.Chat, ChatID: "c", Ask: authority.Refuse}, authority.Call{Tool: "tasks_complete", Args: `{"uid":"milk"}`})
	if out.Ran || out.Decision != authority.Deferred {
		t.Fatalf("tasks_complete from a chat ran unasked: %+v", out)
	}
	op, err := Command(ctx, auth, "hestia tasks add", "tasks_add", calwrite.TaskAddArgs{Summary: "Call mum", Due: "tomorrow"})
	if err != nil || op.State != calwrite.StateDone || op.Kind != calwrite.KindTaskCreate {
		t.Fatalf("command add: %+v %v", op, err)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, op.Href))
	if !strings.Contains(string(data), "DUE;VALUE=DATE:20260321") {
		t.Fatalf("written:\n%s", data)
	}
	op, err = Command(ctx, auth, "Agenda page", "tasks_complete", calwrite.TaskCompleteArgs{UID: "milk"})
	if err != nil || op.State != calwrite.StateDone {
		t.Fatalf("command complete: %+v %v", op, err)
	}
	// Audited as granted by the command.
	evs, err := e.audit.List(ctx, audit.Filter{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var saw bool
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		saw = saw || (ev.Type == "policy.decision" && strings.Contains(string(b), "pre-approved by Agenda page"))
	}
	if !saw {
		t.Fatalf("no audited grant among %d events", len(evs))
	}
	// A domain refusal is the tool's own words.
	if _, err := Command(ctx, auth, "hestia tasks done", "tasks_complete", calwrite.TaskCompleteArgs{UID: "milk"}); !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "already completed") {
		t.Fatalf("second completion: %v", err)
	}
	if _, err := Command(ctx, auth, "hestia tasks add", "tasks_add", map[string]any{"summary": "x", "approved": true}); !errors.Is(err, ErrBadArgs) {
		t.Fatalf("unknown argument: %v", err)
	}
	// The user's rules still hold: a rule that asks, a deny prefix.
	if _, err := e.rules.Create(ctx, policy.Rule{Tool: "tasks_complete", Decision: policy.Gate}); err != nil {
		t.Fatal(err)
	}
	if _, err := Command(ctx, auth, "Agenda page", "tasks_complete", calwrite.TaskCompleteArgs{UID: "trip"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("completion against a rule that asks: %v", err)
	}
	denied := e.auth(policy.Config{AutoApprove: policy.ThresholdLow, DenyPrefixes: []string{"tasks_"}})
	if _, err := Command(ctx, denied, "hestia tasks add", "tasks_add", calwrite.TaskAddArgs{Summary: "y"}); !errors.Is(err, ErrRefused) {
		t.Fatalf("add against a deny prefix: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "*.ics"))
	if len(files) != 7 {
		t.Fatalf("%d files, want the 6 plus one added", len(files))
	}
}
