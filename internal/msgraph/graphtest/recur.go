package graphtest

import (
	"strings"
	"time"
)

// maxOccurrences bounds one series' expansion in the fake.
const maxOccurrences = 5000

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// occurrences lists the original starts of a series from its first
// occurrence (start, in zone) up to until, the way Outlook computes them:
// an independent, plain implementation of Graph's patterns, so that the
// converter's RRULEs are checked against something other than themselves.
func occurrences(rec *Recurrence, start time.Time, zone *time.Location, until time.Time) []time.Time {
	local := start.In(zone)
	hh, mm, ss := local.Clock()
	sy, sm, sd := local.Date()
	at := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, hh, mm, ss, 0, zone) }
	var lastDay time.Time
	if rec.Range.Type == "endDate" {
		if d, err := time.Parse("2006-01-02", rec.Range.EndDate); err == nil {
			lastDay = d
		}
	}
	count := 0
	if rec.Range.Type == "numbered" {
		count = rec.Range.NumberOfOccurrences
	}
	interval := rec.Pattern.Interval
	if interval < 1 {
		interval = 1
	}
	var out []time.Time
	// emit records t and reports whether to go on.
	emit := func(t time.Time) bool {
		if t.Before(start) {
			return true
		}
		if !lastDay.IsZero() {
			y, m, d := t.Date()
			if time.Date(y, m, d, 0, 0, 0, 0, time.UTC).After(lastDay) {
				return false
			}
		}
		if t.After(until) {
			return false
		}
		out = append(out, t)
		return len(out) < maxOccurrences && (count == 0 || len(out) < count)
	}
	days := map[time.Weekday]bool{}
	for _, d := range rec.Pattern.DaysOfWeek {
		days[weekdays[strings.ToLower(d)]] = true
	}
	p := rec.Pattern
	switch p.Type {
	case "daily":
		for i := 0; emit(at(sy, sm, sd+i)); i += interval {
		}
	case "weekly":
		first := weekdays[strings.ToLower(p.FirstDayOfWeek)]
		back := (int(local.Weekday()) - int(first) + 7) % 7
	weeks:
		for w := 0; ; w += interval {
			for k := 0; k < 7; k++ {
				t := at(sy, sm, sd-back+w*7+k)
				if days[t.Weekday()] && !emit(t) {
					break weeks
				}
			}
		}
	case "absoluteMonthly", "absoluteYearly":
		step, month := interval, sm
		if p.Type == "absoluteYearly" {
			step, month = 12*interval, time.Month(p.Month)
		}
		for i := 0; i < 12*200; i += step {
			y, m := addMonths(sy, month, i)
			if p.DayOfMonth > daysIn(y, m) {
				continue
			}
			if !emit(at(y, m, p.DayOfMonth)) {
				break
			}
		}
	case "relativeMonthly", "relativeYearly":
		step, month := interval, sm
		if p.Type == "relativeYearly" {
			step, month = 12*interval, time.Month(p.Month)
		}
		for i := 0; i < 12*200; i += step {
			y, m := addMonths(sy, month, i)
			var hits []int
			for d := 1; d <= daysIn(y, m); d++ {
				if days[time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()] {
					hits = append(hits, d)
				}
			}
			idx := map[string]int{"first": 0, "second": 1, "third": 2, "fourth": 3, "last": len(hits) - 1}[strings.ToLower(p.Index)]
			if idx < 0 || idx >= len(hits) {
				continue
			}
			if !emit(at(y, m, hits[idx])) {
				break
			}
		}
	}
	return out
}

func addMonths(y int, m time.Month, n int) (int, time.Month) {
	t := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).AddDate(0, n, 0)
	return t.Year(), t.Month()
}

func daysIn(y int, m time.Month) int { return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day() }
