package calwrite

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// Limits on what a write may contain.
const (
	maxText     = 4000
	maxAttendee = 50
	maxSpan     = 31 * 24 * time.Hour
	maxAhead    = 20 * 366 * 24 * time.Hour
)

// CreateArgs are calendar_create's arguments.
type CreateArgs struct {
	Calendar    string   `json:"calendar,omitempty"`
	Summary     string   `json:"summary"`
	Start       string   `json:"start"`
	End         string   `json:"end,omitempty"`
	Minutes     int      `json:"duration_minutes,omitempty"`
	AllDay      bool     `json:"all_day,omitempty"`
	Location    string   `json:"location,omitempty"`
	Description string   `json:"description,omitempty"`
	Attendees   []string `json:"attendees,omitempty"`
	RRule       string   `json:"rrule,omitempty"`
}

// UpdateArgs are calendar_update's arguments.
type UpdateArgs struct {
	UID         string  `json:"uid"`
	Calendar    string  `json:"calendar,omitempty"`
	Instance    string  `json:"instance,omitempty"` // original start of one occurrence
	Summary     *string `json:"summary,omitempty"`
	Start       string  `json:"start,omitempty"`
	End         string  `json:"end,omitempty"`
	Location    *string `json:"location,omitempty"`
	Description *string `json:"description,omitempty"`
}

// DeleteArgs are calendar_delete's arguments.
type DeleteArgs struct {
	UID      string `json:"uid"`
	Calendar string `json:"calendar,omitempty"`
	Instance string `json:"instance,omitempty"`
}

// checkText refuses control characters (line breaks are allowed in
// descriptions only) and overlong values.
func checkText(field, v string, multiline bool) error {
	if len(v) > maxText {
		return fmt.Errorf("%s is longer than %d bytes", field, maxText)
	}
	for _, r := range v {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) {
			return fmt.Errorf("%s contains a control character", field)
		}
	}
	return nil
}

func (w *Writer) target(ctx context.Context, name, uid string) (Target, error) {
	ts, err := w.targets(ctx)
	if err != nil {
		return Target{}, err
	}
	if name == "" && uid != "" {
		cals, err := w.cal.CalendarsOf(ctx, uid)
		if err != nil {
			return Target{}, err
		}
		switch len(cals) {
		case 0:
			return Target{}, fmt.Errorf("no event with uid %q (search the calendar for it first)", uid)
		case 1:
			name = cals[0]
		default:
			return Target{}, fmt.Errorf("event %q is in several calendars (%s): name the calendar", uid, strings.Join(cals, ", "))
		}
	}
	if name == "" {
		if len(ts) == 1 {
			for _, t := range ts {
				return t, nil
			}
		}
		var names []string
		for n, t := range ts {
			if !t.ReadOnly {
				names = append(names, n)
			}
		}
		return Target{}, fmt.Errorf("name the calendar to write to (writable: %s)", strings.Join(names, ", "))
	}
	t, ok := ts[name]
	if !ok {
		return Target{}, fmt.Errorf("no calendar %q", name)
	}
	if t.ReadOnly {
		return Target{}, fmt.Errorf("calendar %q: %w; writes to it are refused", name, calendar.ErrReadOnly)
	}
	return t, nil
}

func (w *Writer) when(field, v string) (time.Time, error) {
	t, err := calendar.ParseWhen(v, w.now(), w.loc)
	if err != nil {
		return t, fmt.Errorf("%s: %w", field, err)
	}
	return t, nil
}

