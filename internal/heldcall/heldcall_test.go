package heldcall

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/store"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

// daemon is one process's worth of queue: its own broker (requests live in
// memory), the same database file.
type daemon struct {
	q      *Queue
	b      *approval.Broker
	cancel context.CancelFunc
	done   chan struct{}
}

type world struct {
	path     string
	reg      *tools.Registry
	runs     atomic.Int32
	mu       sync.Mutex
	finished []Call
	rules    *policy.RuleStore
	engine   *policy.Engine
}

func newWorld(t *testing.T) *world {
	w := &world{path: filepath.Join(t.TempDir(), "heldcalls.db"), reg: tools.NewRegistry()}
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "policy.db"), policy.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if w.rules, err = policy.NewRuleStore(context.Background(), db, nil, nil); err != nil {
		t.Fatal(err)
	}
	if w.engine, err = policy.New(policy.Config{}, w.rules, policy.NewModes(nil), nil); err != nil {
		t.Fatal(err)
	}
	w.reg.MustRegister(&tools.Func{S: tools.Spec{Name: "send", Description: "send", Risk: tools.RiskHigh,
		Schema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"}},"required":["to"],"additionalProperties":false}`)},
		Fn: func(ctx context.Context, c tools.Call) (tools.Result, error) {
			w.runs.Add(1)
			return tools.Result{Content: "sent " + string(c.Args)}, nil
		}})
	return w
}

