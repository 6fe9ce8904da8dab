package calendar

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Interval is a span of time.
type Interval struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// WorkingHours restricts free slots to part of each day. The zero value
// means all day, every day.
type WorkingHours struct {
	Start, End time.Duration  // offsets from local midnight; End 0 means 24h
	Days       []time.Weekday // empty means every day
}

// FreeQuery asks for free slots in a window.
type FreeQuery struct {
	From, To  time.Time
	Calendars []string
	MinLength time.Duration // 30 minutes when zero
	Hours     WorkingHours
	Location  *time.Location // for working hours; the floating zone when nil
}

// FreeResult is the availability in a window.
type FreeResult struct {
	Free []Interval `json:"free"`
	// Busy are the merged busy intervals across the calendars asked.
	Busy []Interval `json:"busy"`
	// Truncated is set when the agenda behind Busy was cut by a cap; the
	// answer may then miss busy time.
	Truncated bool `json:"truncated,omitempty"`
}

// FreeSlots merges the busy time of every asked calendar (events that are
// OPAQUE and not cancelled, RFC 5545 §3.8.2.7) and returns the gaps of at
// least MinLength inside working hours.
func (s *Store) FreeSlots(ctx context.Context, q FreeQuery) (FreeResult, error) {
	var res FreeResult
	if q.MinLength <= 0 {
		q.MinLength = 30 * time.Minute
	}
	if q.Location == nil {
		q.Location = s.floating
	}
	if q.Hours.End == 0 {
		q.Hours.End = 24 * time.Hour
	}
	if q.Hours.Start < 0 || q.Hours.End > 24*time.Hour || q.Hours.Start >= q.Hours.End {
		return res, fmt.Errorf("%w: working hours must satisfy 0 <= start < end <= 24h", ErrBadQuery)
	}
	ag, err := s.Agenda(ctx, Query{From: q.From, To: q.To, Calendars: q.Calendars, Max: 20000})
	if err != nil {
		return res, err
	}
	res.Truncated = ag.Truncated
	var busy []Interval
	for _, in := range ag.Instances {
		if in.Busy() {
			busy = append(busy, Interval{in.Start, in.End})
		}
	}
	res.Busy = MergeIntervals(busy)
	for _, day := range workWindows(q.From, q.To, q.Hours, q.Location) {
		for _, gap := range subtract(day, res.Busy) {
			if gap.End.Sub(gap.Start) >= q.MinLength {
				res.Free = append(res.Free, gap)
			}
		}
	}
	return res, nil
}

// MergeIntervals sorts and merges overlapping or touching intervals.
func MergeIntervals(in []Interval) []Interval {
	if len(in) == 0 {
		return nil
	}
	s := slices.Clone(in)
	slices.SortFunc(s, func(a, b Interval) int { return a.Start.Compare(b.Start) })
	out := []Interval{s[0]}
	for _, iv := range s[1:] {
		last := &out[len(out)-1]
		if !iv.Start.After(last.End) {
			if iv.End.After(last.End) {
				last.End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	return out
}

// workWindows cuts [from, to) into the working-hour spans of each local
// day. Days are walked by calendar date so DST days keep their wall-clock
// hours.
func workWindows(from, to time.Time, h WorkingHours, loc *time.Location) []Interval {
	var out []Interval
	y, m, d := from.In(loc).Date()
	for day := time.Date(y, m, d, 0, 0, 0, 0, loc); day.Before(to); day = day.AddDate(0, 0, 1) {
		if len(h.Days) > 0 && !slices.Contains(h.Days, day.Weekday()) {
			continue
		}
		ws := atOffset(day, h.Start)
		we := atOffset(day, h.End)
		if ws.Before(from) {
			ws = from
		}
		if we.After(to) {
			we = to
		}
		if we.After(ws) {
			out = append(out, Interval{ws, we})
		}
	}
	return out
}

// atOffset is the wall-clock time off after midnight of day (24h is the
// next midnight).
func atOffset(day time.Time, off time.Duration) time.Time {
	h := int(off / time.Hour)
	mi := int((off % time.Hour) / time.Minute)
	return time.Date(day.Year(), day.Month(), day.Day(), h, mi, 0, 0, day.Location())
}

// subtract returns the parts of w not covered by busy (sorted, merged).
func subtract(w Interval, busy []Interval) []Interval {
	var out []Interval
	cur := w.Start
	i, _ := slices.BinarySearchFunc(busy, w.Start, func(b Interval, t time.Time) int {
		if !b.End.After(t) {
			return -1
		}
		return 1
	})
	for ; i < len(busy) && busy[i].Start.Before(w.End); i++ {
		b := busy[i]
		if b.Start.After(cur) {
			out = append(out, Interval{cur, b.Start})
		}
		if b.End.After(cur) {
			cur = b.End
		}
	}
	if cur.Before(w.End) {
		out = append(out, Interval{cur, w.End})
	}
	return out
}

// Conflict is a pair of busy instances that overlap.
type Conflict struct {
	A Instance `json:"a"`
	B Instance `json:"b"`
}

// MaxConflicts caps Conflicts.
const MaxConflicts = 200

// Conflicts lists overlapping busy instances in a window.
func (s *Store) Conflicts(ctx context.Context, q Query) ([]Conflict, error) {
	if q.Max <= 0 {
		q.Max = 20000
	}
	ag, err := s.Agenda(ctx, q)
	if err != nil {
		return nil, err
	}
	var busy []Instance
	for _, in := range ag.Instances {
		if in.Busy() && in.End.After(in.Start) {
			busy = append(busy, in)
		}
	}
	return overlapping(busy, MaxConflicts), nil
}

// overlapping sweeps instances sorted by start.
func overlapping(busy []Instance, limit int) []Conflict {
	var out []Conflict
	for i := range busy {
		for j := i + 1; j < len(busy) && busy[j].Start.Before(busy[i].End); j++ {
			out = append(out, Conflict{busy[i], busy[j]})
			if len(out) == limit {
				return out
			}
		}
	}
	return out
}

// ConflictsWith returns the busy instances overlapping iv (for previews of
// a new event).
func (s *Store) ConflictsWith(ctx context.Context, iv Interval, calendars []string) ([]Instance, error) {
	ag, err := s.Agenda(ctx, Query{From: iv.Start, To: iv.End, Calendars: calendars, Max: 50})
	if err != nil {
		return nil, err
	}
	var out []Instance
	for _, in := range ag.Instances {
		if in.Busy() && in.End.After(iv.Start) && in.Start.Before(iv.End) {
			out = append(out, in)
		}
	}
	return out, nil
}
