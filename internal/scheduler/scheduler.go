// Package scheduler runs Hestia's background jobs: built-in maintenance
// (registered in code with a function) and user jobs (a prompt run as a
// headless agent turn). A job fires on an interval, a cron expression or
// once at a set time; each run has a timeout, a job never overlaps itself,
// jitter spreads jobs that share a slot, and a run missed while the daemon
// was down (sleep, restart) runs once, not once per missed tick.
//
// Every run is journaled in the scheduler's own database (start, end,
// status, error, duration) before and after it runs; the next due time is
// stored too, which is what makes missed runs detectable after a restart.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// built-in and user jobs (`scheduler.db`): interval / cron (robfig/cron/v3) / one-off schedules,
// per-run timeout, no self-overlap, stable per-slot jitter, a missed run runs once after downtime,
// the run journal; user jobs are background agent turns in their own chat whose gated calls wait
// for the user (approvals with no expiry, held durably by `heldcall`). The daemon's periodic work
// is built-in jobs (`internal/app/builtinjobs.go`): `mail.reconcile`, `mail.imap.ACCOUNT`,
// `mail.embed`, `mail.ops`, `actions.scan`, `wiki.promote`; a failing built-in job notifies once a
// day, not once a run. Each run journals a result text (SetResult: a user job's final answer, a
// built-in's summary); a job's `deliver` list (inbox, push, telegram; default inbox+push for user
// jobs) says where the app sends it, successes included.
package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/store"
)

// Func is a built-in job's work. It must return when ctx ends.
type Func func(ctx context.Context) error

// PromptRunner runs a user job's prompt (the app runs it as a headless
// agent turn in the job's own chat). It returns the chat it used so later
// runs continue there.
type PromptRunner func(ctx context.Context, job Job) (chatID string, err error)

// Defaults.
const (
	DefaultTimeout = 10 * time.Minute
	MaxTimeout     = 24 * time.Hour
	// MissedAfter is how late a due run must be to count as missed (the
	// daemon was down or the machine asleep) rather than merely late.
	MissedAfter = time.Minute
	// KeepRuns bounds the journal per job.
	KeepRuns = 500
	// maxWait bounds one sleep of the loop, so a changed wall clock (sleep,
	// NTP step) is noticed within a minute.
	maxWait = time.Minute
)

// Errors callers handle.
var (
	ErrRunning = errors.New("job is already running")
	ErrBuiltin = errors.New("built-in jobs cannot be changed or removed")
	ErrExists  = errors.New("a job with this name already exists")
)

// Options configure a Scheduler.
type Options struct {
	Log    *slog.Logger
	Now    func() time.Time
	Prompt PromptRunner // nil: user jobs fail with a clear error
	// OnRunEnd, when set, is told about every finished run (notifications).
	OnRunEnd func(Run)
}

// Scheduler owns the job table and the run journal.
type Scheduler struct {
	db   *store.DB
	log  *slog.Logger
	now  func() time.Time
	opts Options
	kick chan struct{}

	mu      sync.Mutex // guards the fields below
	funcs   map[string]Func
	running map[string]context.CancelFunc
	base    context.Context // Run's context; runs end with it
	wg      sync.WaitGroup
}

// Open opens (creating) the scheduler database at path.
func Open(ctx context.Context, path string, o Options) (*Scheduler, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Scheduler{db: db, log: o.Log, now: o.Now, opts: o, kick: make(chan struct{}, 1),
		funcs: map[string]Func{}, running: map[string]context.CancelFunc{}}, nil
}

// Close waits for running jobs and closes the database.
func (s *Scheduler) Close() error {
	s.wg.Wait()
	return s.db.Close()
}

// SetPromptRunner installs the user-job runner (wiring order).
func (s *Scheduler) SetPromptRunner(p PromptRunner) {
	s.mu.Lock()
	s.opts.Prompt = p
	s.mu.Unlock()
}

