package calendar

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"
)

// MaxFileBytes bounds one .ics or .vcf file read from a source; larger files
// are skipped with a named reason rather than read into memory.
const MaxFileBytes = 8 << 20

// ErrMalformed marks calendar data that cannot be parsed. Import counts and
// names such files instead of failing the whole source.
var ErrMalformed = errors.New("malformed iCalendar data")

// Attendee is one ATTENDEE (RFC 5545 §3.8.4.1) or the ORGANIZER.
type Attendee struct {
	Email    string `json:"email"`
	Name     string `json:"name,omitempty"`
	PartStat string `json:"partstat,omitempty"`
}

// Event is one VEVENT: a master (RecurrenceID zero) or an override of one
// instance of a recurring master with the same UID.
type Event struct {
	UID string
	// RecurrenceID is the original start of the instance an override
	// replaces (RFC 5545 §3.8.4.4); zero for masters.
	RecurrenceID  time.Time
	ThisAndFuture bool
	Summary       string
	Description   string
	Location      string
	Start, End    time.Time // in Zone (the floating zone for floating/all-day)
	AllDay        bool
	// Zone names how Start is anchored: an IANA name, "floating",
	// "posix:<rule>" for a custom VTIMEZONE's yearly rules, or
	// "fixed:<seconds>" for custom VTIMEZONEs approximated by an offset.
	Zone       string
	Status     string // TENTATIVE, CONFIRMED, CANCELLED
	Transp     string // OPAQUE (default) or TRANSPARENT
	Organizer  *Attendee
	Attendees  []Attendee
	Categories []string
	RRule      string // the raw RRULE value, empty when none
	RDates     []time.Time
	ExDates    []time.Time
	Sequence   int
	// Stamp is DTSTAMP, which orders versions of one SEQUENCE.
	Stamp time.Time
	// Warnings name non-fatal problems (unknown TZID approximated, RRULE
	// parts ignored) so that search results can show them.
	Warnings []string

	// repairs are the warnings that changed what the file says (reported
	// as problems of the file too).
	repairs []string
	// recIDAllDay records that RECURRENCE-ID was a DATE.
	recIDAllDay bool
}

// Busy reports whether the event blocks time (RFC 5545 §3.8.2.7 TRANSP,
// cancelled events never do).
func (e *Event) Busy() bool {
	return !strings.EqualFold(e.Transp, "TRANSPARENT") && !strings.EqualFold(e.Status, "CANCELLED")
}

// Recurring reports whether the event has an RRULE or RDATEs.
func (e *Event) Recurring() bool { return e.RRule != "" || len(e.RDates) > 0 }

// Problem names one component of a file that was skipped or repaired
// while parsing, so that import output, the doctor and the Agenda page can
// say what was not taken as written.
type Problem struct {
	// Component names it: "VEVENT <uid>", "VEVENT #3" (the third VEVENT,
	// when it has no UID) or "VCALENDAR".
	Component string `json:"component"`
	Reason    string `json:"reason"`
	// Skipped is true when the component was left out, false when it was
	// kept after a repair.
	Skipped bool `json:"skipped"`
}

func (p Problem) String() string {
	verb := "repaired"
	if p.Skipped {
		verb = "skipped"
	}
	return fmt.Sprintf("%s %s: %s", verb, p.Component, p.Reason)
}

// ParseICS parses an iCalendar stream (RFC 5545) into its events, strictly:
// a VEVENT that had to be skipped makes the whole stream an error wrapping
// ErrMalformed and naming the problem. Repairs (see ParseICSLenient) are
// kept as event warnings.
func ParseICS(r io.Reader, floating *time.Location) ([]Event, error) {
	evs, probs, err := ParseICSLenient(r, floating)
	if err != nil {
		return nil, err
	}
	for _, p := range probs {
		if p.Skipped {
			return nil, fmt.Errorf("%w: %s", ErrMalformed, p)
		}
	}
	return evs, nil
}

