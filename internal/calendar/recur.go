package calendar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/teambition/rrule-go"
)

// DefaultMaxInstances caps how many occurrences one query expands from one
// recurring event; a window wider than that is reported as truncated.
const DefaultMaxInstances = 1000

// maxIterations bounds the work of one expansion (occurrences generated
// before the window, sub-daily rules) so that no rule can stall a query.
const maxIterations = 200_000

// rruleKeys are the RRULE parts of RFC 5545 §3.3.10 that we evaluate.
var rruleKeys = map[string]bool{
	"FREQ": true, "INTERVAL": true, "WKST": true, "COUNT": true, "UNTIL": true, "BYSETPOS": true,
	"BYMONTH": true, "BYMONTHDAY": true, "BYYEARDAY": true, "BYWEEKNO": true, "BYDAY": true,
	"BYHOUR": true, "BYMINUTE": true, "BYSECOND": true,
}

// cleanRRule upper-cases keys and drops parts we do not evaluate (RSCALE,
// SKIP, X- extensions), returning a warning naming them.
func cleanRRule(v string) (string, string) {
	var keep, dropped []string
	for _, part := range strings.Split(strings.TrimSpace(v), ";") {
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		k = strings.ToUpper(strings.TrimSpace(k))
		if !ok || !rruleKeys[k] {
			dropped = append(dropped, k)
			continue
		}
		keep = append(keep, k+"="+strings.ToUpper(strings.TrimSpace(val)))
	}
	warn := ""
	if len(dropped) > 0 {
		warn = "RRULE parts ignored: " + strings.Join(dropped, ",")
	}
	return strings.Join(keep, ";"), warn
}

// buildRule parses a cleaned RRULE anchored at start.
func buildRule(rule string, start time.Time) (rrule.ROption, error) {
	// The rrule library indexes its year tables by year and panics on
	// year 0 and before; such a DTSTART is a typo or garbage anyway.
	if y := start.Year(); y < 1 || y > 9999 {
		return rrule.ROption{}, fmt.Errorf("recurrence start year %d is outside 1–9999", y)
	}
	opt, err := rrule.StrToROptionInLocation(rule, start.Location())
	if err != nil {
		return rrule.ROption{}, err
	}
	if opt.Count < 0 || opt.Interval < 0 {
		return rrule.ROption{}, errors.New("COUNT and INTERVAL must not be negative")
	}
	// A DATE UNTIL on a timed event means "through that day".
	if !opt.Until.IsZero() && strings.Contains(rule, "UNTIL=") {
		if u := untilValue(rule); len(u) == len(dateLayout) {
			opt.Until = opt.Until.AddDate(0, 0, 1).Add(-time.Second)
		}
	}
	if err := feasible(opt); err != nil {
		return rrule.ROption{}, err
	}
	implicitParts(opt, start)
	opt.Dtstart = start
	if _, err := rrule.NewRRule(*opt); err != nil {
		return rrule.ROption{}, err
	}
	return *opt, nil
}

func untilValue(rule string) string {
	for _, part := range strings.Split(rule, ";") {
		if v, ok := strings.CutPrefix(part, "UNTIL="); ok {
			return v
		}
	}
	return ""
}

// implicitParts applies RFC 5545 §3.3.10's "information not contained in
// the rule is derived from DTSTART" where the generator (a dateutil port)
// would otherwise expand over every day: a YEARLY rule with BYWEEKNO alone
// recurs on DTSTART's weekday, a YEARLY rule with BYMONTHDAY alone in
// DTSTART's month. Repeated BY values are dropped (they would repeat
// instances), and time-of-day parts do not apply to all-day (DATE) starts.
func implicitParts(o *rrule.ROption, start time.Time) {
	if o.Freq == rrule.YEARLY && len(o.Byweekno) > 0 && len(o.Byweekday) == 0 && len(o.Bymonthday) == 0 && len(o.Byyearday) == 0 {
		o.Byweekday = []rrule.Weekday{weekdays[start.Weekday()]}
	}
	if o.Freq == rrule.YEARLY && len(o.Bymonthday) > 0 && len(o.Bymonth) == 0 && len(o.Byweekno) == 0 && len(o.Byyearday) == 0 {
		o.Bymonth = []int{int(start.Month())}
	}
	for _, l := range []*[]int{&o.Bysetpos, &o.Bymonth, &o.Bymonthday, &o.Byyearday, &o.Byweekno, &o.Byhour, &o.Byminute, &o.Bysecond} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
}

