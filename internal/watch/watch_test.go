package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"

	"github.com/hestia-dev/hestia/internal/tools"
)

const trainRef = "S01700/9544/1767571200000"

// fakeVT serves the recorded fixtures in order: step() moves to the next.
type fakeVT struct {
	srv    *httptest.Server
	mu     sync.Mutex
	file   string
	status int
}

func newFakeVT(t *testing.T) *fakeVT {
	f := &fakeVT{file: "1.json"}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		file, status := f.file, f.status
		f.mu.Unlock()
		if r.URL.Path != "/andamentoTreno/"+trainRef {
			http.NotFound(w, r)
			return
		}
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", "train", file))
		if err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeVT) set(file string, status int) {
	f.mu.Lock()
	f.file, f.status = file, status
	f.mu.Unlock()
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// sendTool is a stand-in for a send tool: it counts real executions.
func sendTool(runs *atomic.Int32, got *[]string, mu *sync.Mutex) tools.Tool {
	return &tools.Func{S: tools.Spec{Name: "fake_send", Description: "send", Risk: tools.RiskMedium, Egress: true,
		Schema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"array","items":{"type":"string"}},"subject":{"type":"string"},"body":{"type":"string"},"urgent":{"type":"boolean"}},"required":["to","subject","body"],"additionalProperties":false}`)},
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			runs.Add(1)
			mu.Lock()
			*got = append(*got, string(c.Args))
			mu.Unlock()
			return tools.Result{Content: "sent"}, nil
		}}
}

type harness struct {
	e         *Engine
	vt        *fakeVT
	c         *clock
	path      string
	reg       *tools.Registry
	runs      atomic.Int32
	sent      []string
	mu        sync.Mutex
	delivered []string
	gated     []string
	react     Reactor
	failNext  atomic.Bool
	rules     *policy.RuleStore
	policy    policy.Config
}

func newHarness(t *testing.T) *harness {
	h := &harness{vt: newFakeVT(t), c: &clock{t: time.Date(2026, 1, 5, 8, 30, 0, 0, time.UTC)}, path: filepath.Join(t.TempDir(), "watches.db"), reg: tools.NewRegistry()}
	h.reg.MustRegister(sendTool(&h.runs, &h.sent, &h.mu))
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "policy.db"), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if h.rules, err = policy.NewRuleStore(context.Background(), db, nil, nil); err != nil {
		t.Fatal(err)
	}
	h.open(t)
	return h
}

func (h *harness) open(t *testing.T) {
	t.Helper()
	engine, err := policy.New(h.policy, h.rules, policy.NewModes(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := authority.New(authority.Deps{Tools: h.reg, Policy: engine})
	e, err := Open(context.Background(), h.path, Options{Now: h.c.Now, Tools: h.reg, Authority: auth,
		Adapters: []Adapter{&TrainAdapter{BaseURL: h.vt.srv.URL, Now: h.c.Now}, FileAdapter{}, &URLAdapter{AllowPrivate: true}},
		React: func(ctx context.Context, d Delivery, call CallFunc) (string, error) {
			if h.react != nil {
				return h.react(ctx, d, call)
			}
			return "", errors.New("model unavailable")
		},
		Deliver: func(ctx context.Context, d Delivery, msg string) error {
			if h.failNext.Swap(false) {
				return errors.New("chat store busy")
			}
			h.mu.Lock()
			h.delivered = append(h.delivered, d.Event.Type+"|"+msg)
			h.mu.Unlock()
			return nil
		},
		Gate: func(ctx context.Context, d Delivery, tool string, args json.RawMessage, reason string) {
			h.mu.Lock()
			h.gated = append(h.gated, tool+" "+string(args)+" ("+reason+")")
			h.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	h.e = e
}

func (h *harness) pass(t *testing.T) {
	t.Helper()
	if err := h.e.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) types() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, d := range h.delivered {
		out = append(out, strings.SplitN(d, "|", 2)[0])
	}
	return out
}

var trainRules = []Rule{
	{ID: "dep", Event: "train.departed"},
	{ID: "delay", Event: "train.delay_changed"},
	{ID: "plat", Event: "train.platform_announced", Where: map[string]any{"station_id": "S08409"}},
	{ID: "platchg", Event: "train.platform_changed"},
	{ID: "arr", Event: "train.arrived", Once: true, Grants: []Grant{{Tool: "fake_send", Args: map[string]Constraint{
		"to":      {Exact: []any{"ann@example.org"}},
		"subject": {Template: "Train {{event.train}} arrived"},
		"body":    {Set: []any{"I have arrived.", "Arrived, see you soon."}},
	}}}},
}

func TestTrainWatchFromFixtures(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	w, err := h.e.Create(ctx, Spec{Source: "train", Ref: trainRef, Instruction: "tell me about my train and tell Ann when I arrive", ChatID: "c1", Rules: trainRules})
	if err != nil {
		t.Fatal(err)
	}
	if w.State != StateActive || !w.ExpiresAt.After(h.c.Now()) {
		t.Fatalf("created %+v", w)
	}
	h.react = func(ctx context.Context, d Delivery, call CallFunc) (string, error) {
		if d.Event.Type != "train.arrived" {
			return "", errors.New("model unavailable")
		}
		// A granted call, the same again, and one outside the grant.
		ok, err := call(ctx, "fake_send", `{"to":["ann@example.org"],"subject":"Train 9544 arrived","body":"I have arrived."}`)
		if err != nil || !ok.Ran {
			return "", fmt.Errorf("granted call: %+v %v", ok, err)
		}
		again, _ := call(ctx, "fake_send", `{"to":["ann@example.org"],"subject":"Train 9544 arrived","body":"I have arrived."}`)
		if again.Ran || !again.Repeat {
			return "", fmt.Errorf("second call ran: %+v", again)
		}
		other, _ := call(ctx, "fake_send", `{"to":["eve@example.org"],"subject":"Train 9544 arrived","body":"I have arrived."}`)
		if other.Ran || !other.Gated {
			return "", fmt.Errorf("call outside the grant ran: %+v", other)
		}
		return "You arrived; I told Ann.", nil
	}
	for _, f := range []string{"2.json", "3.json", "4.json", "5.json", "6.json"} {
		h.vt.set(f, 0)
		h.pass(t)
	}
	// 2: departed + delay 0→2; 3: delay 2→12, platform 11 at Roma; 4: nothing;
	// 5: platform 11→12; 6: delay 12→11 is not reported after arrival.
	got := h.types()
	want := []string{"train.departed", "train.delay_changed", "train.delay_changed", "train.platform_announced", "train.platform_changed", "train.arrived"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	if h.runs.Load() != 1 || !strings.Contains(h.sent[0], `"to":["ann@example.org"]`) {
		t.Fatalf("granted tool ran %d times: %v", h.runs.Load(), h.sent)
	}
	if len(h.gated) != 1 || !strings.Contains(h.gated[0], "eve@example.org") {
		t.Fatalf("gated = %v", h.gated)
	}
	// Without a model the deterministic text is delivered.
	if !strings.Contains(h.delivered[0], "Train 9544 left MILANO CENTRALE at 10:02") {
		t.Errorf("fallback text: %q", h.delivered[0])
	}
	w, _ = h.e.Get(ctx, w.ID)
	if w.State != StateCompleted {
		t.Fatalf("after arrival the watch is %s", w.State)
	}
	claims, _ := h.e.Claims(ctx, w.ID)
	if len(claims) != 1 || claims[0].State != "done" {
		t.Fatalf("claims %+v", claims)
	}

	// A restart replaying every fixture fires nothing again.
	h.e.Close()
	h.open(t)
	h.e.db.Exec(`UPDATE watches SET state = 'active'`) // even if it were still active
	for _, f := range []string{"1.json", "2.json", "3.json", "5.json", "6.json"} {
		h.vt.set(f, 0)
		h.pass(t)
	}
	if n := len(h.types()); n > len(want)+2 {
		t.Fatalf("replay after restart delivered again: %v", h.types())
	}
	if h.runs.Load() != 1 {
		t.Fatal("the granted call ran again after a restart")
	}
}

func TestGrantedCallNotRepeatedAfterCrashMidDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.vt.set("5.json", 0)
	if _, err := h.e.Create(ctx, Spec{Source: "train", Ref: trainRef, Instruction: "tell Ann when I arrive", Rules: trainRules[4:]}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	h.react = func(ctx context.Context, d Delivery, call CallFunc) (string, error) {
		calls.Add(1)
		r, err := call(ctx, "fake_send", `{"to":["ann@example.org"],"subject":"Train 9544 arrived","body":"Arrived, see you soon."}`)
		if err != nil {
			return "", err
		}
		if calls.Load() == 1 {
			// The process "dies" right after the send, before any message.
			return "", errors.New("killed")
		}
		if !r.Repeat {
			return "", fmt.Errorf("retry ran the call again: %+v", r)
		}
		return "told Ann", nil
	}
	h.vt.set("6.json", 0)
	h.pass(t)
	// Restart, then the retry.
	h.e.Close()
	h.open(t)
	h.pass(t)
	if calls.Load() != 2 || h.runs.Load() != 1 {
		t.Fatalf("model calls %d, tool runs %d", calls.Load(), h.runs.Load())
	}
	if got := h.types(); len(got) != 1 || got[0] != "train.arrived" || !strings.Contains(h.delivered[0], "told Ann") {
		t.Fatalf("delivered %v", h.delivered)
	}
	// A failing delivery keeps the composed text: no third model call.
	h.failNext.Store(true)
	h.e.db.Exec(`UPDATE events SET state = 'pending'`)
	h.pass(t)
	h.pass(t)
	if calls.Load() != 2 {
		t.Fatalf("redelivery asked the model again (%d calls)", calls.Load())
	}
}

func TestPollErrorKeepsSnapshotAndGrantLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	w, err := h.e.Create(ctx, Spec{Source: "train", Ref: trainRef, Instruction: "delays", Rules: []Rule{{Event: "train.delay_changed", Grants: []Grant{{Tool: "fake_send", Max: 1,
		Args: map[string]Constraint{"to": {Exact: []any{"ann@example.org"}}, "subject": {Template: "Late by {{event.delay_min}}"}, "body": {Exact: "late"}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var results []CallResult
	h.react = func(ctx context.Context, d Delivery, call CallFunc) (string, error) {
		r, err := call(ctx, "fake_send", fmt.Sprintf(`{"to":["ann@example.org"],"subject":"Late by %v","body":"late"}`, d.Event.Data["delay_min"]))
		results = append(results, r)
		if err != nil {
			return "", err
		}
		return d.Event.Text, nil
	}
	h.vt.set("2.json", 503)
	h.pass(t)
	w, _ = h.e.Get(ctx, w.ID)
	if !strings.Contains(w.LastError, "503") || !strings.Contains(string(w.Snapshot), `"departed":false`) {
		t.Fatalf("after a failed poll: %+v", w)
	}
	h.vt.set("3.json", 0)
	h.pass(t)
	if got := h.types(); len(got) != 1 || !strings.Contains(h.delivered[0], "12 min late (was 0)") {
		t.Fatalf("transition from the last good snapshot: %v", h.delivered)
	}
	// The next delay change may not use the grant again (max 1).
	h.vt.set("2.json", 0) // the delay drops back to 2
	h.pass(t)
	if len(results) != 2 || !results[0].Ran || results[1].Ran || !results[1].Gated || !strings.Contains(results[1].Content, "used up") || h.runs.Load() != 1 {
		t.Fatalf("invocation limit: %+v (runs %d)", results, h.runs.Load())
	}
}

func TestCreateRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	good := func() Spec {
		return Spec{Source: "train", Ref: trainRef, Instruction: "x", Rules: []Rule{{Event: "train.arrived"}}}
	}
	grant := func(g Grant) Spec { s := good(); s.Rules[0].Grants = []Grant{g}; return s }
	exact := Constraint{Exact: []any{"ann@example.org"}}
	str := Constraint{Exact: "s"}
	for _, tc := range []struct {
		spec  Spec
		field string
	}{
		{Spec{Source: "fax", Ref: "x", Instruction: "x", Rules: good().Rules}, "source"},
		{Spec{Source: "train", Ref: "9544", Instruction: "x", Rules: good().Rules}, "ref"},
		{Spec{Source: "train", Ref: trainRef, Rules: good().Rules}, "instruction"},
		{Spec{Source: "train", Ref: trainRef, Instruction: "x"}, "rules"},
		{Spec{Source: "train", Ref: trainRef, Instruction: "x", Rules: []Rule{{Event: "train.teleported"}}}, "rules[0].event"},
		{Spec{Source: "train", Ref: trainRef, Instruction: "x", Rules: []Rule{{}}}, "rules[0]"},
		{grant(Grant{Tool: "mail_sendd", Args: map[string]Constraint{"to": exact}}), "rules[0].grants[0].tool"},
		{grant(Grant{Tool: "fake_send", Args: map[string]Constraint{"to": exact, "subject": str}}), "rules[0].grants[0].args.body"},
		{grant(Grant{Tool: "fake_send", Args: map[string]Constraint{"to": exact, "subject": str, "body": str, "cc": str}}), "rules[0].grants[0].args.cc"},
		{grant(Grant{Tool: "fake_send", Args: map[string]Constraint{"to": exact, "subject": {Min: new(float64)}, "body": str}}), "rules[0].grants[0].args.subject"},
		{grant(Grant{Tool: "fake_send", Args: map[string]Constraint{"to": exact, "subject": {Exact: 3.0}, "body": str}}), "rules[0].grants[0].args.subject"},
		{grant(Grant{Tool: "fake_send", Args: map[string]Constraint{"to": exact, "subject": {Template: "{{secrets.key}}"}, "body": str}}), "rules[0].grants[0].args.subject"},
		{grant(Grant{Tool: "fake_send", Max: 99, Args: map[string]Constraint{"to": exact, "subject": str, "body": str}}), "rules[0].grants[0].max"},
		{Spec{Source: "file", Ref: "/tmp/x", Instruction: "x", Rules: []Rule{{Event: "file.changed"}}}, "expires_at"},
		{Spec{Source: "train", Ref: trainRef, Instruction: "x", Rules: good().Rules, ExpiresAt: h.c.Now().Add(-time.Hour)}, "expires_at"},
	} {
		_, err := h.e.Create(ctx, tc.spec)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Create(%s) = %v, want a field error on %s", tc.field, err, tc.field)
		}
	}
	if ws, _ := h.e.List(ctx, ""); len(ws) != 0 {
		t.Fatalf("a refused watch was stored: %+v", ws)
	}
}

func TestFileURLTemporalExpiryAndStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "notes.txt")
	os.WriteFile(p, []byte("a"), 0o600)
	fw, err := h.e.Create(ctx, Spec{Source: "file", Ref: p, Instruction: "tell me when notes change", ExpiresAt: h.c.Now().Add(2 * time.Hour),
		Rules: []Rule{{Event: "file.changed"}, {Event: "file.deleted"}, {ID: "remind", Trigger: &Trigger{At: h.c.Now().Add(30 * time.Minute)}}}})
	if err != nil {
		t.Fatal(err)
	}
	etag := atomic.Value{}
	etag.Store(`"v1"`)
	var notModified atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := etag.Load().(string)
		if r.Header.Get("If-None-Match") == tag {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", tag)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"price": %q}`, tag)
	}))
	defer srv.Close()
	uw, err := h.e.Create(ctx, Spec{Source: "url", Ref: srv.URL + "/price", Instruction: "price changes", ExpiresAt: h.c.Now().Add(time.Hour), Rules: []Rule{{Event: "url.changed"}}})
	if err != nil {
		t.Fatal(err)
	}
	h.pass(t)
	if len(h.types()) != 0 || notModified.Load() == 0 {
		t.Fatalf("unchanged resources fired %v (304s: %d)", h.types(), notModified.Load())
	}
	os.WriteFile(p, []byte("abc"), 0o600)
	etag.Store(`"v2"`)
	h.c.Advance(31 * time.Minute)
	h.pass(t)
	h.pass(t)
	got := strings.Join(h.types(), ",")
	for _, want := range []string{"file.changed", "url.changed", "time.reached"} {
		if strings.Count(got, want) != 1 {
			t.Errorf("delivered %s, want one %s", got, want)
		}
	}
	if _, err := h.e.Stop(ctx, uw.ID); err != nil {
		t.Fatal(err)
	}
	if w, _ := h.e.Stop(ctx, uw.ID); w.State != StateStopped {
		t.Fatalf("stop twice: %+v", w)
	}
	h.c.Advance(2 * time.Hour)
	h.pass(t)
	if w, _ := h.e.Get(ctx, fw.ID); w.State != StateExpired {
		t.Fatalf("file watch after its expiry: %s", w.State)
	}
}