// prepareCreate validates the arguments into Fields.
func (w *Writer) prepareCreate(a CreateArgs) (Fields, error) {
	var f Fields
	if strings.TrimSpace(a.Summary) == "" {
		return f, errors.New("summary is required")
	}
	for _, c := range []struct {
		n, v string
		ml   bool
	}{{"summary", a.Summary, false}, {"location", a.Location, false}, {"description", a.Description, true}, {"rrule", a.RRule, false}} {
		if err := checkText(c.n, c.v, c.ml); err != nil {
			return f, err
		}
	}
	start, err := w.when("start", a.Start)
	if err != nil {
		return f, err
	}
	var end time.Time
	switch {
	case a.End != "":
		if end, err = w.when("end", a.End); err != nil {
			return f, err
		}
	case a.Minutes > 0:
		end = start.Add(time.Duration(a.Minutes) * time.Minute)
	case a.AllDay:
		end = start.AddDate(0, 0, 1)
	default:
		end = start.Add(time.Hour)
	}
	if a.AllDay {
		y, m, d := start.In(w.loc).Date()
		start = time.Date(y, m, d, 0, 0, 0, 0, w.loc)
		y, m, d = end.In(w.loc).Date()
		end = time.Date(y, m, d, 0, 0, 0, 0, w.loc)
		if !end.After(start) {
			end = start.AddDate(0, 0, 1)
		}
	}
	if !end.After(start) {
		return f, errors.New("end must be after start")
	}
	if end.Sub(start) > maxSpan {
		return f, fmt.Errorf("an event may last at most %d days", int(maxSpan.Hours()/24))
	}
	if d := start.Sub(w.now()); d > maxAhead || d < -maxAhead {
		return f, errors.New("start is more than 20 years away")
	}
	if a.RRule != "" {
		rule, warn := cleanRule(a.RRule)
		if warn != "" {
			return f, errors.New(warn)
		}
		if _, _, err := (calendar.Series{Start: start, Rule: rule}).Expand(start, start.AddDate(1, 0, 0), 1); err != nil {
			return f, fmt.Errorf("rrule: %w", err)
		}
		f.RRule = rule
	}
	if len(a.Attendees) > maxAttendee {
		return f, fmt.Errorf("at most %d attendees", maxAttendee)
	}
	for _, at := range a.Attendees {
		addr, err := mail.ParseAddress(at)
		if err != nil || addr.Name != "" || strings.ContainsAny(at, " <>\"\r\n") {
			return f, fmt.Errorf("attendee %q is not a plain email address (resolve names with resolve_recipient)", at)
		}
		f.Attendees = append(f.Attendees, strings.ToLower(addr.Address))
	}
	f.Summary, f.Start, f.End, f.AllDay = &a.Summary, &start, &end, a.AllDay
	if a.Location != "" {
		f.Location = &a.Location
	}
	if a.Description != "" {
		f.Description = &a.Description
	}
	return f, nil
}

// cleanRule checks an RRULE the model wrote: only RFC 5545 parts.
func cleanRule(v string) (string, string) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "RRULE:")
	var keep []string
	for _, part := range strings.Split(v, ";") {
		k, _, ok := strings.Cut(part, "=")
		switch strings.ToUpper(k) {
		case "FREQ", "INTERVAL", "WKST", "COUNT", "UNTIL", "BYSETPOS", "BYMONTH", "BYMONTHDAY", "BYYEARDAY", "BYWEEKNO", "BYDAY", "BYHOUR", "BYMINUTE", "BYSECOND":
			if ok {
				keep = append(keep, strings.ToUpper(part))
				continue
			}
		}
		return "", fmt.Errorf("rrule part %q is not an RFC 5545 rule part", part).Error()
	}
	return strings.Join(keep, ";"), ""
}

// Create runs calendar_create.
func (w *Writer) Create(ctx context.Context, key string, a CreateArgs) (Op, error) {
	f, err := w.prepareCreate(a)
	if err != nil {
		return Op{}, err
	}
	t, err := w.target(ctx, a.Calendar, "")
	if err != nil {
		return Op{}, err
	}
	uid := newUID()
	data, err := buildNew(uid, f, w.loc, w.now())
	if err != nil {
		return Op{}, err
	}
	op, dup, err := w.begin(ctx, key, Op{Kind: KindCreate, Calendar: t.Name, UID: uid, Href: hrefFor(uid), Summary: a.Summary})
	if err != nil || dup {
		return op, err
	}
	etag, err := t.Backend.Create(ctx, op.Href, data)
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("creating the event: %w", err)
	}
	w.confirm(ctx, t, &op, etag, func(cal *ical.Calendar) error { return expectEvent(cal, uid, time.Time{}, f, w.loc) })
	return op, nil
}

