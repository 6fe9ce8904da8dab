package calwrite

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// newUID returns a fresh RFC 5545 §3.8.4.7 UID, assigned before any write
// so that a repeated or uncertain write can be recognised by it.
func newUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b) + "@hestia"
}

// Fields are the event properties a create or update sets. Nil pointers
// leave a property as it is (update) or unset (create).
type Fields struct {
	Summary     *string
	Description *string
	Location    *string
	Start, End  *time.Time
	AllDay      bool
	Attendees   []string
	RRule       string
}

const prodID = "-//Hestia//Hestia calendar//EN"

func decode(data []byte) (*ical.Calendar, error) {
	cal, err := ical.NewDecoder(bytes.NewReader(data)).Decode()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", calendar.ErrMalformed, err)
	}
	return cal, nil
}

func encode(cal *ical.Calendar) ([]byte, error) {
	var b bytes.Buffer
	if err := ical.NewEncoder(&b).Encode(cal); err != nil {
		return nil, fmt.Errorf("encoding the calendar object: %w", err)
	}
	return b.Bytes(), nil
}

// setTime writes t as DTSTART/DTEND/RECURRENCE-ID/EXDATE in the form of
// like (the master's DTSTART): a DATE, UTC, or local time with like's TZID;
// without like, in loc (UTC when loc has no IANA name).
func setTime(props ical.Props, name string, t time.Time, allDay bool, like *ical.Prop, loc *time.Location, cal *ical.Component) {
	p := ical.NewProp(name)
	switch {
	case allDay || (like != nil && (strings.EqualFold(like.Params.Get(ical.ParamValue), "DATE") || len(like.Value) == 8)):
		p.SetValueType(ical.ValueDate)
		p.Value = t.Format("20060102")
	case like != nil && like.Params.Get(ical.ParamTimezoneID) != "":
		tzid := like.Params.Get(ical.ParamTimezoneID)
		p.Params.Set(ical.ParamTimezoneID, tzid)
		p.Value = t.In(calendar.ResolveTZID(cal, tzid)).Format("20060102T150405")
	case like != nil && !strings.HasSuffix(like.Value, "Z"):
		p.Value = t.In(loc).Format("20060102T150405") // floating
	case like == nil && loc != nil && loc != time.UTC && loc.String() != "Local" && loc.String() != "":
		p.Params.Set(ical.ParamTimezoneID, loc.String())
		p.Value = t.In(loc).Format("20060102T150405")
	default:
		p.Value = t.UTC().Format("20060102T150405Z")
	}
	props.Set(p)
}

func stamp(props ical.Props, now time.Time) {
	props.SetDateTime(ical.PropDateTimeStamp, now.UTC())
	props.SetDateTime(ical.PropLastModified, now.UTC())
}

func apply(ev *ical.Component, f Fields, like *ical.Prop, loc *time.Location, cal *ical.Component) {
	set := func(name string, v *string) {
		if v == nil {
			return
		}
		if *v == "" {
			ev.Props.Del(name)
			return
		}
		ev.Props.SetText(name, *v)
	}
	set(ical.PropSummary, f.Summary)
	set(ical.PropDescription, f.Description)
	set(ical.PropLocation, f.Location)
	if f.Start != nil {
		setTime(ev.Props, ical.PropDateTimeStart, *f.Start, f.AllDay, like, loc, cal)
	}
	if f.End != nil {
		ev.Props.Del(ical.PropDuration)
		setTime(ev.Props, ical.PropDateTimeEnd, *f.End, f.AllDay, like, loc, cal)
	}
	for _, a := range f.Attendees {
		p := ical.NewProp(ical.PropAttendee)
		p.Value = "mailto:" + a
		p.Params.Set(ical.ParamParticipationStatus, "NEEDS-ACTION")
		ev.Props.Add(p)
	}
	if f.RRule != "" {
		p := ical.NewProp(ical.PropRecurrenceRule)
		p.Value = f.RRule
		ev.Props.Set(p)
	}
}

func bumpSequence(ev *ical.Component) {
	n := 0
	if p := ev.Props.Get(ical.PropSequence); p != nil {
		n, _ = strconv.Atoi(strings.TrimSpace(p.Value))
	}
	p := ical.NewProp(ical.PropSequence)
	p.Value = strconv.Itoa(n + 1)
	ev.Props.Set(p)
}

// buildNew makes the calendar object of a new event.
func buildNew(uid string, f Fields, loc *time.Location, now time.Time) ([]byte, error) {
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropProductID, prodID)
	cal.Props.SetText(ical.PropVersion, "2.0")
	ev := ical.NewComponent(ical.CompEvent)
	ev.Props.SetText(ical.PropUID, uid)
	stamp(ev.Props, now)
	ev.Props.SetDateTime(ical.PropCreated, now.UTC())
	apply(ev, f, nil, loc, cal.Component)
	cal.Children = append(cal.Children, ev)
	return encode(cal)
}

// events finds the master and the override of one instance (nil when
// absent) for uid in cal.
func events(cal *ical.Calendar, uid string, instance time.Time, loc *time.Location) (master, override *ical.Component, err error) {
	for _, c := range cal.Children {
		if c.Name != ical.CompEvent {
			continue
		}
		p := c.Props.Get(ical.PropUID)
		if p == nil || p.Value != uid {
			continue
		}
		rid := c.Props.Get(ical.PropRecurrenceID)
		if rid == nil {
			master = c
			continue
		}
		if !instance.IsZero() {
			if t, ok := propTime(rid, loc, cal.Component); ok && t.Equal(instance) {
				override = c
			}
		}
	}
	if master == nil {
		return nil, nil, fmt.Errorf("event %s has no master component (only overrides)", uid)
	}
	return master, override, nil
}

func propTime(p *ical.Prop, loc *time.Location, cal *ical.Component) (time.Time, bool) {
	v := strings.TrimSpace(p.Value)
	switch {
	case len(v) == 8:
		t, err := time.ParseInLocation("20060102", v, loc)
		return t, err == nil
	case strings.HasSuffix(v, "Z"):
		t, err := time.ParseInLocation("20060102T150405", strings.TrimSuffix(v, "Z"), time.UTC)
		return t, err == nil
	case p.Params.Get(ical.ParamTimezoneID) != "":
		t, err := time.ParseInLocation("20060102T150405", v, calendar.ResolveTZID(cal, p.Params.Get(ical.ParamTimezoneID)))
		return t, err == nil
	}
	t, err := time.ParseInLocation("20060102T150405", v, loc)
	return t, err == nil
}

// errNotInstance is returned when an instance time is not an occurrence.
var errNotInstance = errors.New("is not an occurrence of the event")
