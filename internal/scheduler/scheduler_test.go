package scheduler

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

var t0 = time.Date(2026, 3, 7, 10, 0, 0, 0, time.UTC) // a Saturday

func open(t *testing.T, path string, c *clock) *Scheduler {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSched(t *testing.T) (*Scheduler, *clock, string) {
	c := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "scheduler.db")
	return open(t, path, c), c, path
}

func counter(n *atomic.Int32) Func {
	return func(context.Context) error { n.Add(1); return nil }
}

func tick(t *testing.T, s *Scheduler) time.Time {
	t.Helper()
	next, err := s.Tick(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.Wait()
	return next
}

func history(t *testing.T, s *Scheduler, name string) []Run {
	t.Helper()
	h, err := s.History(context.Background(), name, 100)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestIntervalRunsWhenDueAndJournals(t *testing.T) {
	t.Parallel()
	s, c, _ := newSched(t)
	var n atomic.Int32
	ctx := context.Background()
	if err := s.Register(ctx, Def{Name: "sync", Schedule: Schedule{Every: Duration(5 * time.Minute)}, Run: counter(&n)}); err != nil {
		t.Fatal(err)
	}
	if next := tick(t, s); !next.Equal(t0.Add(5 * time.Minute)) {
		t.Fatalf("next = %v, want %v", next, t0.Add(5*time.Minute))
	}
	if n.Load() != 0 {
		t.Fatal("ran before it was due")
	}
	c.Advance(5 * time.Minute)
	tick(t, s)
	tick(t, s) // same instant: not due again
	if n.Load() != 1 {
		t.Fatalf("ran %d times, want 1", n.Load())
	}
	h := history(t, s, "sync")
	if len(h) != 1 || h[0].Status != StatusOK || h[0].Trigger != TriggerSchedule || h[0].EndedAt == nil || h[0].DurationMS == nil {
		t.Fatalf("journal = %+v", h)
	}
	jobs, err := s.List(ctx)
	if err != nil || len(jobs) != 1 || jobs[0].LastRun == nil || !jobs[0].NextRun.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("list = %+v, %v", jobs, err)
	}
}

func TestCronNextAndMalformed(t *testing.T) {
	t.Parallel()
	s, c, _ := newSched(t)
	ctx := context.Background()
	j, err := s.Add(ctx, UserJob{Name: "briefing", Schedule: Schedule{Cron: "0 8 * * 1-5"}, Prompt: "brief me"})
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 3, 9, 8, 0, 0, 0, time.UTC) // Monday
	if j.NextRun == nil || !j.NextRun.Equal(want) {
		t.Fatalf("next run = %v, want %v", j.NextRun, want)
	}
	_ = c
	for _, tc := range []struct {
		job   UserJob
		field string
	}{
		{UserJob{Name: "x", Schedule: Schedule{Cron: "0 8 * *"}, Prompt: "p"}, "cron"},
		{UserJob{Name: "x", Schedule: Schedule{Cron: "61 * * * *"}, Prompt: "p"}, "cron"},
		{UserJob{Name: "x", Schedule: Schedule{}, Prompt: "p"}, "schedule"},
		{UserJob{Name: "x", Schedule: Schedule{Cron: "@daily", Every: Duration(time.Hour)}, Prompt: "p"}, "schedule"},
		{UserJob{Name: "x", Schedule: Schedule{Every: Duration(time.Millisecond)}, Prompt: "p"}, "every"},
		{UserJob{Name: "x", Schedule: Schedule{At: t0.Add(-time.Hour)}, Prompt: "p"}, "at"},
		{UserJob{Name: "Bad Name", Schedule: Schedule{Cron: "@daily"}, Prompt: "p"}, "name"},
		{UserJob{Name: "x", Schedule: Schedule{Cron: "@daily"}}, "prompt"},
		{UserJob{Name: "x", Schedule: Schedule{Cron: "@daily"}, Prompt: "p", Timeout: Duration(48 * time.Hour)}, "timeout"},
		{UserJob{Name: "briefing", Schedule: Schedule{Cron: "@daily"}, Prompt: "other"}, "name"},
	} {
		_, err := s.Add(ctx, tc.job)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Add(%+v) = %v, want a %s field error", tc.job, err, tc.field)
		}
	}
	jobs, _ := s.List(ctx)
	if len(jobs) != 1 || jobs[0].Prompt != "brief me" {
		t.Fatalf("bad adds changed the stored jobs: %+v", jobs)
	}
}

