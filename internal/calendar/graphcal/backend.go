package graphcal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/calendar/calwrite"
	"github.com/hestia-dev/hestia/internal/msgraph"
)

// The Collection is calwrite's Backend for a Graph calendar: calwrite
// journals, builds the new iCalendar object and confirms by reading it
// back; this turns the object into Graph requests. Hrefs are the mirror's
// file names, mapped to Graph ids by the state file.
var _ calwrite.Backend = (*Collection)(nil)

// writeErr maps Graph's answer to calwrite's classes, which decide the
// journal state: a conflict, a missing event or a refusal means nothing
// was stored; anything else leaves the outcome unknown.
func writeErr(what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, msgraph.ErrConflict):
		return fmt.Errorf("%s: %w (%v)", what, calwrite.ErrConflict, err)
	case errors.Is(err, msgraph.ErrNotFound):
		return fmt.Errorf("%s: %w (%v)", what, calwrite.ErrNotFound, err)
	case errors.Is(err, msgraph.ErrRefused), errors.Is(err, msgraph.ErrThrottled):
		// A throttled write was not processed (429): nothing stored.
		return fmt.Errorf("%s: %v: %w", what, err, calwrite.ErrRefused)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func refused(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, calwrite.ErrRefused)...)
}

func normETag(e string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(e), "W/"), `"`)
}

// ref finds the Graph id behind a file name.
func (c *Collection) ref(href string) (fileRef, *state, error) {
	st := c.load()
	r, ok := st.Files[href]
	if !ok {
		return r, st, fmt.Errorf("%s: %w", href, calwrite.ErrNotFound)
	}
	return r, st, nil
}

// Get implements calwrite.Backend: the event as the server has it now
// (a series with its exceptions and, inside the window, its cancelled
// occurrences); the ETag is the event's (the master's) change key.
func (c *Collection) Get(ctx context.Context, href string) (calwrite.Object, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, _, err := c.ref(href)
	if err != nil {
		return calwrite.Object{}, err
	}
	data, ev, err := c.current(ctx, r.ID)
	if err != nil {
		return calwrite.Object{}, writeErr("reading the event", err)
	}
	return calwrite.Object{Href: href, ETag: ev.ETag, Data: data}, nil
}

