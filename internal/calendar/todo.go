package calendar

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"
)

// To-dos (VTODO, RFC 5545 §3.6.2) live beside events in the same vdir
// collections and CalDAV calendars: a collection is a task list when it
// holds them (Nextcloud and Radicale keep tasks in a calendar, iCloud's
// Reminders lists are calendars holding only VTODOs). They are indexed in
// the todos table of calendar.db from the same files and the same sync
// pass as events. A recurring to-do is shown at one occurrence only (see
// NextOccurrence); completing it writes a RECURRENCE-ID override for that
// occurrence, so the series goes on.

// Statuses of a to-do (RFC 5545 §3.8.1.11).
const (
	TodoNeedsAction = "NEEDS-ACTION"
	TodoInProcess   = "IN-PROCESS"
	TodoCompleted   = "COMPLETED"
	TodoCancelled   = "CANCELLED"
)

// Todo is one parsed VTODO: a master (RecurrenceID zero) or an override of
// one occurrence of a recurring master with the same UID.
type Todo struct {
	UID          string
	RecurrenceID time.Time
	Summary      string
	Description  string
	// Status is one of the four statuses, or "" when the file gives none.
	Status string
	// Priority is 1 (highest) to 9 (lowest); 0 means none (§3.8.1.9).
	Priority int
	// Percent is PERCENT-COMPLETE, 0–100.
	Percent int
	// Due and Start are zero when absent; the AllDay flags mark DATE
	// values, the Zones name how the times are anchored (as Event.Zone).
	Due, Start             time.Time
	DueAllDay, StartAllDay bool
	DueZone, StartZone     string
	Completed              time.Time
	Categories             []string
	// Parent is the UID of the to-do this one is a subtask of
	// (RELATED-TO with RELTYPE=PARENT, the default, §3.8.4.5).
	Parent  string
	RRule   string
	RDates  []time.Time
	ExDates []time.Time
	// Sequence and Stamp order versions of one UID (§3.8.7.4).
	Sequence int
	Stamp    time.Time
	Warnings []string

	repairs []string
}

// Done reports whether the to-do needs nothing more: completed or
// cancelled, or (with no STATUS) given a COMPLETED time.
func (t *Todo) Done() bool {
	switch t.Status {
	case TodoCompleted, TodoCancelled:
		return true
	case "":
		return !t.Completed.IsZero()
	}
	return false
}

// Recurring reports whether the to-do repeats.
func (t *Todo) Recurring() bool {
	return t.RecurrenceID.IsZero() && (t.RRule != "" || len(t.RDates) > 0)
}

// anchor is the time a recurring to-do's rule runs from: DTSTART as RFC
// 5545 has it, or DUE for the clients that write a rule with DUE alone.
func (t *Todo) anchor() (time.Time, bool) {
	if !t.Start.IsZero() {
		return t.Start, t.StartAllDay
	}
	return t.Due, t.DueAllDay
}

// normalStatus reads a STATUS value the way clients write it ("Needs
// Action", "in_process", "completed") as one of the four; ok is false for
// anything else.
func normalStatus(v string) (string, bool) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	switch s {
	case TodoNeedsAction, TodoInProcess, TodoCompleted, TodoCancelled:
		return s, true
	case "NEEDSACTION":
		return TodoNeedsAction, true
	case "INPROCESS", "IN-PROGRESS":
		return TodoInProcess, true
	case "DONE":
		return TodoCompleted, true
	}
	return "", false
}

