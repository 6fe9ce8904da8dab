package calendar

import (
	"fmt"
	"strings"
	"time"
)

// ParseWhen reads a user- or model-supplied time: RFC 3339, a local
// date-time (2026-03-25T14:00 or "2026-03-25 14:00") or a date (midnight
// in loc). Words today/tomorrow are accepted relative to now.
func ParseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "now":
		return now.In(loc), nil
	case "today":
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc), nil
	case "tomorrow":
		y, m, d := now.In(loc).Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, loc), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, l := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", time.DateOnly} {
		if t, err := time.ParseInLocation(l, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: %q is not a time like 2026-03-25, 2026-03-25T14:00 or 2026-03-25T14:00:00+01:00", ErrBadQuery, s)
}

// ParseClock reads a time of day "09:00" as an offset from midnight.
func ParseClock(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		if strings.TrimSpace(s) == "24:00" {
			return 24 * time.Hour, nil
		}
		return 0, fmt.Errorf("%w: %q is not a time of day like 09:00", ErrBadQuery, s)
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// ParseWeekdays reads "mon,tue,…" (three-letter English names).
func ParseWeekdays(list []string) ([]time.Weekday, error) {
	names := map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
		"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}
	var out []time.Weekday
	for _, n := range list {
		d, ok := names[strings.ToLower(strings.TrimSpace(n))[:min(3, len(strings.TrimSpace(n)))]]
		if !ok {
			return nil, fmt.Errorf("%w: %q is not a weekday like mon", ErrBadQuery, n)
		}
		out = append(out, d)
	}
	return out, nil
}