func (w *world) start(t *testing.T) *daemon {
	t.Helper()
	b := approval.New(approval.Options{Timeout: time.Minute})
	q, err := Open(context.Background(), w.path, Options{Authority: authority.New(authority.Deps{Tools: w.reg, Policy: w.engine, Approvals: b}),
		Finished: func(ctx context.Context, c Call) {
			w.mu.Lock()
			w.finished = append(w.finished, c)
			w.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{q: q, b: b, cancel: cancel, done: make(chan struct{})}
	go func() { q.Run(ctx); close(d.done) }()
	t.Cleanup(func() { d.stop() })
	return d
}

func (d *daemon) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	<-d.done
	d.q.Close()
	d.cancel = nil
}

// card waits for the one pending request (polling: the ask runs in the
// background).
func (d *daemon) card(t *testing.T) approval.Request {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if p := d.b.Pending(""); len(p) == 1 {
			return p[0]
		} else if len(p) > 1 {
			t.Fatalf("%d cards pending, want 1: %+v", len(p), p)
		}
		if time.Now().After(deadline) {
			t.Fatal("no card was shown")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (d *daemon) state(t *testing.T, key, want string) Call {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := d.q.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if c.State == want {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("call %s is %s (%s), want %s", key, c.State, c.Result, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func hold(t *testing.T, d *daemon, key, to string) {
	t.Helper()
	ins, err := d.q.Hold(context.Background(), Call{Key: key, Origin: "watch:w1", ChatID: "c1", Tool: "send", Args: json.RawMessage(`{"to":"` + to + `"}`), Reason: "outside the grant",
		TaintedBy: []taint.Source{{Tool: "mail_read", Detail: "message 7"}}})
	if err != nil || !ins {
		t.Fatalf("hold %s: %v %v", key, ins, err)
	}
}

func TestWaitingCallSurvivesRestartAndRunsOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d1 := w.start(t)
	hold(t, d1, "k1", "ann@example.org")
	d1.q.Adopt("k1")
	c1 := d1.card(t)
	if c1.Tool != "send" || !c1.NoExpiry || c1.CallID != "k1" {
		t.Fatalf("card %+v", c1)
	}
	// The daemon stops with the card unanswered: nothing ran.
	d1.stop()
	if w.runs.Load() != 0 {
		t.Fatal("ran without approval")
	}

	d2 := w.start(t)
	c2 := d2.card(t)
	if c2.CallID != "k1" || string(c2.Args) != `{"to":"ann@example.org"}` || len(c2.TaintedBy) != 1 || c2.TaintedBy[0].Detail != "message 7" {
		t.Fatalf("re-asked card %+v", c2)
	}
	if _, err := d2.b.Decide(c2.ID, approval.Decision{Outcome: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	c := d2.state(t, "k1", StateDone)
	if w.runs.Load() != 1 || c.Result != `sent {"to":"ann@example.org"}` {
		t.Fatalf("runs %d, result %q", w.runs.Load(), c.Result)
	}
	d2.stop()

	// A third start asks nothing and runs nothing.
	d3 := w.start(t)
	if err := d3.q.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // nothing should appear; the check below is the assertion
	if p := d3.b.Pending(""); len(p) != 0 || w.runs.Load() != 1 {
		t.Fatalf("after a done call: %d cards, %d runs", len(p), w.runs.Load())
	}
	// A repeated hold of the same key changes nothing.
	if ins, err := d3.q.Hold(context.Background(), Call{Key: "k1", Tool: "send", Args: json.RawMessage(`{"to":"x"}`)}); ins || err != nil {
		t.Fatalf("re-hold: %v %v", ins, err)
	}
	if c, _ := d3.q.Get(context.Background(), "k1"); c.State != StateDone || string(c.Args) != `{"to":"ann@example.org"}` {
		t.Fatalf("re-hold changed the call: %+v", c)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.finished) != 1 || w.finished[0].State != StateDone {
		t.Fatalf("finished %+v", w.finished)
	}
}

func TestBeginIsTheOnlyWayToRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d := w.start(t)
	ctx := context.Background()
	hold(t, d, "k", "ann@example.org")
	ok1, err1 := d.q.Begin(ctx, "k")
	ok2, err2 := d.q.Begin(ctx, "k")
	if !ok1 || ok2 || err1 != nil || err2 != nil {
		t.Fatalf("begin twice: %v %v (%v %v)", ok1, ok2, err1, err2)
	}
	// The daemon dies while the call runs: at the next start it is
	// unknown, never asked or run again.
	d.stop()
	d2 := w.start(t)
	c := d2.state(t, "k", StateUnknown)
	if c.Result == "" || len(d2.b.Pending("")) != 0 || w.runs.Load() != 0 {
		t.Fatalf("after a crash mid-run: %+v, %d cards, %d runs", c, len(d2.b.Pending("")), w.runs.Load())
	}
	if ok, _ := d2.q.Begin(ctx, "k"); ok {
		t.Fatal("an unknown call could begin again")
	}
}

func TestDeniedEditedAndRefusedCalls(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d := w.start(t)
	hold(t, d, "deny", "a@x.org")
	d.q.Adopt("deny")
	d.q.Adopt("deny") // a second adopt asks nothing more
	c := d.card(t)
	if _, err := d.b.Decide(c.ID, approval.Decision{Outcome: approval.Deny, Note: "not now"}); err != nil {
		t.Fatal(err)
	}
	if got := d.state(t, "deny", StateDenied); got.Result != "the user denied it: not run (not now)" {
		t.Fatalf("denied result %q", got.Result)
	}

	hold(t, d, "edit", "a@x.org")
	d.q.Adopt("edit")
	c = d.card(t)
	if _, err := d.b.Decide(c.ID, approval.Decision{Outcome: approval.Edit, Args: json.RawMessage(`{"to":"a@x.org","bcc":"eve"}`)}); !errors.Is(err, approval.ErrInvalid) {
		t.Fatalf("an edit with an extra field was accepted: %v", err)
	}
	if _, err := d.b.Decide(c.ID, approval.Decision{Outcome: approval.Edit, Args: json.RawMessage(`{"to":"b@x.org"}`)}); err != nil {
		t.Fatal(err)
	}
	if got := d.state(t, "edit", StateDone); string(got.Args) != `{"to":"a@x.org"}` || got.Result != `sent {"to":"b@x.org"}` {
		t.Fatalf("edited call %+v", got)
	}

	// A deny rule added while the call waited wins: it is refused without
	// a card.
	if _, err := w.rules.Create(context.Background(), policy.Rule{ID: "r1", Tool: "send", Decision: policy.Deny, Priority: 100}); err != nil {
		t.Fatal(err)
	}
	hold(t, d, "refused", "a@x.org")
	d.q.Adopt("refused")
	if got := d.state(t, "refused", StateDenied); !strings.HasPrefix(got.Result, "refused by the policy now in force: rule ") || !strings.HasSuffix(got.Result, "says deny") {
		t.Fatalf("refused result %q", got.Result)
	}
	if p := d.b.Pending(""); len(p) != 0 {
		t.Fatalf("a card was shown for a call the policy refuses: %+v", p)
	}
	if w.runs.Load() != 1 {
		t.Fatalf("runs %d, want only the edited one", w.runs.Load())
	}
	list, err := d.q.List(context.Background(), "")
	if err != nil || len(list) != 3 {
		t.Fatalf("list %d %v", len(list), err)
	}
	if _, err := d.q.Hold(context.Background(), Call{Key: "", Tool: "send"}); err == nil {
		t.Fatal("a call without a key was held")
	}
}

func TestHeldCallsRoute(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	d := w.start(t)
	hold(t, d, "a", "ann@example.org")
	hold(t, d, "b", "bob@example.org")
	d.q.Finish(context.Background(), "b", StateDenied, "no")
	mux := http.NewServeMux()
	d.q.Routes(mux)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/api/held-calls?state=waiting"); code != 200 || !strings.Contains(body, `"key":"a"`) || strings.Contains(body, `"key":"b"`) {
		t.Fatalf("waiting: %d %s", code, body)
	}
	if code, body := get("/api/held-calls"); code != 200 || strings.Count(body, `"key"`) != 2 || !strings.Contains(body, `"tainted_by":[{"tool":"mail_read"`) {
		t.Fatalf("all: %d %s", code, body)
	}
	if code, body := get("/api/held-calls?state=lost"); code != 400 || !strings.Contains(body, "state lost") {
		t.Fatalf("bad state: %d %s", code, body)
	}
}