func hrefFor(uid string) string {
	var b strings.Builder
	for _, r := range uid {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '@') {
			b.WriteRune(r)
		} else {
			b.WriteRune('_')
		}
	}
	return b.String() + ".ics"
}

// confirm reads the object back by href and checks it; the op becomes done
// with the ETag read, or unknown when the object does not show the write.
func (w *Writer) confirm(ctx context.Context, t Target, op *Op, etag string, check func(*ical.Calendar) error) {
	op.Checks++
	obj, err := t.Backend.Get(ctx, op.Href)
	if err == nil && etag != "" && obj.ETag != etag {
		err = fmt.Errorf("read back ETag %s, wrote %s", obj.ETag, etag)
	}
	if err == nil {
		var cal *ical.Calendar
		if cal, err = decode(obj.Data); err == nil {
			err = check(cal)
		}
	}
	if err != nil {
		w.finish(ctx, op, StateUnknown, etag, fmt.Errorf("confirmation: %w", err))
		return
	}
	w.finish(ctx, op, StateDone, obj.ETag, nil)
	w.resync(ctx, t)
}

// resync refreshes the target's index after a write, when it can.
func (w *Writer) resync(ctx context.Context, t Target) {
	if t.Resync == nil {
		return
	}
	if err := t.Resync(ctx); err != nil {
		w.log.Warn("calendarResync", "calendar", t.Name, "err", err)
	}
}

// expectEvent checks that cal holds uid (the instance override when
// instance is set) with the fields written.
func expectEvent(cal *ical.Calendar, uid string, instance time.Time, f Fields, loc *time.Location) error {
	master, ov, err := events(cal, uid, instance, loc)
	if err != nil {
		return err
	}
	ev := master
	if !instance.IsZero() {
		if ov == nil {
			return fmt.Errorf("no override for %s", instance.Format(time.RFC3339))
		}
		ev = ov
	}
	if f.Summary != nil {
		if s, _ := ev.Props.Text(ical.PropSummary); s != *f.Summary {
			return fmt.Errorf("summary reads back as %q", s)
		}
	}
	if f.Start != nil {
		p := ev.Props.Get(ical.PropDateTimeStart)
		if p == nil {
			return errors.New("no DTSTART")
		}
		if t, ok := propTime(p, loc, cal.Component); !ok || !sameStart(t, *f.Start, f.AllDay) {
			return fmt.Errorf("start reads back as %s", p.Value)
		}
	}
	return nil
}

func sameStart(a, b time.Time, allDay bool) bool {
	if allDay {
		ay, am, ad := a.Date()
		by, bm, bd := b.Date()
		return ay == by && am == bm && ad == bd
	}
	return a.Equal(b)
}

// load reads the object holding uid and parses it.
func (w *Writer) load(ctx context.Context, t Target, uid string) (Object, *ical.Calendar, error) {
	href, err := w.cal.FileOf(ctx, t.Name, uid)
	if err != nil {
		return Object{}, nil, fmt.Errorf("no event with uid %q in calendar %q: %w", uid, t.Name, err)
	}
	return w.read(ctx, t, href)
}

// read reads one object and parses it.
func (w *Writer) read(ctx context.Context, t Target, href string) (Object, *ical.Calendar, error) {
	obj, err := t.Backend.Get(ctx, href)
	if err != nil {
		return obj, nil, err
	}
	cal, err := decode(obj.Data)
	return obj, cal, err
}

// instanceTime parses an occurrence's original start and checks the rule
// produces it.
func (w *Writer) instanceTime(v string, master *ical.Component, cal *ical.Calendar) (time.Time, error) {
	t, err := w.when("instance", v)
	if err != nil {
		return t, err
	}
	evs, err := calendar.ParseICS(bytes.NewReader(mustEncode(cal)), w.loc)
	if err != nil {
		return t, err
	}
	uid := master.Props.Get(ical.PropUID).Value
	for _, e := range evs {
		if e.UID != uid || !e.RecurrenceID.IsZero() {
			continue
		}
		if !e.Recurring() {
			return t, errors.New("the event does not recur; update it without instance")
		}
		s := calendar.Series{Start: e.Start, Duration: e.End.Sub(e.Start), AllDay: e.AllDay, Rule: e.RRule, RDates: e.RDates}
		occ, _, err := s.Expand(t.Add(-time.Second), t.Add(time.Second), 2)
		if err != nil {
			return t, err
		}
		for _, o := range occ {
			if sameStart(o.Start, t, e.AllDay) {
				return o.Start, nil
			}
		}
	}
	return t, fmt.Errorf("instance %s %w (give the occurrence's original start)", v, errNotInstance)
}

