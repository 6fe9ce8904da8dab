package calwrite

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/tools"
)

type env struct {
	w    *Writer
	idx  *calendar.Store
	dir  string
	ro   string
	loc  *time.Location
	tool map[string]tools.Tool
	// clock is the writer's and the index's now (one test goroutine
	// moves it).
	clock *time.Time
	srcs  []calendar.Source
}

func setup(t *testing.T) *env {
	t.Helper()
	return setupWith(t, nil)
}

// setupWith is setup with each calendar's backend wrapped by wrap (when
// not nil).
func setupWith(t *testing.T, wrap func(Backend) Backend) *env {
	t.Helper()
	ctx := context.Background()
	loc, err := time.LoadLocation("Europe/Rome")
	if err != nil {
		t.Skip(err)
	}
	clock := time.Date(2026, 3, 20, 9, 0, 0, 0, loc)
	now := func() time.Time { return clock }
	dir, ro := filepath.Join(t.TempDir(), "work"), filepath.Join(t.TempDir(), "shared")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(ro, 0o755)
	os.WriteFile(filepath.Join(dir, "standup.ics"), []byte(strings.ReplaceAll(`BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//t//EN
BEGIN:VEVENT
UID:standup
DTSTAMP:20260101T000000Z
DTSTART;TZID=Europe/Rome:20260302T093000
DTEND;TZID=Europe/Rome:20260302T100000
RRULE:FREQ=WEEKLY;BYDAY=MO
SUMMARY:Standup
END:VEVENT
END:VCALENDAR
`, "\n", "\r\n")), 0o644)
	os.WriteFile(filepath.Join(ro, "h.ics"), []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:h\r\nDTSTAMP:20260101T000000Z\r\nDTSTART;VALUE=DATE:20260406\r\nSUMMARY:Holiday\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"), 0o644)
	idx, err := calendar.Open(ctx, calendar.Options{DBPath: filepath.Join(t.TempDir(), "calendar.db"), Floating: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	srcs := []calendar.Source{{Name: "work", Path: dir}, {Name: "shared", Path: ro, ReadOnly: true}}
	for _, s := range srcs {
		if _, err := idx.Sync(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	targets := func(ctx context.Context) (map[string]Target, error) {
		m := map[string]Target{}
		for _, s := range srcs {
			var be Backend = Vdir{Dir: s.Path}
			if wrap != nil {
				be = wrap(be)
			}
			m[s.Name] = Target{Name: s.Name, ReadOnly: s.ReadOnly, Backend: be, Resync: func(ctx context.Context) error { _, err := idx.Sync(ctx, s); return err }}
		}
		return m, nil
	}
	w, err := Open(ctx, Options{DBPath: filepath.Join(t.TempDir(), "ops.db"), Index: idx, Targets: targets, Loc: loc, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	e := &env{w: w, idx: idx, dir: dir, ro: ro, loc: loc, tool: map[string]tools.Tool{}, clock: &clock, srcs: srcs}
	for _, tl := range Tools(w) {
		e.tool[tl.Spec().Name] = tl
	}
	return e
}

func (e *env) call(t *testing.T, name, id, args string) (tools.Result, Op) {
	t.Helper()
	tl := e.tool[name]
	m, canon, err := tools.DecodeArgs(name, args, tl.Spec().Schema)
	if err == nil {
		err = tools.Validate(tl.Spec().Schema, m)
	}
	if err != nil {
		return tools.Result{Content: err.Error(), IsError: true}, Op{}
	}
	res, err := tl.Run(context.Background(), tools.Call{ID: id, ChatID: "c1", Args: canon})
	if err != nil {
		t.Fatal(err)
	}
	var op Op
	json.Unmarshal([]byte(res.Content), &op)
	return res, op
}

func (e *env) agenda(t *testing.T, from, to string) []string {
	t.Helper()
	f, _ := time.ParseInLocation("2006-01-02", from, e.loc)
	tt, _ := time.ParseInLocation("2006-01-02", to, e.loc)
	ag, err := e.idx.Agenda(context.Background(), calendar.Query{From: f, To: tt, Calendars: []string{"work"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range ag.Instances {
		out = append(out, in.Start.In(e.loc).Format("01-02 15:04")+" "+in.Summary)
	}
	return out
}

func TestCreateIsJournaledConfirmedAndNeverDoubled(t *testing.T) {
	t.Parallel()
	e := setup(t)
	args := `{"calendar":"work","summary":"Lunch with Anna","start":"2026-03-24T12:30","duration_minutes":60,"attendees":["anna@polimi.it"]}`
	prev := e.tool["calendar_create"].(tools.Previewer).Preview(context.Background(), json.RawMessage(args))
	if !strings.Contains(prev, `"Lunch with Anna" on Tue 2026-03-24 12:30–13:30`) || !strings.Contains(prev, "anna@polimi.it") || !strings.Contains(prev, "no conflicts") {
		t.Fatalf("preview %q", prev)
	}
	res, op := e.call(t, "calendar_create", "call-1", args)
	if res.IsError || op.State != StateDone || op.UID == "" || op.ETag == "" {
		t.Fatalf("create: %+v", res)
	}
	// The same call again (a retried turn) returns the first op; no
	// second file.
	res, op2 := e.call(t, "calendar_create", "call-1", args)
	if res.IsError || op2.ID != op.ID {
		t.Fatalf("repeat: %+v", res)
	}
	files, _ := filepath.Glob(filepath.Join(e.dir, "*.ics"))
	if len(files) != 2 {
		t.Fatalf("files %v", files)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, op.Href))
	if !strings.Contains(string(data), "DTSTART;TZID=Europe/Rome:20260324T123000") || !strings.Contains(string(data), "ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:anna@polimi.it") {
		t.Fatalf("written:\n%s", data)
	}
	if got := strings.Join(e.agenda(t, "2026-03-24", "2026-03-25"), "|"); got != "03-24 12:30 Lunch with Anna" {
		t.Fatalf("agenda after create: %s", got)
	}
	// Conflicts show on the card.
	prev = e.tool["calendar_create"].(tools.Previewer).Preview(context.Background(), json.RawMessage(`{"summary":"x","start":"2026-03-24T13:00","calendar":"work"}`))
	if !strings.Contains(prev, `CONFLICTS with "Lunch with Anna" 12:30`) {
		t.Fatalf("conflict preview %q", prev)
	}
	ops, _ := e.w.List(context.Background(), StateDone, 10)
	if len(ops) != 1 {
		t.Fatalf("journal %+v", ops)
	}
}

func TestUpdateOneInstanceWritesOverride(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, op := e.call(t, "calendar_update", "u1", `{"uid":"standup","instance":"2026-03-23T09:30","start":"2026-03-24T11:00","summary":"Standup (moved)"}`)
	if res.IsError || op.State != StateDone {
		t.Fatalf("update: %+v", res)
	}
	data, _ := os.ReadFile(filepath.Join(e.dir, "standup.ics"))
	if !strings.Contains(string(data), "RECURRENCE-ID;TZID=Europe/Rome:20260323T093000") {
		t.Fatalf("no override:\n%s", data)
	}
	got := strings.Join(e.agenda(t, "2026-03-16", "2026-04-01"), "|")
	if got != "03-16 09:30 Standup|03-24 11:00 Standup (moved)|03-30 09:30 Standup" {
		t.Fatalf("agenda: %s", got)
	}
	// Delete one occurrence, then the series.
	res, op = e.call(t, "calendar_delete", "d1", `{"uid":"standup","instance":"2026-03-30T09:30"}`)
	if res.IsError || op.State != StateDone {
		t.Fatalf("delete instance: %+v", res)
	}
	got = strings.Join(e.agenda(t, "2026-03-16", "2026-04-07"), "|")
	if got != "03-16 09:30 Standup|03-24 11:00 Standup (moved)|04-06 09:30 Standup" {
		t.Fatalf("agenda after instance delete: %s", got)
	}
	// Whole-series update keeps the override and moves the rest.
	if res, _ := e.call(t, "calendar_update", "u2", `{"uid":"standup","summary":"Daily sync","location":"Room 1"}`); res.IsError {
		t.Fatalf("series update: %+v", res)
	}
	got = strings.Join(e.agenda(t, "2026-04-06", "2026-04-07"), "|")
	if got != "04-06 09:30 Daily sync" {
		t.Fatalf("agenda after series update: %s", got)
	}
	res, op = e.call(t, "calendar_delete", "d2", `{"uid":"standup"}`)
	if res.IsError || op.State != StateDone {
		t.Fatalf("delete: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "standup.ics")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file still there: %v", err)
	}
	if got := e.agenda(t, "2026-03-01", "2026-05-01"); len(got) != 0 {
		t.Fatalf("agenda after delete: %v", got)
	}
}

// TestAdversarialWrites: bad, hostile or stale writes are refused with a
// clear error and leave every file as it was.
func TestAdversarialWrites(t *testing.T) {
	t.Parallel()
	e := setup(t)
	before := snapshot(t, e.dir, e.ro)
	cases := []struct{ tool, args, want string }{
		{"calendar_create", `{"calendar":"shared","summary":"x","start":"2026-03-24T10:00"}`, "read-only"},
		{"calendar_create", `{"calendar":"nope","summary":"x","start":"2026-03-24T10:00"}`, `no calendar "nope"`},
		{"calendar_create", `{"summary":"x","start":"2026-03-24T10:00"}`, "name the calendar"},
		{"calendar_create", `{"calendar":"work","summary":"x\r\nATTENDEE:mailto:eve@attacker.test","start":"2026-03-24T10:00"}`, "control character"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","attendees":["Eve <eve@attacker.test>"]}`, "not a plain email address"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","attendees":["Marco"]}`, "resolve_recipient"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","rrule":"FREQ=DAILY;X-EVIL=1"}`, "not an RFC 5545 rule part"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","rrule":"FREQ=MONTHLY;BYDAY=9MO"}`, "rrule"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","end":"2026-03-24T09:00"}`, "end must be after start"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2096-03-24T10:00"}`, "20 years"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"next tuesday"}`, "not a time"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","end":"2026-06-24T10:00"}`, "at most 31 days"},
		{"calendar_update", `{"uid":"nope","summary":"x"}`, "no event"},
		{"calendar_update", `{"uid":"h","summary":"x"}`, "read-only"},
		{"calendar_update", `{"uid":"standup","instance":"2026-03-24T09:30","summary":"x"}`, "not an occurrence"},
		{"calendar_update", `{"uid":"standup","summary":""}`, "summary"},
		{"calendar_update", `{"uid":"standup","start":"2026-03-24T10:00","end":"2026-03-24T09:00"}`, "end must be after start"},
		{"calendar_delete", `{"uid":"h"}`, "read-only"},
		{"calendar_delete", `{"uid":"../../etc/passwd"}`, "no event"},
		{"calendar_delete", `{"uid":"standup","instance":"yesterday-ish"}`, "not a time"},
		{"calendar_create", `{"calendar":"work","summary":"x","start":"2026-03-24T10:00","approved":true}`, "approved"},
	}
	for _, c := range cases {
		res, _ := e.call(t, c.tool, "", c.args)
		if !res.IsError || !strings.Contains(res.Content, c.want) {
			t.Errorf("%s %s: %+v (want %q)", c.tool, c.args, res, c.want)
		}
	}
	if after := snapshot(t, e.dir, e.ro); after != before {
		t.Fatalf("files changed by refused writes:\n%s\n---\n%s", before, after)
	}
	// A stale ETag (the file changed after it was read) is a conflict and
	// the newer content is kept.
	obj, _ := Vdir{Dir: e.dir}.Get(context.Background(), "standup.ics")
	os.WriteFile(filepath.Join(e.dir, "standup.ics"), append(obj.Data, ' '), 0o644)
	if _, err := (Vdir{Dir: e.dir}).Update(context.Background(), "standup.ics", []byte("x"), obj.ETag); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := (Vdir{Dir: e.dir}).Create(context.Background(), "standup.ics", []byte("x")); !errors.Is(err, ErrConflict) {
		t.Fatalf("create over existing: %v", err)
	}
	if _, err := (Vdir{Dir: e.dir}).Get(context.Background(), "../x.ics"); err == nil {
		t.Fatal("path escape accepted")
	}
}

func snapshot(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		fs, _ := filepath.Glob(filepath.Join(d, "*"))
		for _, f := range fs {
			data, _ := os.ReadFile(f)
			b.WriteString(f + "\n" + string(data) + "\n")
		}
	}
	return b.String()
}

func TestToolSpecs(t *testing.T) {
	for _, tl := range Tools(nil) {
		s := tl.Spec()
		if s.ReadOnly || !s.Egress || s.Risk < tools.RiskMedium {
			t.Errorf("%s: %+v", s.Name, s)
		}
		if tl.Available(context.Background()) == nil {
			t.Errorf("%s available without a writer", s.Name)
		}
	}
}