// ParseICSLenient parses an iCalendar stream (RFC 5545) into its events the
// way mail and calendar clients read real-world files: one bad component
// never costs the others. A VEVENT that cannot be read (no DTSTART, a bad
// date) is skipped; one with a fixable defect is repaired (a missing UID is
// derived from its content, an unusable RRULE keeps DTSTART only, a
// mistyped END of any component closes the component that is open); each
// is named in the problems. Times without a zone are placed in the
// calendar's X-WR-TIMEZONE when it declares one, else in floating; all-day
// dates in floating. Several versions of one event (UID and RECURRENCE-ID)
// keep the highest SEQUENCE, then the latest DTSTAMP (RFC 5545 §3.8.7.4).
// VTODO components are left to ParseObjects (their problems are not
// reported here) and VJOURNAL ones are ignored. err is set only when
// nothing can be read: unreadable, too large, or no VCALENDAR at all.
func ParseICSLenient(r io.Reader, floating *time.Location) ([]Event, []Problem, error) {
	o, err := parseObjects(r, floating, false)
	return o.Events, o.Problems, err
}

// Objects are the calendar objects of one iCalendar stream.
type Objects struct {
	Events []Event
	Todos  []Todo
	// Problems name the components skipped or repaired, events' and
	// to-dos' alike.
	Problems []Problem
}

// ParseObjects parses an iCalendar stream leniently (see ParseICSLenient)
// into its events and its to-dos (VTODO, RFC 5545 §3.6.2). A VTODO is
// skipped only when its RECURRENCE-ID cannot be read (it names no
// instance); a bad DUE, DTSTART, COMPLETED, PRIORITY, PERCENT-COMPLETE,
// STATUS or RRULE is dropped or clamped and the to-do kept, named in the
// problems.
func ParseObjects(r io.Reader, floating *time.Location) (Objects, error) {
	return parseObjects(r, floating, true)
}

func parseObjects(r io.Reader, floating *time.Location, withTodos bool) (Objects, error) {
	var out Objects
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return out, fmt.Errorf("reading iCalendar data: %w", err)
	}
	if len(data) > MaxFileBytes {
		return out, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxFileBytes)
	}
	if floating == nil {
		floating = time.Local
	}
	cals, err := decodeAll(data)
	var probs []Problem
	if err != nil || len(cals) == 0 {
		fixed, fixes := repairStructure(data)
		cals2, err2 := decodeAll(fixed)
		var dropped []Problem
		if err2 != nil {
			// Content lines the decoder refuses (a mangled parameter)
			// are dropped one by one, then the nesting is mended.
			var lines []byte
			lines, dropped = dropBadLines(data)
			fixed, fixes = repairStructure(lines)
			cals2, err2 = decodeAll(fixed)
		}
		if err2 != nil || len(fixes)+len(dropped) == 0 {
			if err == nil {
				err = errors.New("no VCALENDAR")
			}
			return out, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		cals = cals2
		probs = append(probs, dropped...)
		for _, f := range fixes {
			probs = append(probs, Problem{Component: "VCALENDAR", Reason: f})
		}
	}
	if len(cals) == 0 {
		return out, fmt.Errorf("%w: no VCALENDAR", ErrMalformed)
	}
	var evs []Event
	var todos []Todo
	n, nt := 0, 0
	for _, cal := range cals {
		z := newZones(cal.Component, floating)
		for _, c := range cal.Children {
			switch {
			case c.Name == ical.CompEvent:
				n++
				ev, err := parseEvent(c, z)
				name := "VEVENT #" + strconv.Itoa(n)
				if ev.UID != "" {
					name = "VEVENT " + ev.UID
				}
				if err != nil {
					probs = append(probs, Problem{Component: name, Reason: err.Error(), Skipped: true})
					continue
				}
				for _, w := range ev.repairs {
					probs = append(probs, Problem{Component: name, Reason: w})
				}
				ev.repairs = nil
				evs = append(evs, ev)
			case c.Name == ical.CompToDo && withTodos:
				nt++
				td, err := parseTodo(c, z)
				name := "VTODO #" + strconv.Itoa(nt)
				if td.UID != "" {
					name = "VTODO " + td.UID
				}
				if err != nil {
					probs = append(probs, Problem{Component: name, Reason: err.Error(), Skipped: true})
					continue
				}
				for _, w := range td.repairs {
					probs = append(probs, Problem{Component: name, Reason: w})
				}
				td.repairs = nil
				todos = append(todos, td)
			}
		}
	}
	matchRecurrenceIDs(evs)
	evs, dropped := latestVersions(evs)
	probs = append(probs, dropped...)
	todos, dropped = latestTodoVersions(todos)
	probs = append(probs, dropped...)
	out.Events, out.Todos, out.Problems = evs, todos, probs
	return out, nil
}