func mustEncode(cal *ical.Calendar) []byte {
	b, err := encode(cal)
	if err != nil {
		return nil
	}
	return b
}

// Update runs calendar_update. With instance, only that occurrence of a
// recurring event changes: a RECURRENCE-ID override is written (or the
// existing one updated), RFC 5545 §3.8.4.4.
func (w *Writer) Update(ctx context.Context, key string, a UpdateArgs) (Op, error) {
	if strings.TrimSpace(a.UID) == "" {
		return Op{}, errors.New("uid is required")
	}
	for _, c := range []struct {
		n  string
		v  *string
		ml bool
	}{{"summary", a.Summary, false}, {"location", a.Location, false}, {"description", a.Description, true}} {
		if c.v != nil {
			if err := checkText(c.n, *c.v, c.ml); err != nil {
				return Op{}, err
			}
		}
	}
	if a.Summary != nil && strings.TrimSpace(*a.Summary) == "" {
		return Op{}, errors.New("summary cannot be emptied")
	}
	t, err := w.target(ctx, a.Calendar, a.UID)
	if err != nil {
		return Op{}, err
	}
	obj, cal, err := w.load(ctx, t, a.UID)
	if err != nil {
		return Op{}, err
	}
	var inst time.Time
	master, _, err := events(cal, a.UID, time.Time{}, w.loc)
	if err != nil {
		return Op{}, err
	}
	if a.Instance != "" {
		if inst, err = w.instanceTime(a.Instance, master, cal); err != nil {
			return Op{}, err
		}
	}
	master, ov, err := events(cal, a.UID, inst, w.loc)
	if err != nil {
		return Op{}, err
	}
	like := master.Props.Get(ical.PropDateTimeStart)
	allDay := like != nil && len(strings.TrimSpace(like.Value)) == 8
	// The current start/end of what is being changed, to move an event
	// keeping its length when only start is given.
	target := master
	if !inst.IsZero() {
		if ov == nil {
			ov = ical.NewComponent(ical.CompEvent)
			for name, ps := range master.Props {
				switch name {
				case ical.PropRecurrenceRule, ical.PropRecurrenceDates, ical.PropExceptionDates, ical.PropDateTimeStart, ical.PropDateTimeEnd, ical.PropDuration:
					continue
				}
				ov.Props[name] = append([]ical.Prop(nil), ps...)
			}
			dur := masterDuration(master, cal, w.loc)
			setTime(ov.Props, ical.PropRecurrenceID, inst, allDay, like, w.loc, cal.Component)
			setTime(ov.Props, ical.PropDateTimeStart, inst, allDay, like, w.loc, cal.Component)
			setTime(ov.Props, ical.PropDateTimeEnd, inst.Add(dur), allDay, like, w.loc, cal.Component)
			cal.Children = append(cal.Children, ov)
		}
		target = ov
	}
	var f Fields
	f.Summary, f.Location, f.Description, f.AllDay = a.Summary, a.Location, a.Description, allDay
	curStart, curEnd := componentSpan(target, cal, w.loc)
	if a.Start != "" {
		s, err := w.when("start", a.Start)
		if err != nil {
			return Op{}, err
		}
		e := s.Add(curEnd.Sub(curStart))
		f.Start, f.End = &s, &e
	}
	if a.End != "" {
		e, err := w.when("end", a.End)
		if err != nil {
			return Op{}, err
		}
		f.End = &e
	}
	if f.Start != nil || f.End != nil {
		s, e := curStart, curEnd
		if f.Start != nil {
			s = *f.Start
		}
		if f.End != nil {
			e = *f.End
		}
		if !e.After(s) || e.Sub(s) > maxSpan {
			return Op{}, errors.New("end must be after start, and an event may last at most 31 days")
		}
		f.Start, f.End = &s, &e
	}
	apply(target, f, like, w.loc, cal.Component)
	bumpSequence(target)
	stamp(target.Props, w.now())
	data, err := encode(cal)
	if err != nil {
		return Op{}, err
	}
	summary := ""
	if s, _ := target.Props.Text(ical.PropSummary); s != "" {
		summary = s
	}
	op, dup, err := w.begin(ctx, key, Op{Kind: KindUpdate, Calendar: t.Name, UID: a.UID, Href: obj.Href, Instance: timeString(inst), Summary: summary})
	if err != nil || dup {
		return op, err
	}
	etag, err := t.Backend.Update(ctx, obj.Href, data, obj.ETag)
	if err != nil {
		w.finish(ctx, &op, classify(err), "", err)
		return op, fmt.Errorf("updating the event: %w", err)
	}
	w.confirm(ctx, t, &op, etag, func(c *ical.Calendar) error { return expectEvent(c, a.UID, inst, f, w.loc) })
	return op, nil
}

