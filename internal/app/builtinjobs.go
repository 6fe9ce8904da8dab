package app

import (
	"context"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/scheduler"
)

// builtinJob runs fn as the built-in scheduler job name, every interval:
// each run is journaled, a job never overlaps itself, a run missed while
// the daemon was down runs once at start, and `hestia jobs run NAME`
// starts one now. Without a scheduler (not serving) it is a plain worker
// loop, which only a daemon would run anyway.
func (a *App) builtinJob(ctx context.Context, name string, every, timeout time.Duration, fn func(ctx context.Context) error) error {
	if every < scheduler.MinEvery {
		every = 5 * time.Minute
	}
	if a.Jobs != nil {
		return a.schedule(ctx, scheduler.Def{Name: name, Schedule: scheduler.Schedule{Every: scheduler.Duration(every)}, Timeout: timeout, Run: fn})
	}
	log := a.Log.With("component", "jobs")
	a.AddWorker(name, func(ctx context.Context) error {
		for {
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				log.Warn("builtinJob", "job", name, "err", err)
			}
			t := time.NewTimer(every)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
	})
	return nil
}

// jobName turns a configured name (an account) into a job name part:
// lowercase letters, digits, '.', '_' and '-'.
func jobName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := b.String()
	if out == "" {
		out = "x"
	}
	return out
}