// Def is a built-in job.
type Def struct {
	Name     string
	Schedule Schedule
	Timeout  time.Duration
	Jitter   time.Duration
	Run      Func
}

var nameRE = lazyre.New(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fieldErr("name", "%q must be 1–64 lowercase letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

func checkTimeout(field string, d time.Duration) error {
	if d < 0 || d > MaxTimeout {
		return fieldErr(field, "must be between 0 (default %s) and %s, got %s", DefaultTimeout, MaxTimeout, d)
	}
	return nil
}

// Register adds or updates a built-in job. A job whose schedule is
// unchanged keeps its stored next run, so a restart does not reset it.
func (s *Scheduler) Register(ctx context.Context, d Def) error {
	if err := checkName(d.Name); err != nil {
		return err
	}
	c, err := compile(d.Schedule)
	if err != nil {
		return fmt.Errorf("job %s: %w", d.Name, err)
	}
	if d.Run == nil {
		return fmt.Errorf("job %s: no function", d.Name)
	}
	if err := checkTimeout("timeout", d.Timeout); err != nil {
		return err
	}
	sched, _ := json.Marshal(d.Schedule)
	now := s.now()
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		var old string
		var builtin bool
		err := tx.QueryRowContext(ctx, `SELECT schedule, builtin FROM jobs WHERE name = ?`, d.Name).Scan(&old, &builtin)
		switch {
		case err == nil && !builtin:
			return fmt.Errorf("job %s: a user job has the name of a built-in job; rename it", d.Name)
		case err == nil:
			next := any(nil)
			if old != string(sched) {
				next = nextMS(c, d.Name, now, d.Jitter)
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET schedule = ?, timeout_ms = ?, jitter_ms = ?, next_run = ? WHERE name = ?`,
					sched, d.Timeout.Milliseconds(), d.Jitter.Milliseconds(), next, d.Name)
			} else {
				_, err = tx.ExecContext(ctx, `UPDATE jobs SET timeout_ms = ?, jitter_ms = ? WHERE name = ?`, d.Timeout.Milliseconds(), d.Jitter.Milliseconds(), d.Name)
			}
			return err
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO jobs (name, builtin, schedule, timeout_ms, jitter_ms, next_run, created_at) VALUES (?, 1, ?, ?, ?, ?, ?)`,
				d.Name, sched, d.Timeout.Milliseconds(), d.Jitter.Milliseconds(), nextMS(c, d.Name, now, d.Jitter), ms(now))
			return err
		default:
			return err
		}
	})
	if err != nil {
		return fmt.Errorf("registering job %s: %w", d.Name, err)
	}
	s.mu.Lock()
	s.funcs[d.Name] = d.Run
	s.mu.Unlock()
	s.Kick()
	return nil
}

// nextMS is the first due time after now, jitter included, as unix ms (nil
// when the schedule never fires again).
func nextMS(c compiled, name string, now time.Time, jit time.Duration) any {
	t, ok := c.next(now)
	if !ok {
		return nil
	}
	return ms(t.Add(jitter(name, t, jit)))
}

// UserJob is a job the user defines: a prompt on a schedule.
type UserJob struct {
	Name     string   `json:"name"`
	Schedule Schedule `json:"schedule"`
	Prompt   string   `json:"prompt"`
	Timeout  Duration `json:"timeout,omitempty"`
	Jitter   Duration `json:"jitter,omitempty"`
	// Deliver is where results go (ParseDeliver); nil: inbox and push.
	Deliver []string `json:"deliver,omitempty"`
}

// MaxPrompt bounds a user job's prompt.
const MaxPrompt = 8000