// current reads an event and, for a series, its instances in the window,
// and builds its iCalendar object.
func (c *Collection) current(ctx context.Context, id string) ([]byte, *Event, error) {
	ev, err := c.fetchEvent(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if ev.Recurrence == nil {
		data, _, err := Object(ev, nil, nil)
		return data, ev, err
	}
	from, to := Window(c.now())
	insts, err := c.instances(ctx, id, from, to)
	if err != nil {
		return nil, nil, err
	}
	var members []entry
	for _, x := range insts {
		members = append(members, x.entry)
	}
	data, _, err := c.seriesObject(ev, members)
	return data, ev, err
}

type instance struct {
	entry
	id, etag string
}

// instances lists a series' occurrences and exceptions in [from, to).
func (c *Collection) instances(ctx context.Context, master string, from, to time.Time) ([]instance, error) {
	ref := "/me/events/" + msgraph.Quote(master) + "/instances?startDateTime=" + from.UTC().Format(time.RFC3339) +
		"&endDateTime=" + to.UTC().Format(time.RFC3339)
	var out []instance
	err := c.Client.List(ctx, ref, msgraph.Prefer(c.PageSize), func(items []json.RawMessage) error {
		for _, raw := range items {
			var x Event
			if json.Unmarshal(raw, &x) != nil || x.ID == "" {
				continue
			}
			e := entry{Type: x.Type, Master: master, OriginalStart: x.OriginalStart, ChangeKey: x.ChangeKey}
			if e.OriginalStart == "" {
				e.Start = x.Start
			}
			if x.Type == "exception" {
				e.Raw = raw
			}
			out = append(out, instance{entry: e, id: x.ID, etag: x.ETag})
		}
		return nil
	})
	return out, err
}

// findInstance finds the occurrence or exception of master whose
// original start is orig (a date for an all-day series).
func (c *Collection) findInstance(ctx context.Context, master *Event, orig time.Time, allDay bool) (instance, error) {
	zone, _ := eventZone(master)
	want := calendarKey(orig, allDay)
	insts, err := c.instances(ctx, master.ID, orig.Add(-48*time.Hour), orig.Add(48*time.Hour))
	if err != nil {
		return instance{}, err
	}
	for _, x := range insts {
		if key, ok := memberKey(x.entry, allDay, zone); ok && key == want {
			return x, nil
		}
	}
	return instance{}, fmt.Errorf("no occurrence of the series at %s: %w", want, calwrite.ErrNotFound)
}

// calendarKey is occurrenceKey for a time the calendar package parsed: a
// DATE is read in its own (floating) location.
func calendarKey(t time.Time, allDay bool) string {
	if allDay {
		return t.Format("2006-01-02")
	}
	return t.UTC().Format(time.RFC3339)
}

func (c *Collection) parse(data []byte) (master *calendar.Event, overrides []calendar.Event, err error) {
	evs, err := calendar.ParseICS(bytes.NewReader(data), c.floating())
	if err != nil {
		return nil, nil, refused("reading the event to write: %v", err)
	}
	if len(evs) == 0 {
		return nil, nil, refused("a Microsoft 365 calendar holds events only (to-dos live in Microsoft To Do)")
	}
	for i := range evs {
		if evs[i].RecurrenceID.IsZero() {
			if master != nil {
				return nil, nil, refused("one object may hold one event")
			}
			master = &evs[i]
		}
	}
	if master == nil {
		return nil, nil, refused("the object holds no master event")
	}
	for _, e := range evs {
		if !e.RecurrenceID.IsZero() {
			if e.UID != master.UID {
				return nil, nil, refused("one object may hold one event")
			}
			overrides = append(overrides, e)
		}
	}
	return master, overrides, nil
}

// Create implements calwrite.Backend: POST to the calendar, with the
// event's UID as transactionId, so that Graph answers a repeated create
// with the first event instead of a copy, and the mirror names the event
// by the UID the journal knows.
func (c *Collection) Create(ctx context.Context, href string, data []byte) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.load()
	if _, ok := st.Files[href]; ok {
		return "", fmt.Errorf("%s: %w", href, calwrite.ErrConflict)
	}
	if !c.Calendar.CanEdit {
		return "", refused("calendar %s is read-only at Microsoft 365", c.Calendar.Name)
	}
	master, overrides, err := c.parse(data)
	if err != nil {
		return "", err
	}
	if len(overrides) > 0 {
		return "", refused("a new event cannot carry changed occurrences")
	}
	body, err := c.graphFields(nil, master)
	if err != nil {
		return "", err
	}
	body["transactionId"] = master.UID
	if len(master.Attendees) > 0 {
		var as []map[string]any
		for _, a := range master.Attendees {
			as = append(as, map[string]any{"type": "required", "emailAddress": map[string]string{"address": a.Email, "name": a.Name}})
		}
		body["attendees"] = as
	}
	if master.RRule != "" {
		rec, err := graphRecurrence(master.RRule, master.Start, master.AllDay, zoneName(master.Start.Location(), master.Start))
		if err != nil {
			return "", err
		}
		body["recurrence"] = rec
	}
	b, _ := json.Marshal(body)
	resp, err := c.Client.Do(ctx, http.MethodPost, "/me/calendars/"+msgraph.Quote(c.Calendar.ID)+"/events", b, msgraph.Prefer(0))
	if err != nil {
		return "", writeErr("creating the event", err)
	}
	var ev Event
	if err := json.Unmarshal(resp.Body, &ev); err != nil || ev.ID == "" {
		return "", fmt.Errorf("creating the event: an answer without an event id (%v)", err)
	}
	st.Files[href] = fileRef{ID: ev.ID, ETag: ev.ETag, Local: true, Created: c.now()}
	if err := c.save(st); err != nil {
		return "", fmt.Errorf("recording the new event: %w", err)
	}
	return ev.ETag, nil
}

