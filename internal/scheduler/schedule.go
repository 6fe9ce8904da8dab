package scheduler

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when a job runs: exactly one of Every (a fixed interval),
// Cron (a standard five-field expression, descriptors such as @daily and a
// CRON_TZ= prefix allowed) or At (one run at an absolute time).
type Schedule struct {
	Every Duration  `json:"every,omitempty"`
	Cron  string    `json:"cron,omitempty"`
	At    time.Time `json:"at,omitzero"`
}

// Duration is a time.Duration written as a Go duration string ("15m").
type Duration time.Duration

// D returns the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes the duration as "1h0m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("not a duration such as 15m or 2h: %q", b)
	}
	*d = Duration(v)
	return nil
}

// FieldError is a bad job definition; Field names the JSON field at fault.
// Its text is safe to show the user.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// HTTPStatus and HTTPCode make it a 400 bad_request (httpjson.Coded).
func (e *FieldError) HTTPStatus() int  { return 400 }
func (e *FieldError) HTTPCode() string { return "bad_request" }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// MinEvery is the shortest interval a job may have: shorter ones would be a
// busy loop, not a schedule.
const MinEvery = time.Second

// compiled is a validated schedule.
type compiled struct {
	s    Schedule
	cron cron.Schedule
}

// compile validates s: exactly one kind, a parsable cron expression, an
// interval of at least MinEvery.
func compile(s Schedule) (compiled, error) {
	n := 0
	if s.Every != 0 {
		n++
	}
	if strings.TrimSpace(s.Cron) != "" {
		n++
	}
	if !s.At.IsZero() {
		n++
	}
	if n != 1 {
		return compiled{}, fieldErr("schedule", "give exactly one of every, cron or at (got %d)", n)
	}
	c := compiled{s: s}
	switch {
	case s.Every != 0:
		if s.Every.D() < MinEvery {
			return compiled{}, fieldErr("every", "must be at least %s, got %s", MinEvery, s.Every.D())
		}
	case s.Cron != "":
		sched, err := cron.ParseStandard(strings.TrimSpace(s.Cron))
		if err != nil {
			return compiled{}, fieldErr("cron", "%q is not a cron expression (minute hour day-of-month month day-of-week): %v", s.Cron, err)
		}
		c.cron = sched
	}
	return c, nil
}

// Validate reports whether s is a usable schedule.
func (s Schedule) Validate() error { _, err := compile(s); return err }

// Kind names the schedule's kind: interval, cron or once.
func (s Schedule) Kind() string {
	switch {
	case s.Every != 0:
		return "interval"
	case s.Cron != "":
		return "cron"
	default:
		return "once"
	}
}

// String is a short human form.
func (s Schedule) String() string {
	switch s.Kind() {
	case "interval":
		return "every " + s.Every.D().String()
	case "cron":
		return "cron " + s.Cron
	default:
		return "once at " + s.At.Format(time.RFC3339)
	}
}

// next is the first time strictly after t the schedule fires, before
// jitter; ok is false when it never fires again (a one-off in the past).
func (c compiled) next(t time.Time) (time.Time, bool) {
	switch {
	case c.s.Every != 0:
		return t.Add(c.s.Every.D()), true
	case c.cron != nil:
		n := c.cron.Next(t)
		return n, !n.IsZero()
	default:
		return c.s.At, c.s.At.After(t)
	}
}

// jitter spreads jobs that share a schedule: a delay in [0, max) derived
// from the job name and the slot, so it is stable for one slot (a restart
// computes the same time) yet differs between jobs and slots.
func jitter(name string, slot time.Time, max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	fmt.Fprintf(h, "@%d", slot.Unix())
	return time.Duration(h.Sum64() % uint64(max))
}
