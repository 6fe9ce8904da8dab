package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the scheduler's database: the jobs with their next due time,
// and the run journal.
var Schema = store.Schema{
	Name: "scheduler",
	Migrations: []string{`
CREATE TABLE jobs (
	name       TEXT PRIMARY KEY,
	builtin    INTEGER NOT NULL DEFAULT 0,
	schedule   TEXT NOT NULL,
	timeout_ms INTEGER NOT NULL DEFAULT 0,
	jitter_ms  INTEGER NOT NULL DEFAULT 0,
	prompt     TEXT NOT NULL DEFAULT '',
	chat_id    TEXT NOT NULL DEFAULT '',
	enabled    INTEGER NOT NULL DEFAULT 1,
	next_run   INTEGER,
	created_at INTEGER NOT NULL
);
CREATE TABLE runs (
	id            INTEGER PRIMARY KEY,
	job           TEXT NOT NULL,
	trigger       TEXT NOT NULL,
	scheduled_for INTEGER,
	started_at    INTEGER NOT NULL,
	ended_at      INTEGER,
	status        TEXT NOT NULL,
	error         TEXT NOT NULL DEFAULT '',
	duration_ms   INTEGER
);
CREATE INDEX runs_job ON runs(job, id);
CREATE INDEX runs_status ON runs(status);
`, `
ALTER TABLE runs ADD COLUMN result TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN deliver TEXT NOT NULL DEFAULT '';
`},
}

// Run statuses.
const (
	StatusRunning     = "running"
	StatusOK          = "ok"
	StatusError       = "error"
	StatusTimeout     = "timeout"
	StatusSkipped     = "skipped"     // due while the previous run was still going
	StatusInterrupted = "interrupted" // the daemon stopped or died mid-run
)

// Triggers: why a run started.
const (
	TriggerSchedule = "schedule"
	TriggerMissed   = "missed" // due while the daemon was down; run once
	TriggerManual   = "manual"
)

// Job is a stored job and its current state.
type Job struct {
	Name     string     `json:"name"`
	Builtin  bool       `json:"builtin"`
	Schedule Schedule   `json:"schedule"`
	Timeout  Duration   `json:"timeout"`
	Jitter   Duration   `json:"jitter,omitempty"`
	Prompt   string     `json:"prompt,omitempty"`
	ChatID   string     `json:"chat_id,omitempty"`
	Enabled  bool       `json:"enabled"`
	NextRun  *time.Time `json:"next_run,omitempty"`
	Created  time.Time  `json:"created_at"`
	Running  bool       `json:"running"`
	LastRun  *Run       `json:"last_run,omitempty"`
	// Deliver is where a run's result goes (inbox, push, telegram); nil
	// means the default: inbox and push for user jobs, only failures (to
	// the inbox, once a day) for built-ins.
	Deliver []string `json:"deliver,omitempty"`
}