// decodeAll decodes every VCALENDAR of a stream.
func decodeAll(data []byte) ([]*ical.Calendar, error) {
	dec := ical.NewDecoder(bytes.NewReader(data))
	var out []*ical.Calendar
	for {
		cal, err := decodeSafe(dec)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, cal)
	}
}

// knownComponents are the component names of RFC 5545 §3.6 and §3.6.5.
var knownComponents = map[string]bool{"VCALENDAR": true, "VEVENT": true, "VTODO": true, "VJOURNAL": true,
	"VFREEBUSY": true, "VTIMEZONE": true, "STANDARD": true, "DAYLIGHT": true, "VALARM": true}

// repairStructure fixes BEGIN/END nesting that go-ical refuses (it rejects
// the whole stream): an END of a known component that is not open is
// dropped, an END naming no known component (a misspelled "END:VTODOO")
// closes the innermost open one, an END naming an outer component
// closes the inner ones first, and components still open at the end are
// closed. It returns the repaired stream and what it changed.
func repairStructure(data []byte) ([]byte, []string) {
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	var out []string
	var stack, fixes []string
	for _, l := range lines {
		if name, value, _ := strings.Cut(l, ":"); len(stack) == 0 && strings.EqualFold(name, "BEGIN") && !strings.EqualFold(strings.TrimSpace(value), "VCALENDAR") {
			// A component outside any VCALENDAR (a bare VEVENT file).
			fixes = append(fixes, fmt.Sprintf("%s outside VCALENDAR wrapped", strings.ToUpper(strings.TrimSpace(value))))
			out = append(out, "BEGIN:VCALENDAR")
			stack = append(stack, "VCALENDAR")
		}
		if l == "" {
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		value = strings.ToUpper(strings.TrimSpace(value))
		switch strings.ToUpper(strings.TrimSpace(name)) {
		case "BEGIN":
			stack = append(stack, value)
		case "END":
			if len(stack) == 0 {
				fixes = append(fixes, fmt.Sprintf("END:%s without BEGIN dropped", value))
				continue
			}
			i := len(stack) - 1
			for i >= 0 && stack[i] != value {
				i--
			}
			if i < 0 && knownComponents[value] {
				fixes = append(fixes, fmt.Sprintf("END:%s without BEGIN dropped", value))
				continue
			}
			if i < 0 {
				top := stack[len(stack)-1]
				fixes = append(fixes, fmt.Sprintf("END:%s read as END:%s", value, top))
				l, i = "END:"+top, len(stack)-1
			}
			for j := len(stack) - 1; j > i; j-- {
				fixes = append(fixes, fmt.Sprintf("%s closed before END:%s", stack[j], value))
				out = append(out, "END:"+stack[j])
			}
			stack = stack[:i]
		}
		out = append(out, l)
	}
	for j := len(stack) - 1; j >= 0; j-- {
		fixes = append(fixes, fmt.Sprintf("%s not closed", stack[j]))
		out = append(out, "END:"+stack[j])
	}
	return []byte(strings.Join(out, "\r\n") + "\r\n"), fixes
}

// decodeSafe turns the decoder's internal panics on truncated input into
// errors (go-ical panics when a component ends without END).
func decodeSafe(dec *ical.Decoder) (cal *ical.Calendar, err error) {
	defer func() {
		if p := recover(); p != nil {
			cal, err = nil, fmt.Errorf("decoder: %v", p)
		}
	}()
	return dec.Decode()
}

// textProp reads a TEXT property ("" when absent). TEXT is one value
// (RFC 5545 §3.3.11): an unescaped comma, as in "Via Roma 12, Milano", is
// part of it (go-ical's Text cuts there, reading it as a list).
func textProp(c *ical.Component, name string) string {
	p := c.Props.Get(name)
	if p == nil {
		return ""
	}
	return textUnescaper.Replace(p.Value)
}

// common is what VEVENT and VTODO read alike.
type common struct {
	uid        string
	derivedUID bool // the component had no UID: uid is syntheticUID's
	stamp      time.Time
	sequence   int
	summary    string
	desc       string
}

// readCommon reads UID, DTSTAMP, SEQUENCE, SUMMARY and DESCRIPTION. RFC
// 5545 requires UID; a stable one derived from the content keeps a
// component without it (and the same UID on every re-import). A DTSTAMP
// or SEQUENCE that cannot be read counts as absent.
func readCommon(c *ical.Component, z *zones) common {
	cm := common{uid: strings.TrimSpace(textProp(c, ical.PropUID)), summary: textProp(c, ical.PropSummary), desc: textProp(c, ical.PropDescription)}
	if cm.uid == "" {
		cm.uid, cm.derivedUID = syntheticUID(c), true
	}
	if p := c.Props.Get(ical.PropDateTimeStamp); p != nil {
		if st, err := parseDateTime(p, z); err == nil {
			cm.stamp = st.t
		}
	}
	if p := c.Props.Get(ical.PropSequence); p != nil {
		cm.sequence, _ = strconv.Atoi(strings.TrimSpace(p.Value))
	}
	return cm
}

func parseEvent(c *ical.Component, z *zones) (Event, error) {
	var ev Event
	repair := func(w string) {
		ev.Warnings = append(ev.Warnings, w)
		ev.repairs = append(ev.repairs, w)
	}
	cm := readCommon(c, z)
	ev.UID, ev.Stamp, ev.Sequence, ev.Summary, ev.Description = cm.uid, cm.stamp, cm.sequence, cm.summary, cm.desc
	if cm.derivedUID {
		repair("VEVENT without UID; using " + ev.UID)
	}
	ev.Location = textProp(c, ical.PropLocation)
	ev.Status = strings.ToUpper(textProp(c, ical.PropStatus))
	ev.Transp = strings.ToUpper(textProp(c, ical.PropTransparency))
	for _, p := range c.Props.Values(ical.PropCategories) {
		if l, err := p.TextList(); err == nil {
			ev.Categories = append(ev.Categories, l...)
		}
	}
	if p := c.Props.Get(ical.PropOrganizer); p != nil {
		a := attendee(p)
		ev.Organizer = &a
	}
	for _, p := range c.Props.Values(ical.PropAttendee) {
		ev.Attendees = append(ev.Attendees, attendee(&p))
	}

	sp := c.Props.Get(ical.PropDateTimeStart)
	if sp == nil {
		return ev, fmt.Errorf("VEVENT %s without DTSTART", ev.UID)
	}
	st, err := parseDateTime(sp, z)
	if err != nil {
		return ev, fmt.Errorf("VEVENT %s DTSTART: %w", ev.UID, err)
	}
	ev.Start, ev.AllDay, ev.Zone = st.t, st.allDay, st.zone
	if st.warn != "" {
		ev.Warnings = append(ev.Warnings, st.warn)
	}
	switch {
	case c.Props.Get(ical.PropDateTimeEnd) != nil:
		et, err := parseDateTime(c.Props.Get(ical.PropDateTimeEnd), z)
		if err != nil {
			return ev, fmt.Errorf("VEVENT %s DTEND: %w", ev.UID, err)
		}
		ev.End = et.t
		if et.allDay != ev.AllDay {
			// Mixed DATE/DATE-TIME: keep the start's kind.
			ev.Warnings = append(ev.Warnings, "DTEND value type differs from DTSTART")
		}
	case c.Props.Get(ical.PropDuration) != nil:
		d, err := c.Props.Get(ical.PropDuration).Duration()
		if err != nil {
			return ev, fmt.Errorf("VEVENT %s DURATION: %w", ev.UID, err)
		}
		ev.End = addDuration(ev.Start, d)
	case ev.AllDay:
		ev.End = ev.Start.AddDate(0, 0, 1) // RFC 5545 §3.6.1: one day
	default:
		ev.End = ev.Start
	}
	if ev.End.Before(ev.Start) {
		ev.Warnings = append(ev.Warnings, "DTEND before DTSTART; treated as zero length")
		ev.End = ev.Start
	}

	if p := c.Props.Get(ical.PropRecurrenceID); p != nil {
		rt, err := parseDateTime(p, z)
		if err != nil {
			return ev, fmt.Errorf("VEVENT %s RECURRENCE-ID: %w", ev.UID, err)
		}
		ev.RecurrenceID, ev.recIDAllDay = rt.t, rt.allDay
		ev.ThisAndFuture = strings.EqualFold(p.Params.Get("RANGE"), "THISANDFUTURE")
	}
	if ev.RecurrenceID.IsZero() {
		// Several RRULEs are allowed (RFC 5545 §3.6.1, "rrule" may occur
		// more than once in practice and in RFC 2445); the instances are
		// their union, kept as the rules joined by newlines.
		var rules []string
		for _, p := range c.Props.Values(ical.PropRecurrenceRule) {
			rule, warn := cleanRRule(p.Value)
			if warn != "" {
				ev.Warnings = append(ev.Warnings, warn)
			}
			if rule == "" {
				repair(fmt.Sprintf("empty RRULE %q ignored", p.Value))
				continue
			}
			opt, err := buildRule(rule, ev.Start)
			if err != nil {
				repair(fmt.Sprintf("RRULE %q ignored: %v", p.Value, err))
				continue
			}
			if occurs(opt, ev.Start) && !slices.Contains(rules, rule) {
				rules = append(rules, rule)
			} else if !occurs(opt, ev.Start) {
				ev.Warnings = append(ev.Warnings, fmt.Sprintf("RRULE %q never occurs; only DTSTART is kept", p.Value))
			}
		}
		ev.RRule = strings.Join(rules, "\n")
	}
	for _, name := range []string{ical.PropRecurrenceDates, ical.PropExceptionDates} {
		for _, p := range c.Props.Values(name) {
			ts, err := parseDateList(&p, z)
			if err != nil {
				return ev, fmt.Errorf("VEVENT %s %s: %w", ev.UID, name, err)
			}
			if !ev.AllDay && isDateList(&p) {
				// A DATE exception on a timed series names the instance
				// of that day: anchor it at DTSTART's time of day.
				for i, t := range ts {
					h, m, sec := ev.Start.Clock()
					ts[i] = time.Date(t.Year(), t.Month(), t.Day(), h, m, sec, 0, ev.Start.Location())
				}
			}
			if name == ical.PropRecurrenceDates {
				ev.RDates = append(ev.RDates, ts...)
			} else {
				ev.ExDates = append(ev.ExDates, ts...)
			}
		}
	}
	return ev, nil
}

// syntheticUID derives a UID for a VEVENT that has none from its
// properties, so that a re-import gives the same one.
func syntheticUID(c *ical.Component) string {
	h := sha256.New()
	names := make([]string, 0, len(c.Props))
	for n := range c.Props {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, p := range c.Props[n] {
			fmt.Fprintf(h, "%s:%s\n", n, p.Value)
		}
	}
	return "hestia-nouid-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// revision is what tells the versions of one component apart: the same
// UID and RECURRENCE-ID name the same component (rec is zero for the
// master).
type revision struct {
	uid   string
	rec   time.Time
	seq   int
	stamp time.Time
}

// supersedes reports whether r is the newer version: the highest
// SEQUENCE, then the latest DTSTAMP, then (a tie) r, the later in the
// file (RFC 5545 §3.8.7.4).
func (r revision) supersedes(o revision) bool {
	if r.seq != o.seq {
		return r.seq > o.seq
	}
	return !r.stamp.Before(o.stamp)
}

// latestOf keeps one item per UID and RECURRENCE-ID, the newest by
// revision.supersedes; the versions left out are reported, named as kind
// (VEVENT, VTODO) and UID.
func latestOf[T any](items []T, kind string, rev func(*T) revision) ([]T, []Problem) {
	type key struct {
		uid string
		rec int64
	}
	best := map[key]int{}
	var probs []Problem
	drop := make([]bool, len(items))
	for i := range items {
		ri := rev(&items[i])
		k := key{ri.uid, 0}
		if !ri.rec.IsZero() {
			k.rec = ri.rec.Unix()
		}
		j, ok := best[k]
		if !ok {
			best[k] = i
			continue
		}
		loser := i
		if ri.supersedes(rev(&items[j])) {
			loser, best[k] = j, i
		}
		drop[loser] = true
		// Not a loss: the file itself says which version is current.
		probs = append(probs, Problem{Component: kind + " " + ri.uid,
			Reason: fmt.Sprintf("older version (SEQUENCE %d) left out for the newer one", rev(&items[loser]).seq)})
	}
	if len(probs) == 0 {
		return items, nil
	}
	out := items[:0]
	for i := range items {
		if !drop[i] {
			out = append(out, items[i])
		}
	}
	return out, probs
}

// latestVersions keeps one event per UID and RECURRENCE-ID (latestOf).
func latestVersions(evs []Event) ([]Event, []Problem) {
	return latestOf(evs, "VEVENT", func(e *Event) revision { return revision{e.UID, e.RecurrenceID, e.Sequence, e.Stamp} })
}

// matchRecurrenceIDs gives each override's RECURRENCE-ID the value type of
// its master's DTSTART, as the instance it names is generated: Outlook
// writes a DATE-TIME (often at midnight in its own TZID) for an instance of
// an all-day series, others a DATE for a timed one. Without this the
// override and the original instance both show.
func matchRecurrenceIDs(evs []Event) {
	masters := map[string]*Event{}
	for i := range evs {
		if evs[i].RecurrenceID.IsZero() {
			masters[evs[i].UID] = &evs[i]
		}
	}
	for i := range evs {
		e := &evs[i]
		m := masters[e.UID]
		if e.RecurrenceID.IsZero() || m == nil || e.recIDAllDay == m.AllDay {
			continue
		}
		t := e.RecurrenceID
		if t.Location() == time.UTC {
			t = t.In(m.Start.Location())
		}
		y, mo, d := t.Date()
		if m.AllDay {
			e.RecurrenceID = time.Date(y, mo, d, 0, 0, 0, 0, m.Start.Location())
		} else {
			h, mi, sec := m.Start.Clock()
			e.RecurrenceID = time.Date(y, mo, d, h, mi, sec, 0, m.Start.Location())
		}
	}
}

// addDuration adds an iCalendar duration: whole days are nominal (wall
// clock) days so that a P1D event keeps its time across DST (RFC 5545
// §3.3.6), the rest is exact.
func addDuration(t time.Time, d time.Duration) time.Time {
	days := d / (24 * time.Hour)
	return t.AddDate(0, 0, int(days)).Add(d - days*24*time.Hour)
}

func attendee(p *ical.Prop) Attendee {
	v := strings.TrimSpace(p.Value)
	if len(v) >= 7 && strings.EqualFold(v[:7], "mailto:") {
		v = v[7:]
	}
	return Attendee{Email: strings.ToLower(v), Name: p.Params.Get(ical.ParamCommonName), PartStat: strings.ToUpper(p.Params.Get(ical.ParamParticipationStatus))}
}

type parsedTime struct {
	t      time.Time
	allDay bool
	zone   string
	warn   string
}

const (
	dateLayout     = "20060102"
	dateTimeLayout = "20060102T150405"
)

// parseDateTime reads a DATE or DATE-TIME value (RFC 5545 §3.3.4, §3.3.5).
func parseDateTime(p *ical.Prop, z *zones) (parsedTime, error) {
	return parseOne(strings.TrimSpace(p.Value), p.Params.Get(ical.ParamValue), p.Params.Get(ical.ParamTimezoneID), z)
}

func parseOne(v, valueType, tzid string, z *zones) (parsedTime, error) {
	if len(v) == len(dateLayout)+1 && (v[8] == 'Z' || v[8] == 'z') {
		v = v[:8] // Google writes RDATE:20131210Z for a DATE
	}
	if strings.EqualFold(valueType, "DATE") || (valueType == "" && len(v) == len(dateLayout)) {
		t, err := time.ParseInLocation(dateLayout, v, z.floating)
		if err != nil {
			return parsedTime{}, fmt.Errorf("bad DATE %q", v)
		}
		return parsedTime{t: t, allDay: true, zone: "floating"}, nil
	}
	if strings.HasSuffix(v, "Z") || strings.HasSuffix(v, "z") {
		t, err := time.ParseInLocation(dateTimeLayout, v[:len(v)-1], time.UTC)
		if err != nil {
			return parsedTime{}, fmt.Errorf("bad DATE-TIME %q", v)
		}
		return parsedTime{t: t, zone: "UTC"}, nil
	}
	if tzid == "" {
		loc, zone := z.floating, "floating"
		if z.wr != nil {
			loc, zone = z.wr, z.wr.String()
		}
		t, err := time.ParseInLocation(dateTimeLayout, v, loc)
		if err != nil {
			return parsedTime{}, fmt.Errorf("bad DATE-TIME %q", v)
		}
		return parsedTime{t: t, zone: zone}, nil
	}
	loc, exact := z.lookup(tzid)
	t, err := time.ParseInLocation(dateTimeLayout, v, loc)
	if err != nil {
		return parsedTime{}, fmt.Errorf("bad DATE-TIME %q", v)
	}
	pt := parsedTime{t: t, zone: loc.String()}
	if !exact {
		_, off := t.Zone()
		pt.zone = "fixed:" + strconv.Itoa(off)
		pt.warn = fmt.Sprintf("unknown TZID %q approximated as UTC%+d s", tzid, off)
	}
	return pt, nil
}

// parseDateList reads a comma-separated RDATE/EXDATE value; PERIOD values
// contribute their start.
func parseDateList(p *ical.Prop, z *zones) ([]time.Time, error) {
	var out []time.Time
	vt := p.Params.Get(ical.ParamValue)
	for _, v := range strings.Split(p.Value, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if strings.EqualFold(vt, "PERIOD") || strings.Contains(v, "/") {
			v, _, _ = strings.Cut(v, "/")
			vt = ""
		}
		pt, err := parseOne(v, vt, p.Params.Get(ical.ParamTimezoneID), z)
		if err != nil {
			return nil, err
		}
		out = append(out, pt.t)
	}
	return out, nil
}

func isDateList(p *ical.Prop) bool {
	if strings.EqualFold(p.Params.Get(ical.ParamValue), "DATE") {
		return true
	}
	v, _, _ := strings.Cut(p.Value, ",")
	return len(strings.TrimSpace(v)) == len(dateLayout)
}

// LoadZone returns the location an event's Zone names; floating means the
// caller's floating location.
func LoadZone(zone string, floating *time.Location) *time.Location {
	switch {
	case zone == "" || zone == "floating":
		return floating
	case zone == "UTC":
		return time.UTC
	case strings.HasPrefix(zone, posixPrefix):
		if loc, err := locationFromPosix(zone, strings.TrimPrefix(zone, posixPrefix)); err == nil {
			return loc
		}
		return time.UTC
	case strings.HasPrefix(zone, "fixed:"):
		off, _ := strconv.Atoi(strings.TrimPrefix(zone, "fixed:"))
		return time.FixedZone(zone, off)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return time.UTC
	}
	return loc
}