func TestMissedRunRunsOnceAfterRestart(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "scheduler.db")
	ctx := context.Background()
	var n atomic.Int32
	def := Def{Name: "embed", Schedule: Schedule{Every: Duration(time.Minute)}, Run: counter(&n)}
	s1 := open(t, path, c)
	if err := s1.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	s1.Close()

	// The daemon was down for an hour: sixty slots passed.
	c.Advance(time.Hour)
	s2 := open(t, path, c)
	if err := s2.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	tick(t, s2)
	tick(t, s2)
	if n.Load() != 1 {
		t.Fatalf("ran %d times after the restart, want 1", n.Load())
	}
	h := history(t, s2, "embed")
	if len(h) != 1 || h[0].Trigger != TriggerMissed {
		t.Fatalf("journal = %+v, want one missed run", h)
	}
	j, _ := s2.Get(ctx, "embed")
	if want := t0.Add(time.Hour + time.Minute); !j.NextRun.Equal(want) {
		t.Fatalf("next run = %v, want %v (one interval after the catch-up)", j.NextRun, want)
	}
}

func TestRegisterKeepsNextRunWhenScheduleUnchanged(t *testing.T) {
	t.Parallel()
	s, c, _ := newSched(t)
	ctx := context.Background()
	var n atomic.Int32
	def := Def{Name: "promote", Schedule: Schedule{Every: Duration(time.Hour)}, Run: counter(&n)}
	if err := s.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	c.Advance(30 * time.Minute)
	if err := s.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Get(ctx, "promote")
	if !j.NextRun.Equal(t0.Add(time.Hour)) {
		t.Fatalf("re-registering moved the next run to %v", j.NextRun)
	}
	def.Schedule = Schedule{Every: Duration(2 * time.Hour)}
	if err := s.Register(ctx, def); err != nil {
		t.Fatal(err)
	}
	j, _ = s.Get(ctx, "promote")
	if !j.NextRun.Equal(t0.Add(30*time.Minute + 2*time.Hour)) {
		t.Fatalf("a changed schedule kept the old next run %v", j.NextRun)
	}
}