// Add stores a new user job. Errors naming a field are *FieldError.
func (s *Scheduler) Add(ctx context.Context, u UserJob) (Job, error) {
	if err := checkName(u.Name); err != nil {
		return Job{}, err
	}
	c, err := compile(u.Schedule)
	if err != nil {
		return Job{}, err
	}
	if u.Prompt == "" {
		return Job{}, fieldErr("prompt", "is required: what should the assistant do when the job runs?")
	}
	if len(u.Prompt) > MaxPrompt {
		return Job{}, fieldErr("prompt", "is %d bytes, at most %d", len(u.Prompt), MaxPrompt)
	}
	if err := checkTimeout("timeout", u.Timeout.D()); err != nil {
		return Job{}, err
	}
	if u.Jitter < 0 || u.Jitter.D() > time.Hour {
		return Job{}, fieldErr("jitter", "must be between 0 and 1h, got %s", u.Jitter.D())
	}
	deliver, err := notify.ParseDeliver(u.Deliver)
	if err != nil {
		return Job{}, err
	}
	now := s.now()
	next := nextMS(c, u.Name, now, u.Jitter.D())
	if next == nil {
		return Job{}, fieldErr("at", "%s is in the past", u.Schedule.At.Format(time.RFC3339))
	}
	sched, _ := json.Marshal(u.Schedule)
	_, err = s.db.ExecContext(ctx, `INSERT INTO jobs (name, builtin, schedule, timeout_ms, jitter_ms, prompt, next_run, created_at, deliver) VALUES (?, 0, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO NOTHING`, u.Name, sched, u.Timeout.D().Milliseconds(), u.Jitter.D().Milliseconds(), u.Prompt, next, ms(now), strings.Join(deliver, ","))
	if err != nil {
		return Job{}, fmt.Errorf("storing job %s: %w", u.Name, err)
	}
	j, err := s.getJob(ctx, u.Name)
	if err != nil {
		return Job{}, err
	}
	if j.Builtin || j.Prompt != u.Prompt || !j.Created.Equal(time.UnixMilli(ms(now)).UTC()) {
		return Job{}, &FieldError{Field: "name", Msg: fmt.Sprintf("%q: %v", u.Name, ErrExists)}
	}
	s.Kick()
	return j, nil
}

// Remove deletes a user job (its journal stays).
func (s *Scheduler) Remove(ctx context.Context, name string) error {
	j, err := s.getJob(ctx, name)
	if err != nil {
		return err
	}
	if j.Builtin {
		return fmt.Errorf("job %s: %w", name, ErrBuiltin)
	}
	s.mu.Lock()
	if cancel := s.running[name]; cancel != nil {
		cancel()
	}
	s.mu.Unlock()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM jobs WHERE name = ? AND builtin = 0`, name); err != nil {
		return fmt.Errorf("removing job %s: %w", name, err)
	}
	return nil
}

// SetEnabled pauses or resumes a job. Resuming computes a fresh next run,
// so a long pause does not count as a missed run.
func (s *Scheduler) SetEnabled(ctx context.Context, name string, on bool) (Job, error) {
	j, err := s.getJob(ctx, name)
	if err != nil {
		return Job{}, err
	}
	c, err := compile(j.Schedule)
	if err != nil {
		return Job{}, err
	}
	next := any(nil)
	if on {
		next = nextMS(c, name, s.now(), j.Jitter.D())
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET enabled = ?, next_run = ? WHERE name = ?`, on, next, name); err != nil {
		return Job{}, fmt.Errorf("updating job %s: %w", name, err)
	}
	s.Kick()
	return s.Get(ctx, name)
}