func timeString(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

func componentSpan(c *ical.Component, cal *ical.Calendar, loc *time.Location) (time.Time, time.Time) {
	var s, e time.Time
	if p := c.Props.Get(ical.PropDateTimeStart); p != nil {
		s, _ = propTime(p, loc, cal.Component)
	}
	if p := c.Props.Get(ical.PropDateTimeEnd); p != nil {
		e, _ = propTime(p, loc, cal.Component)
	} else if p := c.Props.Get(ical.PropDuration); p != nil {
		d, _ := p.Duration()
		e = s.Add(d)
	} else {
		e = s
	}
	return s, e
}

func masterDuration(m *ical.Component, cal *ical.Calendar, loc *time.Location) time.Duration {
	s, e := componentSpan(m, cal, loc)
	return e.Sub(s)
}

// Delete runs calendar_delete: the whole event, or with instance one
// occurrence (an EXDATE on the master; an override of it is removed).
// Every file of the calendar holding a version of the event is reached: a
// collection may hold older versions in other files, which the index
// hides behind the newest (calendar/versions.go), and deleting only the
// shown one would bring the older one back in its place.
func (w *Writer) Delete(ctx context.Context, key string, a DeleteArgs) (Op, error) {
	if strings.TrimSpace(a.UID) == "" {
		return Op{}, errors.New("uid is required")
	}
	t, err := w.target(ctx, a.Calendar, a.UID)
	if err != nil {
		return Op{}, err
	}
	obj, cal, err := w.load(ctx, t, a.UID)
	if err != nil {
		return Op{}, err
	}
	master, _, err := events(cal, a.UID, time.Time{}, w.loc)
	if err != nil {
		return Op{}, err
	}
	summary, _ := master.Props.Text(ical.PropSummary)
	copies, err := w.cal.CopiesOf(ctx, t.Name, a.UID)
	if err != nil {
		return Op{}, err
	}
	if a.Instance == "" {
		return w.deleteEvent(ctx, key, t, a.UID, summary, obj, cal, copies)
	}
	inst, err := w.instanceTime(a.Instance, master, cal)
	if err != nil {
		return Op{}, err
	}
	return w.deleteOccurrence(ctx, key, t, a.UID, summary, obj, cal, master, inst, copies)
}

// deleteEvent deletes every file of the calendar holding a version of
// uid; obj (cal) is the one holding the shown master.
func (w *Writer) deleteEvent(ctx context.Context, key string, t Target, uid, summary string, obj Object, cal *ical.Calendar, copies []calendar.EventCopy) (Op, error) {
	if holdsOthers(cal, uid) {
		return Op{}, fmt.Errorf("the file %s holds other events too; refusing to delete it", obj.Href)
	}
	var others []Object
	for _, href := range otherFiles(copies, obj.Href, nil) {
		o, c, err := w.read(ctx, t, href)
		if errors.Is(err, ErrNotFound) {
			continue // gone since the last sync
		}
		if err != nil {
			return Op{}, fmt.Errorf("reading %s, which holds another version of the event: %w", href, err)
		}
		if !holdsUID(c, uid) {
			continue // changed since the last sync: nothing of the event left
		}
		if holdsOthers(c, uid) {
			return Op{}, fmt.Errorf("the file %s, which holds another version of the event, holds other events too; refusing to delete it", href)
		}
		others = append(others, o)
	}
	// The files holding only hidden versions go first, then those holding
	// a shown override, and the shown master's last: a failure part way
	// leaves the event as the user sees it, never an older version in its
	// place.
	shows := map[string]bool{}
	for _, c := range copies {
		shows[c.File] = shows[c.File] || !c.Superseded
	}
	slices.SortStableFunc(others, func(a, b Object) int { return cmp.Compare(b2i(shows[a.Href]), b2i(shows[b.Href])) })
	op := Op{Kind: KindDelete, Calendar: t.Name, UID: uid, Href: obj.Href, Summary: summary}
	for _, o := range others {
		op.Copies = append(op.Copies, o.Href)
	}
	op, dup, err := w.begin(ctx, key, op)
	if err != nil || dup {
		return op, err
	}
	for i, o := range append(others, obj) {
		if err := t.Backend.Delete(ctx, o.Href, o.ETag); err != nil {
			if i > 0 {
				err = fmt.Errorf("%w (%d of the %d copies of the event were removed before)", err, i, len(others)+1)
			}
			w.finish(ctx, &op, classify(err), "", err)
			if i > 0 {
				w.resync(ctx, t)
			}
			return op, fmt.Errorf("deleting the event: %w", err)
		}
	}
	op.Checks++
	for _, href := range append([]string{op.Href}, op.Copies...) {
		if _, err := t.Backend.Get(ctx, href); !errors.Is(err, ErrNotFound) {
			w.finish(ctx, &op, StateUnknown, "", fmt.Errorf("confirmation: %s is still there (%v)", href, err))
			return op, nil
		}
	}
	w.finish(ctx, &op, StateDone, "", nil)
	w.resync(ctx, t)
	return op, nil
}

// copyChange is one other file a delete of an occurrence changes: data is
// the file without the occurrence's override, nil when nothing else was
// left in it and the file is deleted.
type copyChange struct {
	obj  Object
	data []byte
}

// deleteOccurrence excludes the occurrence inst from the series (EXDATE
// on the shown master in obj, its override there removed) and removes the
// overrides of inst from the other files of the calendar: one left in
// another file would still show the occurrence, moved or not.
func (w *Writer) deleteOccurrence(ctx context.Context, key string, t Target, uid, summary string, obj Object, cal *ical.Calendar, master *ical.Component, inst time.Time, copies []calendar.EventCopy) (Op, error) {
	_, ov, _ := events(cal, uid, inst, w.loc)
	if ov != nil {
		kept := cal.Children[:0]
		for _, c := range cal.Children {
			if c != ov {
				kept = append(kept, c)
			}
		}
		cal.Children = kept
	}
	like := master.Props.Get(ical.PropDateTimeStart)
	ex := ical.Props{}
	setTime(ex, ical.PropExceptionDates, inst, like != nil && len(like.Value) == 8, like, w.loc, cal.Component)
	master.Props.Add(ex.Get(ical.PropExceptionDates))
	bumpSequence(master)
	stamp(master.Props, w.now())
	data, err := encode(cal)
	if err != nil {
		return Op{}, err
	}
	var changes []copyChange
	for _, href := range otherFiles(copies, obj.Href, func(c calendar.EventCopy) bool { return !c.RecurrenceID.IsZero() }) {
		o, c, err := w.read(ctx, t, href)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return Op{}, fmt.Errorf("reading %s, which holds another version of the event: %w", href, err)
		}
		removed := 0
		var kept []*ical.Component
		for _, ch := range c.Children {
			if isOverride(ch, c, uid, inst, w.loc) {
				removed++
				continue
			}
			kept = append(kept, ch)
		}
		if removed == 0 {
			continue // another occurrence's override
		}
		c.Children = kept
		if !holdsUID(c, "") {
			changes = append(changes, copyChange{obj: o})
			continue
		}
		b, err := encode(c)
		if err != nil {
			return Op{}, err
		}
		changes = append(changes, copyChange{obj: o, data: b})
	}
	// Hidden overrides go first, then the series' EXDATE (with the
	// override in its file), and the override shown, when another file
	// holds it, last: a failure part way leaves the occurrence as the
	// user sees it, never an older override in its place.
	shown := map[string]bool{}
	for _, c := range copies {
		if !c.Superseded && !c.RecurrenceID.IsZero() && sameStart(c.RecurrenceID, inst, c.AllDay) {
			shown[c.File] = true
		}
	}
	op := Op{Kind: KindDelete, Calendar: t.Name, UID: uid, Href: obj.Href, Instance: timeString(inst), Summary: summary}
	for _, ch := range changes {
		op.Copies = append(op.Copies, ch.obj.Href)
	}
	op, dup, err := w.begin(ctx, key, op)
	if err != nil || dup {
		return op, err
	}
	written := 0
	// fail records a write refused or lost; the backends' errors name the
	// object.
	fail := func(err error) (Op, error) {
		if written > 0 {
			err = fmt.Errorf("%w (%d of the %d files to change were changed before)", err, written, len(changes)+1)
		}
		w.finish(ctx, &op, classify(err), "", err)
		if written > 0 {
			w.resync(ctx, t)
		}
		return op, fmt.Errorf("deleting the occurrence: %w", err)
	}
	copiesShown := func(want bool) error {
		for _, ch := range changes {
			if shown[ch.obj.Href] != want {
				continue
			}
			var err error
			if ch.data == nil {
				err = t.Backend.Delete(ctx, ch.obj.Href, ch.obj.ETag)
			} else {
				_, err = t.Backend.Update(ctx, ch.obj.Href, ch.data, ch.obj.ETag)
			}
			if err != nil {
				return err
			}
			written++
		}
		return nil
	}
	if err := copiesShown(false); err != nil {
		return fail(err)
	}
	etag, err := t.Backend.Update(ctx, obj.Href, data, obj.ETag)
	if err != nil {
		return fail(err)
	}
	written++
	if err := copiesShown(true); err != nil {
		return fail(err)
	}
	// Read back: the other files first, then the series (confirm, which
	// counts the check and finishes the op).
	for _, ch := range changes {
		o, c, err := w.read(ctx, t, ch.obj.Href)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // the override is gone, with its file
		case ch.data == nil:
			err = fmt.Errorf("%s is still there (%v)", ch.obj.Href, err)
		case err == nil && overrideIn(c, uid, inst, w.loc):
			err = fmt.Errorf("%s still holds the occurrence", o.Href)
		}
		if err != nil {
			op.Checks++
			w.finish(ctx, &op, StateUnknown, "", fmt.Errorf("confirmation: %w", err))
			w.resync(ctx, t)
			return op, nil
		}
	}
	w.confirm(ctx, t, &op, etag, func(c *ical.Calendar) error {
		evs, err := calendar.ParseICS(bytes.NewReader(mustEncode(c)), w.loc)
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.UID == uid && e.RecurrenceID.IsZero() {
				occ, _, err := calendar.Series{Start: e.Start, Duration: e.End.Sub(e.Start), AllDay: e.AllDay, Rule: e.RRule, RDates: e.RDates, ExDates: e.ExDates}.
					Expand(inst.Add(-time.Second), inst.Add(time.Second), 2)
				if err == nil && len(occ) == 0 {
					return nil
				}
			}
		}
		return errors.New("the occurrence is still there")
	})
	return op, nil
}