func TestURLGuardAndCap(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(make([]byte, 2048)) }))
	defer srv.Close()
	u := &URLAdapter{}
	if _, err := u.Snapshot(context.Background(), srv.URL); !errors.Is(err, errPrivate) {
		t.Fatalf("loopback fetch: %v", err)
	}
	capped := &URLAdapter{AllowPrivate: true, MaxBytes: 1024}
	if _, err := capped.Snapshot(context.Background(), srv.URL); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("size cap: %v", err)
	}
	for _, bad := range []string{"ftp://x/y", "http://user:pw@example.org/", "not a url"} {
		if u.Validate(bad) == nil {
			t.Errorf("Validate(%q) accepted", bad)
		}
	}
}

func TestParseTrainFixtures(t *testing.T) {
	t.Parallel()
	b, _ := os.ReadFile("testdata/train/5.json")
	s, err := ParseTrain(b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Number != "9544" || !s.Departed || s.Arrived || s.DelayMin != 12 || len(s.Stops) != 4 || s.Stops[3].PlatformActual != "12" || s.Stops[2].Position != -1 {
		t.Fatalf("snapshot %+v", s)
	}
	b, _ = os.ReadFile("testdata/train/cancelled.json")
	if s, _ := ParseTrain(b); !s.Cancelled {
		t.Fatal("cancelled run not seen")
	}
	for _, bad := range []string{`[]`, `{}`, `{"numeroTreno":1,"fermate":[]}`, `not json`} {
		if _, err := ParseTrain([]byte(bad)); err == nil {
			t.Errorf("ParseTrain(%s) accepted", bad)
		}
	}
}

func FuzzParseTrain(f *testing.F) {
	for _, name := range []string{"1.json", "3.json", "6.json", "cancelled.json"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "train", name))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseTrain(b)
		if err != nil {
			return
		}
		raw, _ := json.Marshal(s)
		if _, err := (&TrainAdapter{}).Events(raw, raw); err != nil {
			t.Fatalf("events of a parsed snapshot: %v", err)
		}
	})
}