var weekdays = [7]rrule.Weekday{rrule.SU, rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA}

// feasible refuses rules that can never produce an occurrence (BYMONTH=2
// with BYMONTHDAY=30), which the generator would otherwise search for until
// year 9999.
func feasible(o *rrule.ROption) error {
	if len(o.Bysetpos) > 0 && o.Freq > rrule.DAILY {
		// With BYSETPOS the generator walks every hour/minute/second
		// without skipping filtered days, so day filters could make it
		// crawl for years; and a position beyond the period's candidates
		// never matches.
		if len(o.Bymonth)+len(o.Bymonthday)+len(o.Byyearday)+len(o.Byweekno)+len(o.Byweekday) > 0 {
			return errors.New("BYSETPOS with a sub-daily FREQ and day filters is not supported")
		}
		cands := 1
		if o.Freq == rrule.HOURLY {
			cands = max(len(o.Byminute), 1) * max(len(o.Bysecond), 1)
		} else if o.Freq == rrule.MINUTELY {
			cands = max(len(o.Bysecond), 1)
		}
		for _, p := range o.Bysetpos {
			if p > cands || -p > cands {
				return fmt.Errorf("BYSETPOS %d beyond the %d candidates of each period", p, cands)
			}
		}
	}
	maxNth := 53
	if o.Freq == rrule.MONTHLY || (o.Freq == rrule.YEARLY && len(o.Bymonth) > 0) {
		maxNth = 5
	}
	for _, wd := range o.Byweekday {
		if n := wd.N(); n > maxNth || n < -maxNth {
			return fmt.Errorf("BYDAY %s: no period has that many", wd)
		}
	}
	if len(o.Bymonthday) == 0 || len(o.Bymonth) == 0 {
		return nil
	}
	days := [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for _, m := range o.Bymonth {
		if m < 1 || m > 12 {
			return fmt.Errorf("BYMONTH %d out of range", m)
		}
		for _, d := range o.Bymonthday {
			if d < 0 {
				d = -d
			}
			if d >= 1 && d <= days[m] {
				return nil
			}
		}
	}
	return errors.New("BYMONTH and BYMONTHDAY never match a real date")
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// occurs reports whether a rule produces any occurrence at all. The
// generator searches up to year 9999 for a first match, so an impossible
// rule ("the 6th Monday", BYSETPOS beyond the period) would cost seconds on
// every query. The probe runs the rule without COUNT/UNTIL from the same
// date in the last 400-year Gregorian cycle before 9999 (same weekdays and
// leap years), which bounds that search to a few hundred years.
func occurs(o rrule.ROption, start time.Time) bool {
	o.Count, o.Until = 0, time.Time{}
	y := start.Year()
	if k := (9999 - 500 - y) / 400; k > 0 {
		y += 400 * k
	}
	h, m, sec := start.Clock()
	o.Dtstart = time.Date(y, start.Month(), start.Day(), h, m, sec, 0, start.Location())
	r, err := rrule.NewRRule(o)
	if err != nil {
		return false
	}
	_, ok := r.Iterator()()
	return ok
}

// Occurrence is one expanded instance start.
type Occurrence struct {
	Start time.Time
	// Original is the start the rule produced (the RECURRENCE-ID an override
	// of this instance carries).
	Original time.Time
}

// Series is a recurring master ready for expansion.
type Series struct {
	Start    time.Time // DTSTART in its zone
	Duration time.Duration
	AllDay   bool
	Rule     string // cleaned RRULE, may be empty
	RDates   []time.Time
	ExDates  []time.Time
}

// Expand returns the occurrences that overlap [from, to), sorted, at most
// max (DefaultMaxInstances when max <= 0). truncated reports that more
// existed. Expansion never starts before the window by more than one
// period of the rule plus the event's length: infinite rules are bounded
// by the window, and rules without COUNT skip ahead without generating
// the years before it.
func (s Series) Expand(from, to time.Time, max int) (occ []Occurrence, truncated bool, err error) {
	if max <= 0 {
		max = DefaultMaxInstances
	}
	if first, rest, ok := strings.Cut(s.Rule, "\n"); ok {
		return s.expandUnion(append([]string{first}, strings.Split(rest, "\n")...), from, to, max)
	}
	overlaps := func(t time.Time) bool {
		if !t.Before(to) {
			return false
		}
		end := s.end(t)
		return end.After(from) || (end.Equal(t) && !t.Before(from))
	}
	excluded := func(t time.Time) bool {
		for _, x := range s.ExDates {
			if s.AllDay {
				if sameDate(x, t) {
					return true
				}
			} else if x.Equal(t) {
				return true
			}
		}
		return false
	}
	if s.Rule != "" {
		opt, err := buildRule(s.Rule, s.Start)
		if err != nil {
			return nil, false, err
		}
		if s.AllDay {
			opt.Byhour, opt.Byminute, opt.Bysecond = nil, nil, nil
		}
		if opt.Count == 0 {
			opt.Dtstart = fastForward(opt, s.Start, from.Add(-s.Duration))
		}
		if opt.Until.IsZero() || opt.Until.After(to) {
			opt.Until = to
		}
		next, err := iterator(opt, s.Start)
		if err != nil {
			return nil, false, err
		}
		for i := 0; ; i++ {
			if i == maxIterations {
				truncated = true
				break
			}
			t, ok := next()
			if !ok || !t.Before(to) {
				break
			}
			if !overlaps(t) || excluded(t) {
				continue
			}
			if len(occ) == max {
				truncated = true
				break
			}
			occ = append(occ, Occurrence{Start: t, Original: t})
		}
	} else if overlaps(s.Start) && !excluded(s.Start) {
		occ = append(occ, Occurrence{Start: s.Start, Original: s.Start})
	}
	for _, t := range s.RDates {
		if s.AllDay {
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, s.Start.Location())
		}
		if overlaps(t) && !excluded(t) && !slices.ContainsFunc(occ, func(o Occurrence) bool { return o.Start.Equal(t) }) {
			occ = append(occ, Occurrence{Start: t, Original: t})
		}
	}
	slices.SortFunc(occ, func(a, b Occurrence) int { return a.Start.Compare(b.Start) })
	if len(occ) > max {
		occ, truncated = occ[:max], true
	}
	return occ, truncated, nil
}

// expandUnion expands a series with several RRULEs: the union of each
// rule's instances (with the same RDATEs and EXDATEs), without repeats.
func (s Series) expandUnion(rules []string, from, to time.Time, max int) ([]Occurrence, bool, error) {
	var all []Occurrence
	truncated := false
	for _, r := range rules {
		one := s
		one.Rule = r
		occ, tr, err := one.Expand(from, to, max)
		if err != nil {
			return nil, false, err
		}
		truncated = truncated || tr
		all = append(all, occ...)
	}
	slices.SortFunc(all, func(a, b Occurrence) int { return a.Start.Compare(b.Start) })
	all = slices.CompactFunc(all, func(a, b Occurrence) bool { return a.Start.Equal(b.Start) })
	if len(all) > max {
		all, truncated = all[:max], true
	}
	return all, truncated, nil
}

func (s Series) end(start time.Time) time.Time {
	if s.AllDay {
		days := int(s.Duration.Round(24*time.Hour) / (24 * time.Hour))
		return start.AddDate(0, 0, max(days, 0))
	}
	return start.Add(s.Duration)
}

func sameDate(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
}

// fastForward moves DTSTART of a rule without COUNT forward by whole
// periods so that it stays at least one period before lower. Whole periods
// keep the rule's alignment (INTERVAL, WKST weeks, months, years) and
// AddDate keeps the wall-clock time across DST. Rules whose meaning
// depends on the start's day in a way AddDate would change (the 29th–31st
// of a month, 29 February) and sub-daily rules are not moved.
func fastForward(o rrule.ROption, start, lower time.Time) time.Time {
	if !start.Before(lower) {
		return start
	}
	lower = lower.In(start.Location())
	iv := max(o.Interval, 1)
	switch o.Freq {
	case rrule.DAILY, rrule.WEEKLY:
		days := int(lower.Sub(start).Hours() / 24)
		step := iv
		if o.Freq == rrule.WEEKLY {
			step *= 7
		}
		k := days/step - 1
		if k <= 0 {
			return start
		}
		return start.AddDate(0, 0, k*step)
	case rrule.MONTHLY:
		if start.Day() > 28 || len(o.Byyearday) > 0 || len(o.Byweekno) > 0 {
			return start
		}
		months := (lower.Year()-start.Year())*12 + int(lower.Month()) - int(start.Month())
		k := months/iv - 1
		if k <= 0 {
			return start
		}
		return start.AddDate(0, k*iv, 0)
	case rrule.HOURLY, rrule.MINUTELY, rrule.SECONDLY:
		// Move by whole days that are also whole periods, so both the
		// period grid and the day filters stay aligned.
		period := map[rrule.Frequency]int{rrule.HOURLY: 3600, rrule.MINUTELY: 60, rrule.SECONDLY: 1}[o.Freq] * iv
		stepDays := lcm(86400, period) / 86400
		if stepDays > 3660 {
			return start
		}
		days := int(lower.Sub(start).Hours() / 24)
		k := days/stepDays - 1
		if k <= 0 {
			return start
		}
		return start.AddDate(0, 0, k*stepDays)
	case rrule.YEARLY:
		if start.Month() == time.February && start.Day() == 29 {
			return start
		}
		k := (lower.Year()-start.Year())/iv - 1
		if k <= 0 {
			return start
		}
		return start.AddDate(k*iv, 0, 0)
	}
	return start
}

// iterator returns the rule's instances in order. WEEKLY rules with
// BYSETPOS are generated here rather than by rrule-go, which orders each
// week's set from DTSTART's weekday instead of from WKST (RFC 5545
// §3.3.10): the set of a week starts on WKST, positions are taken from it,
// and only then are instances before DTSTART dropped and COUNT applied.
func iterator(opt rrule.ROption, start time.Time) (func() (time.Time, bool), error) {
	if opt.Freq != rrule.WEEKLY || len(opt.Bysetpos) == 0 {
		r, err := rrule.NewRRule(opt)
		if err != nil {
			return nil, err
		}
		return r.Iterator(), nil
	}
	pos, count, first := opt.Bysetpos, opt.Count, opt.Dtstart
	weekStart := func(t time.Time) time.Time {
		back := (int(t.Weekday()) - (opt.Wkst.Day()+1)%7 + 7) % 7
		y, m, d := t.AddDate(0, 0, -back).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	}
	ws := weekStart(first)
	opt.Bysetpos, opt.Count = nil, 0
	opt.Dtstart = time.Date(ws.Year(), ws.Month(), ws.Day(), first.Hour(), first.Minute(), first.Second(), 0, first.Location())
	r, err := rrule.NewRRule(opt)
	if err != nil {
		return nil, err
	}
	all := r.Iterator()
	var (
		queue   []time.Time // the current week's selected instances
		pending *time.Time  // the first instance of the next week
		done    bool
		emitted int
	)
	fill := func() {
		for len(queue) == 0 && !done {
			var week []time.Time
			if pending != nil {
				week, pending = append(week, *pending), nil
			}
			for {
				t, ok := all()
				if !ok {
					done = true
					break
				}
				if len(week) > 0 && !weekStart(t).Equal(weekStart(week[0])) {
					pending = &t
					break
				}
				week = append(week, t)
			}
			if len(week) == 0 {
				done = true
				return
			}
			var pick []time.Time
			for _, p := range pos {
				i := p - 1
				if p < 0 {
					i = len(week) + p
				}
				if i >= 0 && i < len(week) && !slices.ContainsFunc(pick, week[i].Equal) {
					pick = append(pick, week[i])
				}
			}
			slices.SortFunc(pick, time.Time.Compare)
			for _, t := range pick {
				if !t.Before(start) {
					queue = append(queue, t)
				}
			}
		}
	}
	return func() (time.Time, bool) {
		if count > 0 && emitted >= count {
			return time.Time{}, false
		}
		fill()
		if len(queue) == 0 {
			return time.Time{}, false
		}
		t := queue[0]
		queue = queue[1:]
		emitted++
		return t, true
	}, nil
}