// otherFiles lists, once each and by name, the files of copies (those
// keep accepts, all when nil) other than main.
func otherFiles(copies []calendar.EventCopy, main string, keep func(calendar.EventCopy) bool) []string {
	var out []string
	for _, c := range copies {
		if c.File != main && (keep == nil || keep(c)) && !slices.Contains(out, c.File) {
			out = append(out, c.File)
		}
	}
	slices.Sort(out)
	return out
}

// holdsOthers reports whether cal holds a component (event, to-do,
// journal) other than uid's; time zones belong to whatever uses them.
func holdsOthers(cal *ical.Calendar, uid string) bool {
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone {
			continue
		}
		if p := c.Props.Get(ical.PropUID); p == nil || p.Value != uid {
			return true
		}
	}
	return false
}

// holdsUID reports whether cal holds a component of uid, or any
// component but a time zone when uid is empty.
func holdsUID(cal *ical.Calendar, uid string) bool {
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone {
			continue
		}
		if p := c.Props.Get(ical.PropUID); uid == "" || (p != nil && p.Value == uid) {
			return true
		}
	}
	return false
}

// isOverride reports whether c is uid's override of the occurrence inst
// (RFC 5545 §3.8.4.4; a DATE RECURRENCE-ID names the day).
func isOverride(c *ical.Component, cal *ical.Calendar, uid string, inst time.Time, loc *time.Location) bool {
	if c.Name != ical.CompEvent {
		return false
	}
	if p := c.Props.Get(ical.PropUID); p == nil || p.Value != uid {
		return false
	}
	rid := c.Props.Get(ical.PropRecurrenceID)
	if rid == nil {
		return false
	}
	t, ok := propTime(rid, loc, cal.Component)
	return ok && sameStart(t, inst, len(strings.TrimSpace(rid.Value)) == 8)
}

