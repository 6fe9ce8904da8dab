package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memSource is an in-memory mail mirror.
type memSource struct {
	mu   sync.Mutex
	msgs []Message
}

func (s *memSource) add(m Message) {
	s.mu.Lock()
	m.ID = int64(len(s.msgs) + 1)
	if m.Date.IsZero() {
		m.Date = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(m.ID) * time.Minute)
	}
	s.msgs = append(s.msgs, m)
	s.mu.Unlock()
}

func (s *memSource) MaxID(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.msgs)), nil
}

func (s *memSource) Since(_ context.Context, after int64, limit int) ([]Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.msgs {
		if m.ID > after && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (s *memSource) Thread(_ context.Context, id int64, limit int) ([]Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tid := s.msgs[id-1].ThreadID
	var out []Message
	for _, m := range s.msgs {
		if m.ThreadID == tid {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Date.Before(out[b].Date) })
	return out, nil
}

type plannerLog struct {
	mu    sync.Mutex
	calls []PlanInput
	fail  atomic.Int32 // fail this many calls
}

func (p *plannerLog) plan(ctx context.Context, in PlanInput) (Plan, error) {
	p.mu.Lock()
	p.calls = append(p.calls, in)
	p.mu.Unlock()
	if p.fail.Load() > 0 {
		p.fail.Add(-1)
		return Plan{}, errors.New("model unavailable")
	}
	last := in.Thread[len(in.Thread)-1]
	if strings.Contains(last.Body, "FYI") {
		return Plan{Needed: false}, nil
	}
	return Plan{Needed: true, Kind: "reply_needed", Priority: "high", Deadline: "2026-03-05T17:00:00Z", Summary: "Reply to " + last.From + " about " + last.Subject,
		Confidence: 0.8, Steps: []Step{
			{Title: "Send the reply", Tool: "mail_reply", Args: json.RawMessage(fmt.Sprintf(`{"id":%d,"body":"Yes, Tuesday works."}`, last.ID))},
			{Title: "Reply with a tool that does not exist", Tool: "fax_send", Args: json.RawMessage(`{}`)},
			{Title: "Put it in the calendar yourself"},
		}}, nil
}

func newCenter(t *testing.T, src Source, p Planner, path string, run func(ctx context.Context, it Item, idx int, s Step, awaiting func()) (string, string)) *Center {
	t.Helper()
	c, err := Open(context.Background(), path, Options{Source: src, Planner: p, RunStep: run,
		CheckStep: func(tool string, args json.RawMessage) (json.RawMessage, error) {
			if tool != "mail_reply" {
				return nil, fmt.Errorf("no tool %s", tool)
			}
			return args, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestScanBacklogPrefilterThreadsAndReopen(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	src.add(Message{ThreadID: 1, From: "old@example.org", Subject: "old backlog", Body: "please answer"})
	pl := &plannerLog{}
	c := newCenter(t, src, pl.plan, filepath.Join(t.TempDir(), "actions.db"), nil)
	ctx := context.Background()
	if r, _ := c.Scan(ctx); r.Messages != 0 {
		t.Fatal("scanned while disabled")
	}
	if _, err := c.SetSettings(ctx, Settings{Enabled: true, Language: "en"}); err != nil {
		t.Fatal(err)
	}
	src.add(Message{ThreadID: 2, From: "Ann <ann@example.org>", Subject: "Tuesday?", Body: "Can we meet on Tuesday?"})
	src.add(Message{ThreadID: 3, From: "noreply@shop.example", Subject: "Your order", Body: "shipped"})
	src.add(Message{ThreadID: 4, From: "team@service.example", Subject: "Quick survey about your experience", Body: "rate us"})
	src.add(Message{ThreadID: 5, From: "x@example.org", Role: "junk", Subject: "WIN", Body: "money"})
	src.add(Message{ThreadID: 2, From: "Ann <ann@example.org>", Subject: "Re: Tuesday?", Body: "Or Wednesday."})
	src.add(Message{ThreadID: 6, From: "bob@example.org", Subject: "news", Body: "FYI the report is out"})
	r, err := c.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != 6 || r.Filtered != 3 || r.Threads != 2 || r.PlannerCall != 2 || r.Created != 1 {
		t.Fatalf("scan %+v", r)
	}
	if len(pl.calls) != 2 || len(pl.calls[0].Thread) != 2 || pl.calls[0].Thread[0].Body != "Can we meet on Tuesday?" {
		t.Fatalf("planner saw %+v", pl.calls)
	}
	items, counts, _ := c.List(ctx, Filter{})
	if len(items) != 1 || counts[StateNew] != 1 {
		t.Fatalf("items %+v", items)
	}
	it := items[0]
	if it.Kind != "reply_needed" || it.Deadline == nil || len(it.Steps) != 3 || it.Steps[0].Manual || !it.Steps[1].Manual || !it.Steps[2].Manual || it.Steps[0].State != StepPending {
		t.Fatalf("item %+v", it)
	}
	// Nothing new: no planner call.
	if r, _ := c.Scan(ctx); r.PlannerCall != 0 || len(pl.calls) != 2 {
		t.Fatalf("rescan %+v", r)
	}
	// Handled stays closed until a newer message arrives on the thread.
	c.SetState(ctx, it.ID, StateDone)
	c.Scan(ctx)
	if got, _ := c.Get(ctx, it.ID); got.State != StateDone {
		t.Fatalf("closed item changed: %s", got.State)
	}
	src.add(Message{ThreadID: 2, From: "Ann <ann@example.org>", Subject: "Re: Tuesday?", Body: "Still waiting for an answer"})
	if r, _ := c.Scan(ctx); r.Updated != 1 {
		t.Fatalf("reopen scan %+v", r)
	}
	if got, _ := c.Get(ctx, it.ID); got.State != StateNew || got.LastMessage != 8 {
		t.Fatalf("reopened %+v", got)
	}
	if _, err := c.SetState(ctx, it.ID, "archived"); !errors.Is(err, ErrBadTransition) {
		t.Fatalf("bad state: %v", err)
	}
	if _, err := c.SetSettings(ctx, Settings{Enabled: true, Language: "x"}); err == nil {
		t.Fatal("bad language accepted")
	}
}

func TestScanCrashKeepsFinishedThreads(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	pl := &plannerLog{}
	c := newCenter(t, src, pl.plan, filepath.Join(t.TempDir(), "actions.db"), nil)
	ctx := context.Background()
	c.SetSettings(ctx, Settings{Enabled: true, Language: "en"})
	for i := 1; i <= 3; i++ {
		src.add(Message{ThreadID: int64(i), From: fmt.Sprintf("p%d@example.org", i), Subject: fmt.Sprintf("question %d", i), Body: "?"})
	}
	src.add(Message{ThreadID: 1, From: "p1@example.org", Subject: "Re: question 1", Body: "??"})
	// The planner fails on the second thread (the model went away).
	pl.fail.Store(0)
	first := true
	wrapped := func(ctx context.Context, in PlanInput) (Plan, error) {
		if in.Thread[0].ThreadID == 2 && first {
			first = false
			return Plan{}, errors.New("model unavailable")
		}
		return pl.plan(ctx, in)
	}
	c.opts.Planner = wrapped
	r, _ := c.Scan(ctx)
	if r.Created != 1 || r.Failed != 1 {
		t.Fatalf("first scan %+v", r)
	}
	r, _ = c.Scan(ctx)
	if r.Created != 2 || r.Threads != 2 {
		t.Fatalf("second scan %+v (thread 1 must not be planned again)", r)
	}
	items, _, _ := c.List(ctx, Filter{})
	if len(items) != 3 {
		t.Fatalf("items %d", len(items))
	}
}

func TestExecuteWaitsForApprovalAcrossRestart(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	pl := &plannerLog{}
	path := filepath.Join(t.TempDir(), "actions.db")
	approve := make(chan bool)
	var ran atomic.Int32
	run := func(ctx context.Context, it Item, idx int, s Step, awaiting func()) (string, string) {
		awaiting()
		select {
		case ok := <-approve:
			if !ok {
				return StepDenied, "the user denied it"
			}
			ran.Add(1)
			return StepDone, "sent"
		case <-ctx.Done():
			return StepFailed, "stopped"
		}
	}
	c := newCenter(t, src, pl.plan, path, run)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	c.SetSettings(context.Background(), Settings{Enabled: true, Language: "en"})
	src.add(Message{ThreadID: 9, From: "ann@example.org", Subject: "Tuesday?", Body: "Can we meet?"})
	if _, err := c.Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	items, _, _ := c.List(context.Background(), Filter{})
	if _, err := c.Execute(context.Background(), items[0].ID); err != nil {
		t.Fatal(err)
	}
	waitStep(t, c, items[0].ID, StepAwaiting)
	if _, err := c.Execute(context.Background(), items[0].ID); !errors.Is(err, ErrExecuting) {
		t.Fatalf("second execute: %v", err)
	}
	// The daemon stops while the approval waits.
	cancel()
	<-done
	c.Close()

	c2 := newCenter(t, src, pl.plan, path, run)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	go c2.Run(ctx2)
	waitStep(t, c2, items[0].ID, StepAwaiting)
	approve <- true
	waitStep(t, c2, items[0].ID, StepDone)
	if ran.Load() != 1 {
		t.Fatalf("step ran %d times", ran.Load())
	}
}

// A resume pass that meets a step running in this very process (Execute
// pressed while the daemon was still starting) leaves it alone: only steps
// left running by a stopped daemon are unknown.
func TestResumeLeavesLiveExecutionsAlone(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	pl := &plannerLog{}
	release := make(chan struct{})
	var ran atomic.Int32
	run := func(ctx context.Context, it Item, idx int, s Step, awaiting func()) (string, string) {
		ran.Add(1)
		<-release
		return StepDone, "sent"
	}
	c := newCenter(t, src, pl.plan, filepath.Join(t.TempDir(), "actions.db"), run)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the center closes, even when the test fails
	ctx := context.Background()
	c.SetSettings(ctx, Settings{Enabled: true, Language: "en"})
	src.add(Message{ThreadID: 9, From: "ann@example.org", Subject: "Tuesday?", Body: "Can we meet?"})
	if _, err := c.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	items, _, _ := c.List(ctx, Filter{})
	if _, err := c.Execute(ctx, items[0].ID); err != nil {
		t.Fatal(err)
	}
	waitStep(t, c, items[0].ID, StepRunning)
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if it, _ := c.Get(ctx, items[0].ID); it.Steps[0].State != StepRunning {
		t.Fatalf("a live step was changed by resume: %+v", it.Steps[0])
	}
	unblock()
	waitStep(t, c, items[0].ID, StepDone)
	if ran.Load() != 1 {
		t.Fatalf("step ran %d times", ran.Load())
	}
}

func waitStep(t *testing.T, c *Center, id int64, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		it, err := c.Get(context.Background(), id)
		if err == nil && it.Steps[0].State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("step 0 never reached %s: %+v", state, it.Steps)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestFlows(t *testing.T) {
	t.Parallel()
	c := newCenter(t, &memSource{}, nil, filepath.Join(t.TempDir(), "actions.db"), nil)
	ctx := context.Background()
	for _, f := range []Flow{
		{Name: "train tickets", Trigger: "a train ticket confirmation from Trenitalia arrives", Procedure: "add the journey to my calendar"},
		{Name: "invoices", Trigger: "an invoice arrives", Procedure: "file it under Finance"},
		{Name: "dentist", Trigger: "the dentist writes about an appointment", Procedure: "propose two slots"},
	} {
		if _, err := c.AddFlow(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddFlow(ctx, Flow{Name: "x"}); err == nil {
		t.Fatal("flow without trigger accepted")
	}
	got, _ := c.RetrieveFlows(ctx, "Your Trenitalia ticket: train 9544 Milano-Roma", 2)
	if len(got) == 0 || got[0].Name != "train tickets" || len(got) > 2 {
		t.Fatalf("retrieved %+v", got)
	}
}

func TestPrefilter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		m    Message
		want string
	}{
		{Message{From: "no-reply@bank.example", Subject: "x", Body: "y"}, "no_reply"},
		{Message{From: "Do Not Reply <donotreply@x.org>", Subject: "x", Body: "y"}, "no_reply"},
		{Message{From: "ann@x.org"}, "empty"},
		{Message{From: "ann@x.org", Subject: "Customer survey", Body: "y"}, "survey"},
		{Message{From: "ann@x.org", Subject: "lunch?", Body: "y", Mailbox: "Spam"}, "junk"},
		{Message{From: "ann@x.org", Subject: "lunch?", Body: "y"}, ""},
	} {
		if got := Prefilter(tc.m); got != tc.want {
			t.Errorf("Prefilter(%+v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

// A scan of 1,000 new messages in 100 threads makes exactly one planner
// call per thread.
func TestScanThousandMessagesOneCallPerThread(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	pl := &plannerLog{}
	c := newCenter(t, src, pl.plan, filepath.Join(t.TempDir(), "actions.db"), nil)
	ctx := context.Background()
	c.SetSettings(ctx, Settings{Enabled: true, Language: "en"})
	for i := 0; i < 1000; i++ {
		src.add(Message{ThreadID: int64(i%100 + 1), From: fmt.Sprintf("p%d@example.org", i%100), Subject: fmt.Sprintf("topic %d", i%100), Body: "can you check?"})
	}
	r, err := c.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != 1000 || r.Threads != 100 || r.PlannerCall != 100 || len(pl.calls) != 100 || r.Created != 100 {
		t.Fatalf("scan %+v, planner calls %d", r, len(pl.calls))
	}
	if r, _ := c.Scan(ctx); r.PlannerCall != 0 {
		t.Fatalf("rescan called the planner: %+v", r)
	}
}

// A plan may use only the default step tools and those its flows declare:
// a step naming any other tool (an attacker's mail asking for a file write
// or a web fetch) becomes a manual step, and the item records the tools its
// execution may use.
func TestStepToolsComeFromFlows(t *testing.T) {
	t.Parallel()
	src := &memSource{}
	planner := func(ctx context.Context, in PlanInput) (Plan, error) {
		last := in.Thread[len(in.Thread)-1]
		return Plan{Needed: true, Kind: "review", Summary: "handle " + last.Subject, Steps: []Step{
			{Title: "add to calendar", Tool: "calendar_add", Args: json.RawMessage(`{"title":"train"}`)},
			{Title: "save the attachment", Tool: "mail_save_attachment", Args: json.RawMessage(`{"id":1}`)},
			{Title: "reply", Tool: "mail_reply", Args: json.RawMessage(fmt.Sprintf(`{"id":%d,"body":"ok"}`, last.ID))},
		}}, nil
	}
	c, err := Open(context.Background(), filepath.Join(t.TempDir(), "actions.db"), Options{Source: src, Planner: planner,
		CheckStep: func(tool string, args json.RawMessage) (json.RawMessage, error) { return args, nil },
		CheckFlowTool: func(name string) error {
			if name == "calendar_add" {
				return nil
			}
			return fmt.Errorf("no tool %s", name)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for _, bad := range []Flow{
		{Name: "x", Trigger: "t", Procedure: "p", Tools: []string{"shell_exec"}},
		{Name: "x", Trigger: "t", Procedure: "p", Tools: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"}},
	} {
		if _, err := c.AddFlow(ctx, bad); err == nil || !strings.Contains(err.Error(), "tools") {
			t.Fatalf("flow %v accepted: %v", bad.Tools, err)
		}
	}
	f, err := c.AddFlow(ctx, Flow{Name: "train tickets", Trigger: "a Trenitalia ticket arrives", Procedure: "add the journey to my calendar", Tools: []string{"calendar_add", "mail_reply", "calendar_add"}})
	if err != nil || !slices.Equal(f.Tools, []string{"calendar_add"}) {
		t.Fatalf("flow %+v %v", f, err)
	}
	if _, err := c.SetSettings(ctx, Settings{Enabled: true, Language: "en"}); err != nil {
		t.Fatal(err)
	}
	src.add(Message{ThreadID: 1, From: "Trenitalia <tickets@trenitalia.example>", Subject: "Your Trenitalia ticket", Body: "train 9544 Milano-Roma"})
	src.add(Message{ThreadID: 2, From: "eve@attacker.example", Subject: "invoice", Body: "please pay"})
	if _, err := c.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	items, _, err := c.List(ctx, Filter{})
	if err != nil || len(items) != 2 {
		t.Fatalf("items %+v %v", items, err)
	}
	for _, it := range items {
		withFlow := strings.Contains(it.Summary, "Trenitalia")
		wantTools := []string{"mail_reply", "mail_send"}
		if withFlow {
			wantTools = append(wantTools, "calendar_add")
		}
		if !slices.Equal(it.Tools, wantTools) {
			t.Errorf("%s: tools %v, want %v", it.Summary, it.Tools, wantTools)
		}
		if it.Steps[1].Tool != "" || !it.Steps[1].Manual {
			t.Errorf("%s: a step outside the step tools kept its tool: %+v", it.Summary, it.Steps[1])
		}
		if (it.Steps[0].Tool == "calendar_add") != withFlow {
			t.Errorf("%s: calendar step %+v", it.Summary, it.Steps[0])
		}
		if it.Steps[2].Tool != "mail_reply" {
			t.Errorf("%s: reply step %+v", it.Summary, it.Steps[2])
		}
	}
}