// parseTodo reads one VTODO. It fails (the component is skipped) only when
// a RECURRENCE-ID cannot be read: the override would name no occurrence.
// Everything else that is wrong is dropped or clamped, and said.
func parseTodo(c *ical.Component, z *zones) (Todo, error) {
	var td Todo
	repair := func(format string, args ...any) {
		w := fmt.Sprintf(format, args...)
		td.Warnings = append(td.Warnings, w)
		td.repairs = append(td.repairs, w)
	}
	cm := readCommon(c, z)
	td.UID, td.Stamp, td.Sequence, td.Summary, td.Description = cm.uid, cm.stamp, cm.sequence, cm.summary, cm.desc
	if cm.derivedUID {
		repair("VTODO without UID; using %s", td.UID)
	}
	if v := textProp(c, ical.PropStatus); strings.TrimSpace(v) != "" {
		if s, ok := normalStatus(v); ok {
			td.Status = s
			if s != strings.TrimSpace(v) {
				td.Warnings = append(td.Warnings, fmt.Sprintf("STATUS %q read as %s", v, s))
			}
		} else {
			repair("unknown STATUS %q ignored", v)
		}
	}
	if p := c.Props.Get(ical.PropPriority); p != nil {
		n, err := strconv.Atoi(strings.TrimSpace(p.Value))
		switch {
		case err != nil:
			repair("PRIORITY %q is not a number; ignored", p.Value)
		case n < 0 || n > 9:
			repair("PRIORITY %d is outside 0–9; ignored", n)
		default:
			td.Priority = n
		}
	}
	if p := c.Props.Get(ical.PropPercentComplete); p != nil {
		n, err := strconv.Atoi(strings.TrimSpace(p.Value))
		switch {
		case err != nil:
			repair("PERCENT-COMPLETE %q is not a number; ignored", p.Value)
		case n < 0 || n > 100:
			td.Percent = min(max(n, 0), 100)
			repair("PERCENT-COMPLETE %d clamped to %d", n, td.Percent)
		default:
			td.Percent = n
		}
	}
	for _, p := range c.Props.Values(ical.PropCategories) {
		if l, err := p.TextList(); err == nil {
			for _, cat := range l {
				if cat = strings.TrimSpace(cat); cat != "" {
					td.Categories = append(td.Categories, cat)
				}
			}
		}
	}
	// The parent is the first RELATED-TO with RELTYPE=PARENT or none
	// (§3.8.4.5); CHILD, SIBLING and RFC 9253's other types do not nest a
	// task (they stay in the file, which writes never drop).
	for _, p := range c.Props.Values(ical.PropRelatedTo) {
		rt := strings.ToUpper(strings.TrimSpace(p.Params.Get(ical.ParamRelationshipType)))
		if rt != "" && rt != "PARENT" {
			continue
		}
		v := strings.TrimSpace(textUnescaper.Replace(p.Value))
		switch {
		case v == "":
			td.Warnings = append(td.Warnings, "empty RELATED-TO ignored")
		case v == td.UID:
			repair("RELATED-TO names the task itself; ignored")
		case td.Parent == "":
			td.Parent = v
		case v != td.Parent:
			if w := fmt.Sprintf("several parents in RELATED-TO; %q is used", td.Parent); !slices.Contains(td.Warnings, w) {
				td.Warnings = append(td.Warnings, w)
			}
		}
	}
	// Dates: a bad one is dropped, the to-do kept (a task without its due
	// date is still the user's task).
	when := func(name string) (parsedTime, bool) {
		p := c.Props.Get(name)
		if p == nil {
			return parsedTime{}, false
		}
		pt, err := parseDateTime(p, z)
		if err != nil {
			repair("%s ignored: %v", name, err)
			return parsedTime{}, false
		}
		if pt.warn != "" {
			td.Warnings = append(td.Warnings, pt.warn)
		}
		return pt, true
	}
	if st, ok := when(ical.PropDateTimeStart); ok {
		td.Start, td.StartAllDay, td.StartZone = st.t, st.allDay, st.zone
	}
	if dt, ok := when(ical.PropDue); ok {
		td.Due, td.DueAllDay, td.DueZone = dt.t, dt.allDay, dt.zone
	} else if p := c.Props.Get(ical.PropDuration); p != nil && !td.Start.IsZero() {
		if d, err := p.Duration(); err == nil && d >= 0 {
			td.Due, td.DueAllDay, td.DueZone = addDuration(td.Start, d), td.StartAllDay, td.StartZone
		} else {
			repair("DURATION %q ignored", p.Value)
		}
	}
	if !td.Due.IsZero() && !td.Start.IsZero() && td.Due.Before(td.Start) {
		td.Warnings = append(td.Warnings, "DUE before DTSTART")
	}
	if ct, ok := when(ical.PropCompleted); ok {
		td.Completed = ct.t
	}
	if p := c.Props.Get(ical.PropRecurrenceID); p != nil {
		rt, err := parseDateTime(p, z)
		if err != nil {
			return td, fmt.Errorf("VTODO %s RECURRENCE-ID: %w", td.UID, err)
		}
		td.RecurrenceID = rt.t
		return td, nil // an override carries no rule of its own
	}
	anchor, _ := td.anchor()
	var rules []string
	for _, p := range c.Props.Values(ical.PropRecurrenceRule) {
		rule, warn := cleanRRule(p.Value)
		if warn != "" {
			td.Warnings = append(td.Warnings, warn)
		}
		if anchor.IsZero() {
			repair("RRULE %q ignored: the to-do has neither DTSTART nor DUE", p.Value)
			continue
		}
		if rule == "" {
			repair("empty RRULE %q ignored", p.Value)
			continue
		}
		if _, err := buildRule(rule, anchor); err != nil {
			repair("RRULE %q ignored: %v", p.Value, err)
			continue
		}
		if !slices.Contains(rules, rule) {
			rules = append(rules, rule)
		}
	}
	td.RRule = strings.Join(rules, "\n")
	if !anchor.IsZero() {
		for _, name := range []string{ical.PropRecurrenceDates, ical.PropExceptionDates} {
			for _, p := range c.Props.Values(name) {
				ts, err := parseDateList(&p, z)
				if err != nil {
					repair("%s ignored: %v", name, err)
					continue
				}
				if name == ical.PropRecurrenceDates {
					td.RDates = append(td.RDates, ts...)
				} else {
					td.ExDates = append(td.ExDates, ts...)
				}
			}
		}
	}
	return td, nil
}