// Run is one journal row.
type Run struct {
	ID           int64      `json:"id"`
	Job          string     `json:"job"`
	Trigger      string     `json:"trigger"`
	ScheduledFor *time.Time `json:"scheduled_for,omitempty"`
	StartedAt    time.Time  `json:"started_at"`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
	Status       string     `json:"status"`
	Error        string     `json:"error,omitempty"`
	DurationMS   *int64     `json:"duration_ms,omitempty"`
	// Result is what the run produced: a user job's final assistant text,
	// a built-in job's summary (SetResult); empty when it reported none.
	Result string `json:"result,omitempty"`
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

const jobCols = `name, builtin, schedule, timeout_ms, jitter_ms, prompt, chat_id, enabled, next_run, created_at, deliver`

func scanJob(sc interface{ Scan(...any) error }) (Job, error) {
	var j Job
	var sched string
	var timeout, jit, created int64
	var next sql.NullInt64
	var deliver string
	if err := sc.Scan(&j.Name, &j.Builtin, &sched, &timeout, &jit, &j.Prompt, &j.ChatID, &j.Enabled, &next, &created, &deliver); err != nil {
		return Job{}, err
	}
	if deliver != "" {
		j.Deliver = strings.Split(deliver, ",")
	}
	if err := json.Unmarshal([]byte(sched), &j.Schedule); err != nil {
		return Job{}, fmt.Errorf("job %s: stored schedule: %w", j.Name, err)
	}
	j.Timeout = Duration(time.Duration(timeout) * time.Millisecond)
	j.Jitter = Duration(time.Duration(jit) * time.Millisecond)
	j.NextRun = fromMS(next)
	j.Created = time.UnixMilli(created).UTC()
	return j, nil
}

func (s *Scheduler) getJob(ctx context.Context, name string) (Job, error) {
	j, err := scanJob(s.db.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Job{}, fmt.Errorf("job %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("reading job %s: %w", name, err)
	}
	return j, nil
}

func (s *Scheduler) listJobs(ctx context.Context) ([]Job, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+jobCols+` FROM jobs ORDER BY builtin DESC, name`)
	if err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	defer rows.Close()
	var out []Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

const runCols = `id, job, trigger, scheduled_for, started_at, ended_at, status, error, duration_ms, result`

func scanRun(sc interface{ Scan(...any) error }) (Run, error) {
	var r Run
	var sched, ended, dur sql.NullInt64
	var started int64
	if err := sc.Scan(&r.ID, &r.Job, &r.Trigger, &sched, &started, &ended, &r.Status, &r.Error, &dur, &r.Result); err != nil {
		return Run{}, err
	}
	r.ScheduledFor = fromMS(sched)
	r.StartedAt = time.UnixMilli(started).UTC()
	r.EndedAt = fromMS(ended)
	if dur.Valid {
		r.DurationMS = &dur.Int64
	}
	return r, nil
}

// History returns a job's runs, newest first (every job's when name is
// empty), at most limit (1–1000, default 50).
func (s *Scheduler) History(ctx context.Context, name string, limit int) ([]Run, error) {
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	q := `SELECT ` + runCols + ` FROM runs`
	args := []any{}
	if name != "" {
		if _, err := s.getJob(ctx, name); err != nil {
			return nil, err
		}
		q += ` WHERE job = ?`
		args = append(args, name)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading run history: %w", err)
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("reading run history: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Scheduler) lastRuns(ctx context.Context) (map[string]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE id IN (SELECT max(id) FROM runs GROUP BY job)`)
	if err != nil {
		return nil, fmt.Errorf("reading last runs: %w", err)
	}
	defer rows.Close()
	out := map[string]Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out[r.Job] = r
	}
	return out, rows.Err()
}

func (s *Scheduler) startRun(ctx context.Context, job, trigger string, scheduled *time.Time, now time.Time, status string) (int64, error) {
	var sched any
	if scheduled != nil {
		sched = ms(*scheduled)
	}
	var endedAt, dur any
	if status != StatusRunning {
		endedAt, dur = ms(now), 0
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO runs (job, trigger, scheduled_for, started_at, ended_at, status, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		job, trigger, sched, ms(now), endedAt, status, dur)
	if err != nil {
		return 0, fmt.Errorf("journaling the start of job %s: %w", job, err)
	}
	return res.LastInsertId()
}

func (s *Scheduler) endRun(ctx context.Context, id int64, started, now time.Time, status, errText, result string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE runs SET ended_at = ?, status = ?, error = ?, duration_ms = ?, result = ? WHERE id = ?`,
		ms(now), status, errText, now.Sub(started).Milliseconds(), result, id)
	if err != nil {
		return fmt.Errorf("journaling the end of run %d: %w", id, err)
	}
	return nil
}

func (s *Scheduler) setNext(ctx context.Context, name string, next *time.Time) error {
	var v any
	if next != nil {
		v = ms(*next)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET next_run = ? WHERE name = ?`, v, name); err != nil {
		return fmt.Errorf("recording the next run of job %s: %w", name, err)
	}
	return nil
}

// pruneRuns keeps the newest keep rows per job.
func (s *Scheduler) pruneRuns(ctx context.Context, job string, keep int) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM runs WHERE job = ? AND id <= (SELECT id FROM runs WHERE job = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`, job, job, keep)
	if err != nil {
		return fmt.Errorf("pruning runs of job %s: %w", job, err)
	}
	return nil
}
