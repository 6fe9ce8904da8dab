package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
	// Warnings name non-fatal problems (unknown TZID approximated, RRULE
	// parts ignored) so that search results can show them.
	Warnings []string
}

// Busy reports whether the event blocks time (RFC 5545 §3.8.2.7 TRANSP,
// cancelled events never do).
func (e *Event) Busy() bool {
	return !strings.EqualFold(e.Transp, "TRANSPARENT") && !strings.EqualFold(e.Status, "CANCELLED")
}

// Recurring reports whether the event has an RRULE or RDATEs.
func (e *Event) Recurring() bool { return e.RRule != "" || len(e.RDates) > 0 }

// ParseICS parses an iCalendar stream (RFC 5545) into its events. Times
// without a zone and all-day dates are placed in floating. VTODO/VJOURNAL
// components are ignored. A broken VEVENT makes the whole stream an error
// wrapping ErrMalformed and naming the problem.
func ParseICS(r io.Reader, floating *time.Location) ([]Event, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading iCalendar data: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrMalformed, MaxFileBytes)
	}
	if floating == nil {
		floating = time.Local
	}
	dec := ical.NewDecoder(bytes.NewReader(data))
	var out []Event
	n := 0
	for {
		cal, err := decodeSafe(dec)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		n++
		z := newZones(cal.Component, floating)
		for _, c := range cal.Children {
			if c.Name != ical.CompEvent {
				continue
			}
			ev, err := parseEvent(c, z)
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			out = append(out, ev)
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no VCALENDAR", ErrMalformed)
	}
	return out, nil
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

func parseEvent(c *ical.Component, z *zones) (Event, error) {
	var ev Event
	text := func(name string) string {
		p := c.Props.Get(name)
		if p == nil {
			return ""
		}
		s, err := p.Text()
		if err != nil {
			return p.Value
		}
		return s
	}
	ev.UID = strings.TrimSpace(text(ical.PropUID))
	if ev.UID == "" {
		return ev, errors.New("VEVENT without UID")
	}
	ev.Summary = text(ical.PropSummary)
	ev.Description = text(ical.PropDescription)
	ev.Location = text(ical.PropLocation)
	ev.Status = strings.ToUpper(text(ical.PropStatus))
	ev.Transp = strings.ToUpper(text(ical.PropTransparency))
	if p := c.Props.Get(ical.PropSequence); p != nil {
		ev.Sequence, _ = strconv.Atoi(strings.TrimSpace(p.Value))
	}
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
		ev.RecurrenceID = rt.t
		ev.ThisAndFuture = strings.EqualFold(p.Params.Get("RANGE"), "THISANDFUTURE")
	}
	if p := c.Props.Get(ical.PropRecurrenceRule); p != nil && ev.RecurrenceID.IsZero() {
		rule, warn := cleanRRule(p.Value)
		if warn != "" {
			ev.Warnings = append(ev.Warnings, warn)
		}
		opt, err := buildRule(rule, ev.Start)
		if err != nil {
			return ev, fmt.Errorf("VEVENT %s RRULE %q: %w", ev.UID, p.Value, err)
		}
		if occurs(opt, ev.Start) {
			ev.RRule = rule
		} else {
			ev.Warnings = append(ev.Warnings, fmt.Sprintf("RRULE %q never occurs; only DTSTART is kept", p.Value))
		}
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
		t, err := time.ParseInLocation(dateTimeLayout, v, z.floating)
		if err != nil {
			return parsedTime{}, fmt.Errorf("bad DATE-TIME %q", v)
		}
		return parsedTime{t: t, zone: "floating"}, nil
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