// Update implements calwrite.Backend. calwrite sends the whole object; the
// difference with the server's current one becomes Graph requests: the
// master's changed fields as one PATCH with If-Match, a new EXDATE as the
// DELETE of that occurrence, a new or changed RECURRENCE-ID override as a
// PATCH of that occurrence (Graph makes it an exception). Changing the
// recurrence itself is refused. The ETag is the master's change key.
func (c *Collection) Update(ctx context.Context, href string, data []byte, etag string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, _, err := c.ref(href)
	if err != nil {
		return "", err
	}
	if !c.Calendar.CanEdit {
		return "", refused("calendar %s is read-only at Microsoft 365", c.Calendar.Name)
	}
	cur, ev, err := c.current(ctx, r.ID)
	if err != nil {
		return "", writeErr("reading the event", err)
	}
	if normETag(ev.ETag) != normETag(etag) {
		return "", fmt.Errorf("%s: %w", href, calwrite.ErrConflict)
	}
	oldM, oldOv, err := c.parse(cur)
	if err != nil {
		return "", err
	}
	newM, newOv, err := c.parse(data)
	if err != nil {
		return "", err
	}
	if oldM.RRule != newM.RRule || len(newM.RDates) != len(oldM.RDates) {
		return "", refused("changing a series' recurrence is not supported for Microsoft 365 calendars")
	}
	changed := false
	if patch, err := c.graphFields(oldM, newM); err != nil {
		return "", err
	} else if len(patch) > 0 {
		b, _ := json.Marshal(patch)
		hdr := msgraph.Prefer(0)
		hdr.Set("If-Match", etag)
		if _, err := c.Client.Do(ctx, http.MethodPatch, "/me/events/"+msgraph.Quote(r.ID), b, hdr); err != nil {
			return "", writeErr("updating the event", err)
		}
		changed = true
	}
	oldEx := map[string]bool{}
	for _, t := range oldM.ExDates {
		oldEx[calendarKey(t, oldM.AllDay)] = true
	}
	for _, t := range newM.ExDates {
		if oldEx[calendarKey(t, newM.AllDay)] {
			continue
		}
		x, err := c.findInstance(ctx, ev, t, newM.AllDay)
		if errors.Is(err, calwrite.ErrNotFound) {
			continue // already gone
		}
		if err != nil {
			return "", writeErr("finding the occurrence", err)
		}
		hdr := http.Header{"If-Match": {x.etag}}
		if _, err := c.Client.Do(ctx, http.MethodDelete, "/me/events/"+msgraph.Quote(x.id), nil, hdr); err != nil {
			return "", writeErr("cancelling the occurrence", err)
		}
		changed = true
	}
	oldByKey := map[string]*calendar.Event{}
	for i := range oldOv {
		oldByKey[calendarKey(oldOv[i].RecurrenceID, oldM.AllDay)] = &oldOv[i]
	}
	for i := range newOv {
		ov := &newOv[i]
		key := calendarKey(ov.RecurrenceID, newM.AllDay)
		base := oldByKey[key]
		if base == nil {
			// A new override: compared with the occurrence as the series
			// makes it.
			b := *oldM
			b.Start, b.End = ov.RecurrenceID, ov.RecurrenceID.Add(oldM.End.Sub(oldM.Start))
			base = &b
		}
		patch, err := c.graphFields(base, ov)
		if err != nil {
			return "", err
		}
		if len(patch) == 0 {
			continue
		}
		x, err := c.findInstance(ctx, ev, ov.RecurrenceID, newM.AllDay)
		if err != nil {
			return "", writeErr("finding the occurrence", err)
		}
		b, _ := json.Marshal(patch)
		hdr := msgraph.Prefer(0)
		hdr.Set("If-Match", x.etag)
		if _, err := c.Client.Do(ctx, http.MethodPatch, "/me/events/"+msgraph.Quote(x.id), b, hdr); err != nil {
			return "", writeErr("updating the occurrence", err)
		}
		changed = true
	}
	if !changed {
		return ev.ETag, nil
	}
	after, err := c.fetchEvent(ctx, r.ID)
	if err != nil {
		return "", nil // written; the confirmation reads it back
	}
	return after.ETag, nil
}

// Delete implements calwrite.Backend (DELETE with If-Match).
func (c *Collection) Delete(ctx context.Context, href, etag string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, _, err := c.ref(href)
	if err != nil {
		return err
	}
	if !c.Calendar.CanEdit {
		return refused("calendar %s is read-only at Microsoft 365", c.Calendar.Name)
	}
	hdr := http.Header{}
	if etag != "" {
		hdr.Set("If-Match", etag)
	}
	_, err = c.Client.Do(ctx, http.MethodDelete, "/me/events/"+msgraph.Quote(r.ID), nil, hdr)
	return writeErr("deleting the event", err)
}