func TestNoOverlap(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	ctx := context.Background()
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	if err := s.Register(ctx, Def{Name: "slow", Schedule: Schedule{Cron: "@hourly"}, Run: func(ctx context.Context) error {
		started <- struct{}{}
		<-release
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunNow(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	<-started
	if _, err := s.RunNow(ctx, "slow"); !errors.Is(err, ErrRunning) {
		t.Fatalf("second run while the first runs: %v, want ErrRunning", err)
	}
	jobs, _ := s.List(ctx)
	if !jobs[0].Running {
		t.Fatal("list does not show the job running")
	}
	close(release)
	s.Wait()
	h := history(t, s, "slow")
	if len(h) != 2 || h[0].Status != StatusSkipped || h[1].Status != StatusOK || h[1].Trigger != TriggerManual {
		t.Fatalf("journal = %+v", h)
	}
	if len(started) != 0 {
		t.Fatal("the job overlapped itself")
	}
}

func TestTimeoutErrorAndPanic(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	ctx := context.Background()
	reg := func(name string, timeout time.Duration, fn Func) {
		if err := s.Register(ctx, Def{Name: name, Schedule: Schedule{Cron: "@daily"}, Timeout: timeout, Run: fn}); err != nil {
			t.Fatal(err)
		}
	}
	reg("hang", 20*time.Millisecond, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	reg("fail", 0, func(context.Context) error { return errors.New("imap: connection refused") })
	reg("boom", 0, func(context.Context) error { panic("nil map") })
	for _, name := range []string{"hang", "fail", "boom"} {
		if _, err := s.RunNow(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	s.Wait()
	for name, want := range map[string]string{"hang": StatusTimeout, "fail": StatusError, "boom": StatusError} {
		h := history(t, s, name)
		if len(h) != 1 || h[0].Status != want || h[0].Error == "" {
			t.Errorf("%s journal = %+v, want status %s with an error", name, h, want)
		}
	}
}

func TestOneOffRunsOnce(t *testing.T) {
	t.Parallel()
	s, c, _ := newSched(t)
	ctx := context.Background()
	var got []string
	var mu sync.Mutex
	s.SetPromptRunner(func(ctx context.Context, j Job) (string, error) {
		mu.Lock()
		got = append(got, j.Prompt+"|"+j.ChatID)
		mu.Unlock()
		return "chat-1", nil
	})
	if _, err := s.Add(ctx, UserJob{Name: "remind", Schedule: Schedule{At: t0.Add(time.Hour)}, Prompt: "call mum"}); err != nil {
		t.Fatal(err)
	}
	c.Advance(3 * time.Hour) // asleep through it: still runs, once
	tick(t, s)
	tick(t, s)
	if len(got) != 1 || got[0] != "call mum|" {
		t.Fatalf("runs = %q", got)
	}
	j, _ := s.Get(ctx, "remind")
	if j.NextRun != nil || j.ChatID != "chat-1" || j.LastRun.Trigger != TriggerMissed {
		t.Fatalf("after the one-off: %+v", j)
	}
	if _, err := s.RunNow(ctx, "remind"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if len(got) != 2 || got[1] != "call mum|chat-1" {
		t.Fatalf("the second run did not reuse the job's chat: %q", got)
	}
}

func TestUserJobWithoutRunnerFails(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	ctx := context.Background()
	if _, err := s.Add(ctx, UserJob{Name: "u", Schedule: Schedule{Cron: "@daily"}, Prompt: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunNow(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	if h := history(t, s, "u"); h[0].Status != StatusError {
		t.Fatalf("journal = %+v", h)
	}
	if err := s.Remove(ctx, "u"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "u"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("removed job still there: %v", err)
	}
}

func TestBuiltinCannotBeRemoved(t *testing.T) {
	t.Parallel()
	s, _, _ := newSched(t)
	ctx := context.Background()
	var n atomic.Int32
	s.Register(ctx, Def{Name: "b", Schedule: Schedule{Cron: "@daily"}, Run: counter(&n)})
	if err := s.Remove(ctx, "b"); !errors.Is(err, ErrBuiltin) {
		t.Fatalf("Remove(builtin) = %v", err)
	}
	if _, err := s.RunNow(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("RunNow(missing) = %v", err)
	}
}

func TestInterruptedRunsClosedOnStart(t *testing.T) {
	t.Parallel()
	c := &clock{t: t0}
	path := filepath.Join(t.TempDir(), "scheduler.db")
	ctx := context.Background()
	s1 := open(t, path, c)
	var n atomic.Int32
	s1.Register(ctx, Def{Name: "b", Schedule: Schedule{Cron: "@daily"}, Run: counter(&n)})
	// What a kill -9 mid-run leaves behind.
	if _, err := s1.startRun(ctx, "b", TriggerSchedule, nil, t0, StatusRunning); err != nil {
		t.Fatal(err)
	}
	s1.Close()
	s2 := open(t, path, c)
	jobs, _ := s2.List(ctx)
	if !jobs[0].Running {
		t.Fatal("a reader should see the running row")
	}
	if err := s2.CloseInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	if h := history(t, s2, "b"); h[0].Status != StatusInterrupted {
		t.Fatalf("journal = %+v", h)
	}
}

func TestDisablePausesAndResumeDoesNotCountAsMissed(t *testing.T) {
	t.Parallel()
	s, c, _ := newSched(t)
	ctx := context.Background()
	var n atomic.Int32
	s.Register(ctx, Def{Name: "b", Schedule: Schedule{Every: Duration(time.Minute)}, Run: counter(&n)})
	if _, err := s.SetEnabled(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	tick(t, s)
	if n.Load() != 0 {
		t.Fatal("a disabled job ran")
	}
	j, err := s.SetEnabled(ctx, "b", true)
	if err != nil || !j.NextRun.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("resumed: %+v %v", j, err)
	}
	tick(t, s)
	if n.Load() != 0 {
		t.Fatal("resuming ran the job at once")
	}
}

func TestJitterStableAndBounded(t *testing.T) {
	t.Parallel()
	slot := t0
	a := jitter("a", slot, time.Minute)
	if a != jitter("a", slot, time.Minute) {
		t.Fatal("jitter is not stable for one slot")
	}
	distinct := map[time.Duration]bool{}
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		j := jitter(name, slot, time.Minute)
		if j < 0 || j >= time.Minute {
			t.Fatalf("jitter %v out of range", j)
		}
		distinct[j] = true
	}
	if len(distinct) < 2 {
		t.Fatal("jitter does not spread jobs")
	}
	if jitter("a", slot, 0) != 0 {
		t.Fatal("zero jitter")
	}
	s, _, _ := newSched(t)
	var n atomic.Int32
	ctx := context.Background()
	s.Register(ctx, Def{Name: "j", Schedule: Schedule{Every: Duration(time.Hour)}, Jitter: 10 * time.Minute, Run: counter(&n)})
	j, _ := s.Get(ctx, "j")
	if d := j.NextRun.Sub(t0.Add(time.Hour)); d < 0 || d >= 10*time.Minute {
		t.Fatalf("jittered next run off by %v", d)
	}
}

func TestRunLoopFiresAndStops(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "scheduler.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fired := make(chan struct{}, 1)
	s.SetPromptRunner(func(ctx context.Context, j Job) (string, error) { fired <- struct{}{}; return "", nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	if _, err := s.Add(context.Background(), UserJob{Name: "soon", Schedule: Schedule{At: time.Now().Add(2 * time.Second)}, Prompt: "p"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(30 * time.Second):
		t.Fatal("the loop never ran the due job")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