// latestTodoVersions keeps one to-do per UID and RECURRENCE-ID, as
// latestVersions does for events.
func latestTodoVersions(tds []Todo) ([]Todo, []Problem) {
	return latestOf(tds, "VTODO", func(t *Todo) revision { return revision{t.UID, t.RecurrenceID, t.Sequence, t.Stamp} })
}

// Occurrence of a recurring to-do: Original is the anchor time the rule
// gave it (what a RECURRENCE-ID names), Start and Due its own times (zero
// when the master has none).
type TodoOccurrence struct {
	Original, Start, Due time.Time
}

// NextOccurrence picks the one occurrence of a recurring to-do that is
// shown and completed: the latest occurrence due by the end of today if
// it is not done (overdue, or due today), otherwise the first later one
// that is not done. Earlier missed occurrences are not shown (a daily
// task left undone for a month is one overdue task, not thirty). done reports whether an occurrence
// has an override that is completed or cancelled. ok is false when no
// occurrence is left (the rule ended and every occurrence is done).
func (t *Todo) NextOccurrence(today time.Time, done func(original time.Time) bool) (TodoOccurrence, bool) {
	anchor, allDay := t.anchor()
	if anchor.IsZero() {
		return TodoOccurrence{}, false
	}
	s := Series{Start: anchor, AllDay: allDay, Rule: t.RRule, RDates: t.RDates, ExDates: t.ExDates}
	occ := func(o time.Time) TodoOccurrence {
		r := TodoOccurrence{Original: o}
		if !t.Start.IsZero() {
			r.Start = o
			if !t.Due.IsZero() {
				r.Due = o.Add(t.Due.Sub(t.Start))
			}
		} else {
			r.Due = o
		}
		return r
	}
	// The due offset moves the window: an occurrence is due by the end
	// of today by its due time, not its start.
	shift := time.Duration(0)
	if !t.Start.IsZero() && !t.Due.IsZero() {
		shift = t.Due.Sub(t.Start)
	}
	cut := today.AddDate(0, 0, 1).Add(-shift)
	past, _, err := s.Expand(cut.AddDate(-1, 0, 0), cut, 0)
	if err != nil {
		return TodoOccurrence{}, false
	}
	if n := len(past); n > 0 && !done(past[n-1].Start) {
		return occ(past[n-1].Start), true
	}
	// The first undone occurrence from today on, looking a few years
	// ahead in growing windows (a yearly task, a rule whose next
	// occurrences are completed already).
	from := cut
	for _, years := range []int{1, 5, 50} {
		to := cut.AddDate(years, 0, 0)
		next, _, err := s.Expand(from, to, 200)
		if err != nil {
			return TodoOccurrence{}, false
		}
		for _, o := range next {
			if !done(o.Start) {
				return occ(o.Start), true
			}
		}
		if len(next) > 0 {
			from = next[len(next)-1].Start.Add(time.Second)
		} else {
			from = to
		}
	}
	return TodoOccurrence{}, false
}