// graphFields are the event fields of next that differ from prev (all of
// them when prev is nil), as Graph JSON.
func (c *Collection) graphFields(prev, next *calendar.Event) (map[string]any, error) {
	m := map[string]any{}
	if prev == nil || prev.Summary != next.Summary {
		m["subject"] = next.Summary
	}
	if prev == nil && next.Description != "" || prev != nil && prev.Description != next.Description {
		m["body"] = map[string]string{"contentType": "text", "content": next.Description}
	}
	if prev == nil && next.Location != "" || prev != nil && prev.Location != next.Location {
		m["location"] = map[string]string{"displayName": next.Location}
	}
	if prev == nil || !prev.Start.Equal(next.Start) || !prev.End.Equal(next.End) || prev.AllDay != next.AllDay {
		zone := zoneName(next.Start.Location(), next.Start)
		if next.AllDay {
			zone = zoneName(c.floating(), next.Start)
			m["isAllDay"] = true
			m["start"] = map[string]string{"dateTime": next.Start.Format("2006-01-02") + "T00:00:00", "timeZone": zone}
			end := next.End
			if !end.After(next.Start) {
				end = next.Start.AddDate(0, 0, 1)
			}
			m["end"] = map[string]string{"dateTime": end.Format("2006-01-02") + "T00:00:00", "timeZone": zone}
		} else {
			if prev != nil && prev.AllDay {
				m["isAllDay"] = false
			}
			loc := zoneLocation(next.Start.Location())
			m["start"] = map[string]string{"dateTime": next.Start.In(loc).Format("2006-01-02T15:04:05"), "timeZone": zone}
			m["end"] = map[string]string{"dateTime": next.End.In(loc).Format("2006-01-02T15:04:05"), "timeZone": zone}
		}
	}
	return m, nil
}

// zoneName is the name Graph is given for a zone: its Windows name.
// Create and update take Windows names and only a short list of IANA
// ones, so a zone the CLDR table does not name (Europe/Rome) is sent as a
// Windows zone with the same offsets and switches (W. Europe's rules);
// when none has them, UTC, with the times converted.
func zoneName(loc *time.Location, at time.Time) string {
	loc = zoneLocation(loc)
	name := loc.String()
	if loc == time.UTC || name == "UTC" {
		return "UTC"
	}
	var wins []string
	for win, iana := range windowsZones {
		if iana == name {
			return win
		}
		wins = append(wins, win)
	}
	sort.Strings(wins)
	for _, win := range wins {
		if cand, ok := Zone(win); ok && sameRules(loc, cand, at) {
			return win
		}
	}
	return "UTC"
}

// sameRules reports whether two zones have the same offsets, twice a
// day, from two years before at to five after (the span a series written
// now lives in).
func sameRules(a, b *time.Location, at time.Time) bool {
	start := time.Date(at.Year()-2, 1, 1, 0, 0, 0, 0, time.UTC)
	// Two probes first: most candidates differ in winter or summer.
	for _, probe := range []time.Time{start.AddDate(2, 0, 14), start.AddDate(2, 6, 14)} {
		_, x := probe.In(a).Zone()
		_, y := probe.In(b).Zone()
		if x != y {
			return false
		}
	}
	for t := start; t.Before(start.AddDate(7, 0, 0)); t = t.Add(12 * time.Hour) {
		_, x := t.In(a).Zone()
		_, y := t.In(b).Zone()
		if x != y {
			return false
		}
	}
	return true
}

// zoneLocation is loc, or UTC when loc has no IANA name (time.Local, a
// fixed offset): times are then sent in UTC, never mislabelled.
func zoneLocation(loc *time.Location) *time.Location {
	if loc == nil {
		return time.UTC
	}
	if _, err := time.LoadLocation(loc.String()); err != nil || loc.String() == "Local" {
		return time.UTC
	}
	return loc
}

var graphDays = map[string]string{"SU": "sunday", "MO": "monday", "TU": "tuesday", "WE": "wednesday", "TH": "thursday", "FR": "friday", "SA": "saturday"}

var graphIndex = map[int]string{1: "first", 2: "second", 3: "third", 4: "fourth", -1: "last"}