// overrideIn reports whether cal holds uid's override of inst.
func overrideIn(cal *ical.Calendar, uid string, inst time.Time, loc *time.Location) bool {
	for _, c := range cal.Children {
		if isOverride(c, cal, uid, inst, loc) {
			return true
		}
	}
	return false
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// allGone reports whether none of hrefs is stored any more.
func allGone(ctx context.Context, t Target, hrefs []string) bool {
	for _, h := range hrefs {
		if _, err := t.Backend.Get(ctx, h); !errors.Is(err, ErrNotFound) {
			return false
		}
	}
	return true
}

// creates reports whether an op kind makes a new object (an event or a
// task).
func creates(kind string) bool { return kind == KindCreate || kind == KindTaskCreate }

// ConfirmPending re-checks ops left started or unknown (a crash or a
// timeout between write and confirmation) by reading the object back; it
// never writes again.
func (w *Writer) ConfirmPending(ctx context.Context, maxChecks int) (int, error) {
	ops, err := w.List(ctx, "", 500)
	if err != nil {
		return 0, err
	}
	ts, err := w.targets(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, op := range ops {
		if op.State != StateStarted && op.State != StateUnknown {
			continue
		}
		if op.CreatedAt.After(w.now().Add(-time.Minute)) {
			continue // may still be in flight
		}
		t, ok := ts[op.Calendar]
		if !ok {
			continue
		}
		op.Checks++
		obj, gerr := t.Backend.Get(ctx, op.Href)
		switch {
		case creates(op.Kind) && gerr == nil && bytes.Contains(obj.Data, []byte(op.UID)):
			w.finish(ctx, &op, StateDone, obj.ETag, nil)
		case op.Kind == KindDelete && op.Instance == "" && errors.Is(gerr, ErrNotFound) && allGone(ctx, t, op.Copies):
			w.finish(ctx, &op, StateDone, "", nil)
		case op.Kind == KindTaskDelete && taskGone(obj, gerr, op.UID):
			w.finish(ctx, &op, StateDone, obj.ETag, nil)
		case creates(op.Kind) && errors.Is(gerr, ErrNotFound):
			w.finish(ctx, &op, StateFailed, "", errors.New("confirmation: the event was never stored"))
		case op.Checks >= maxChecks:
			w.finish(ctx, &op, StateFailed, "", fmt.Errorf("unconfirmed after %d checks; look at the calendar", op.Checks))
		default:
			w.finish(ctx, &op, StateUnknown, op.ETag, gerr)
			continue
		}
		n++
	}
	return n, nil
}