// A grant is a pre-approval, not a bypass: it never loosens a deny rule, a
// deny prefix or the high-risk floor, and an ungranted-risk call waits for
// the user (Gate) instead of running.
func TestGrantNeverLoosensDenyOrHighRisk(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(t *testing.T, h *harness)
		gated bool
	}{
		{"deny rule", func(t *testing.T, h *harness) {
			if _, err := h.rules.Create(context.Background(), policy.Rule{Tool: "fake_send", Decision: policy.Deny, Priority: 100}); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"deny prefix", func(t *testing.T, h *harness) { h.policy.DenyPrefixes = []string{"fake_"} }, false},
		{"gate rule", func(t *testing.T, h *harness) {
			if _, err := h.rules.Create(context.Background(), policy.Rule{Tool: "fake_send", Decision: policy.Gate, Priority: 100}); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"high risk", func(t *testing.T, h *harness) {
			h.reg = tools.NewRegistry()
			hi := sendTool(&h.runs, &h.sent, &h.mu).(*tools.Func)
			hi.S.Risk = tools.RiskHigh
			h.reg.MustRegister(hi)
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			tc.setup(t, h)
			h.e.Close()
			h.open(t)
			ctx := context.Background()
			h.vt.set("5.json", 0)
			if _, err := h.e.Create(ctx, Spec{Source: "train", Ref: trainRef, Instruction: "tell Ann when I arrive", Rules: trainRules[4:]}); err != nil {
				t.Fatal(err)
			}
			var got CallResult
			h.react = func(ctx context.Context, d Delivery, call CallFunc) (string, error) {
				r, err := call(ctx, "fake_send", `{"to":["ann@example.org"],"subject":"Train 9544 arrived","body":"Arrived, see you soon."}`)
				got = r
				return "arrived", err
			}
			h.vt.set("6.json", 0)
			h.pass(t)
			if h.runs.Load() != 0 || got.Ran {
				t.Fatalf("the granted call ran past %s: %+v", tc.name, got)
			}
			h.mu.Lock()
			gated := len(h.gated)
			h.mu.Unlock()
			if tc.gated != (gated == 1) || tc.gated != got.Gated {
				t.Fatalf("%s: gated %d, result %+v, want gated=%v", tc.name, gated, got, tc.gated)
			}
		})
	}
}