// graphRecurrence writes an RRULE (RFC 5545 §3.3.10) as Graph's
// patternedRecurrence, for the rules Outlook can hold: daily, weekly on
// days, monthly or yearly on a day of the month or the n-th weekday, with
// an interval, and an end date or a count. Anything else is refused
// rather than approximated.
func graphRecurrence(rule string, start time.Time, allDay bool, zone string) (map[string]any, error) {
	parts := map[string]string{}
	for _, p := range strings.Split(strings.TrimPrefix(rule, "RRULE:"), ";") {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return nil, refused("rrule part %q", p)
		}
		parts[strings.ToUpper(k)] = strings.ToUpper(v)
	}
	pattern := map[string]any{}
	interval := 1
	if v, ok := parts["INTERVAL"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 99 {
			return nil, refused("rrule INTERVAL %q", v)
		}
		interval = n
	}
	pattern["interval"] = interval
	if w, ok := parts["WKST"]; ok {
		if d, ok := graphDays[w]; ok {
			pattern["firstDayOfWeek"] = d
		}
	}
	// days reads BYDAY: plain days, or one ordinal shared by all
	// ("2TU", "-1FR") which becomes the index.
	days := func() ([]string, int, error) {
		var out []string
		ord := 0
		for _, d := range strings.Split(parts["BYDAY"], ",") {
			code := d[max(0, len(d)-2):]
			name, ok := graphDays[code]
			if !ok {
				return nil, 0, refused("rrule BYDAY %q", d)
			}
			if n := d[:len(d)-2]; n != "" {
				v, err := strconv.Atoi(n)
				if err != nil || (ord != 0 && v != ord) {
					return nil, 0, refused("rrule BYDAY %q cannot be expressed at Microsoft 365", parts["BYDAY"])
				}
				ord = v
			}
			out = append(out, name)
		}
		if p, ok := parts["BYSETPOS"]; ok {
			v, err := strconv.Atoi(p)
			if err != nil || ord != 0 {
				return nil, 0, refused("rrule BYSETPOS %q", p)
			}
			ord = v
		}
		return out, ord, nil
	}
	setRelative := func(kind string) error {
		ds, ord, err := days()
		if err != nil {
			return err
		}
		idx, ok := graphIndex[ord]
		if !ok {
			return refused("rrule position %d cannot be expressed at Microsoft 365", ord)
		}
		pattern["type"], pattern["daysOfWeek"], pattern["index"] = kind, ds, idx
		return nil
	}
	dayOfMonth := func() (int, error) {
		v, ok := parts["BYMONTHDAY"]
		if !ok {
			return start.Day(), nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 31 {
			return 0, refused("rrule BYMONTHDAY %q", v)
		}
		return n, nil
	}
	known := map[string]bool{"FREQ": true, "INTERVAL": true, "WKST": true, "COUNT": true, "UNTIL": true}
	switch parts["FREQ"] {
	case "DAILY":
		pattern["type"] = "daily"
	case "WEEKLY":
		known["BYDAY"] = true
		ds := []string{strings.ToLower(start.Weekday().String())}
		if _, ok := parts["BYDAY"]; ok {
			var ord int
			var err error
			if ds, ord, err = days(); err != nil || ord != 0 {
				return nil, refused("rrule BYDAY %q for a weekly rule", parts["BYDAY"])
			}
		}
		pattern["type"], pattern["daysOfWeek"] = "weekly", ds
	case "MONTHLY", "YEARLY":
		known["BYDAY"], known["BYSETPOS"], known["BYMONTHDAY"], known["BYMONTH"] = true, true, true, true
		yearly := parts["FREQ"] == "YEARLY"
		if yearly {
			month := int(start.Month())
			if v, ok := parts["BYMONTH"]; ok {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > 12 {
					return nil, refused("rrule BYMONTH %q", v)
				}
				month = n
			}
			pattern["month"] = month
		} else if _, ok := parts["BYMONTH"]; ok {
			return nil, refused("rrule BYMONTH in a monthly rule cannot be expressed at Microsoft 365")
		}
		if _, ok := parts["BYDAY"]; ok {
			kind := "relativeMonthly"
			if yearly {
				kind = "relativeYearly"
			}
			if err := setRelative(kind); err != nil {
				return nil, err
			}
		} else {
			d, err := dayOfMonth()
			if err != nil {
				return nil, err
			}
			pattern["type"], pattern["dayOfMonth"] = "absoluteMonthly", d
			if yearly {
				pattern["type"] = "absoluteYearly"
			}
		}
	default:
		return nil, refused("rrule FREQ %q cannot be expressed at Microsoft 365", parts["FREQ"])
	}
	for k := range parts {
		if !known[k] {
			return nil, refused("rrule part %s cannot be expressed at Microsoft 365", k)
		}
	}
	rng := map[string]any{"type": "noEnd", "startDate": start.Format("2006-01-02"), "recurrenceTimeZone": zone}
	if v, ok := parts["COUNT"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, refused("rrule COUNT %q", v)
		}
		rng["type"], rng["numberOfOccurrences"] = "numbered", n
	}
	if v, ok := parts["UNTIL"]; ok {
		var until time.Time
		var err error
		if len(v) == 8 {
			until, err = time.Parse("20060102", v)
		} else {
			until, err = time.Parse("20060102T150405Z", v)
			if err == nil && !allDay {
				until = until.In(start.Location())
			}
		}
		if err != nil {
			return nil, refused("rrule UNTIL %q", v)
		}
		rng["type"], rng["endDate"] = "endDate", until.Format("2006-01-02")
	}
	return map[string]any{"pattern": pattern, "range": rng}, nil
}