// List returns every job with its last run and whether it is running.
func (s *Scheduler) List(ctx context.Context) ([]Job, error) {
	jobs, err := s.listJobs(ctx)
	if err != nil {
		return nil, err
	}
	last, err := s.lastRuns(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range jobs {
		if r, ok := last[jobs[i].Name]; ok {
			jobs[i].LastRun = &r
			// A CLI process reading the journal has no in-memory state; a
			// running row is what it can see.
			jobs[i].Running = r.Status == StatusRunning
		}
		if _, ok := s.running[jobs[i].Name]; ok {
			jobs[i].Running = true
		}
	}
	if jobs == nil {
		jobs = []Job{}
	}
	return jobs, nil
}

// Get returns one job.
func (s *Scheduler) Get(ctx context.Context, name string) (Job, error) {
	jobs, err := s.List(ctx)
	if err != nil {
		return Job{}, err
	}
	for _, j := range jobs {
		if j.Name == name {
			return j, nil
		}
	}
	return Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
}

// Kick wakes the loop (a job was added or changed).
func (s *Scheduler) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Run is the daemon worker: it marks runs left "running" by a previous
// process as interrupted, then starts due jobs until ctx ends, and waits
// for the runs in flight (they see ctx end) before returning.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.CloseInterrupted(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.base = ctx
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.base = nil
		s.mu.Unlock()
		s.wg.Wait()
	}()
	for {
		wait := maxWait
		if next, err := s.Tick(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("schedulerTick", "err", err)
		} else if !next.IsZero() {
			wait = min(max(next.Sub(s.now()), 0), maxWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// CloseInterrupted marks runs a previous daemon left "running" (it was
// killed mid-run) as interrupted. Only the daemon calls it: a CLI process
// reading the journal must not close runs the daemon is doing.
func (s *Scheduler) CloseInterrupted(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, error = 'the daemon stopped during the run', ended_at = ? WHERE status = ?`,
		StatusInterrupted, ms(s.now()), StatusRunning); err != nil {
		return fmt.Errorf("closing interrupted runs: %w", err)
	}
	return nil
}

// Tick starts every enabled job that is due at the current time and
// returns the earliest next due time (zero when nothing is scheduled).
// Run calls it; tests call it with a controlled clock.
func (s *Scheduler) Tick(ctx context.Context) (time.Time, error) {
	jobs, err := s.listJobs(ctx)
	if err != nil {
		return time.Time{}, err
	}
	now := s.now()
	var earliest time.Time
	for _, j := range jobs {
		if !j.Enabled || j.NextRun == nil {
			continue
		}
		due := *j.NextRun
		if due.After(now) {
			if earliest.IsZero() || due.Before(earliest) {
				earliest = due
			}
			continue
		}
		c, err := compile(j.Schedule)
		if err != nil {
			s.log.Error("schedulerBadJob", "job", j.Name, "err", err)
			continue
		}
		// The next slot is computed from now, never from the missed due
		// time: however many slots passed, the job runs once. An interval
		// keeps its cadence when it is merely late.
		base := now
		if j.Schedule.Every != 0 && due.Add(j.Schedule.Every.D()).After(now) {
			base = due
		}
		var next *time.Time
		if t, ok := c.next(base); ok {
			t = t.Add(jitter(j.Name, t, j.Jitter.D()))
			next = &t
			if earliest.IsZero() || t.Before(earliest) {
				earliest = t
			}
		}
		if err := s.setNext(ctx, j.Name, next); err != nil {
			return time.Time{}, err
		}
		trigger := TriggerSchedule
		if now.Sub(due) > MissedAfter {
			trigger = TriggerMissed
		}
		if _, err := s.start(ctx, j, trigger, &due); err != nil && !errors.Is(err, ErrRunning) {
			s.log.Error("schedulerStart", "job", j.Name, "err", err)
		}
	}
	return earliest, nil
}

// RunNow starts a job at once (manual trigger) and returns the run's id.
// It does not move the job's schedule.
func (s *Scheduler) RunNow(ctx context.Context, name string) (int64, error) {
	j, err := s.getJob(ctx, name)
	if err != nil {
		return 0, err
	}
	return s.start(ctx, j, TriggerManual, nil)
}

// start journals and launches one run. A job already running gets a
// "skipped" row and ErrRunning: it never overlaps itself.
func (s *Scheduler) start(ctx context.Context, j Job, trigger string, due *time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if _, busy := s.running[j.Name]; busy {
		if _, err := s.startRun(ctx, j.Name, trigger, due, now, StatusSkipped); err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("job %s: %w", j.Name, ErrRunning)
	}
	fn := s.funcs[j.Name]
	prompt := s.opts.Prompt
	if j.Builtin && fn == nil {
		// A built-in from another version of Hestia, not registered by
		// this one: leave it alone.
		return 0, fmt.Errorf("job %s: built-in job not available in this version", j.Name)
	}
	id, err := s.startRun(ctx, j.Name, trigger, due, now, StatusRunning)
	if err != nil {
		return 0, err
	}
	base := s.base
	if base == nil {
		base = context.WithoutCancel(ctx)
	}
	timeout := j.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	rctx, cancel := context.WithTimeout(base, timeout)
	s.running[j.Name] = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		box := &resultBox{}
		err := s.execute(context.WithValue(rctx, resultKey{}, box), j, fn, prompt)
		end := s.now()
		result := clipText(box.get(), MaxResult)
		status, text := StatusOK, ""
		switch {
		case err == nil:
		case errors.Is(err, ErrSkipped):
			status, text = StatusSkipped, err.Error()
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			status, text = StatusTimeout, fmt.Sprintf("ran past its %s timeout: %v", timeout, err)
		case base.Err() != nil:
			status, text = StatusInterrupted, "the daemon stopped during the run"
		default:
			status, text = StatusError, err.Error()
		}
		text = clipText(text, 2000)
		// The journal write must land even though the run's context ended.
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(rctx), 10*time.Second)
		defer wcancel()
		if err := s.endRun(wctx, id, now, end, status, text, result); err != nil {
			s.log.Error("schedulerJournal", "job", j.Name, "err", err)
		}
		if err := s.pruneRuns(wctx, j.Name, KeepRuns); err != nil {
			s.log.Warn("schedulerPrune", "job", j.Name, "err", err)
		}
		s.mu.Lock()
		delete(s.running, j.Name)
		s.mu.Unlock()
		if status != StatusOK {
			s.log.Warn("jobFailed", "job", j.Name, "status", status, "err", text)
		}
		if s.opts.OnRunEnd != nil {
			ended := end.UTC()
			d := end.Sub(now).Milliseconds()
			s.opts.OnRunEnd(Run{ID: id, Job: j.Name, Trigger: trigger, ScheduledFor: due, StartedAt: now.UTC(), EndedAt: &ended, Status: status, Error: text, DurationMS: &d, Result: result})
		}
	}()
	return id, nil
}

// ErrSkipped, wrapped in a built-in job's error, journals the run as
// skipped rather than failed: the job chose not to work (the user has not
// allowed it yet), which is neither an error to notify nor a success.
var ErrSkipped = errors.New("skipped")

// execute runs the job's function, recovering a panic into an error.
func (s *Scheduler) execute(ctx context.Context, j Job, fn Func, prompt PromptRunner) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	if j.Builtin {
		return fn(ctx)
	}
	if prompt == nil {
		return errors.New("user jobs need the daemon's agent, which is not running")
	}
	chatID, err := prompt(ctx, j)
	if chatID != "" && chatID != j.ChatID {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, uerr := s.db.ExecContext(wctx, `UPDATE jobs SET chat_id = ? WHERE name = ?`, chatID, j.Name); uerr != nil {
			err = errors.Join(err, fmt.Errorf("remembering the chat of job %s: %w", j.Name, uerr))
		}
	}
	return err
}

// SetChat records the chat a user job's turns go to. The prompt runner
// calls it as soon as it makes the chat, so a run the daemon dies in
// leaves its chat to the next run instead of an orphan.
func (s *Scheduler) SetChat(ctx context.Context, name, chatID string) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET chat_id = ? WHERE name = ? AND builtin = 0`, chatID, name); err != nil {
		return fmt.Errorf("remembering the chat of job %s: %w", name, err)
	}
	return nil
}

// Wait blocks until every run in flight has ended (tests).
func (s *Scheduler) Wait() { s.wg.Wait() }
