package graphcal

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/emersion/go-ical"

	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// Event is the part of a Graph event (resource type microsoft.graph.event)
// the mirror reads.
type Event struct {
	ID                         string            `json:"id"`
	ICalUID                    string            `json:"iCalUId"`
	TransactionID              string            `json:"transactionId"`
	Type                       string            `json:"type"` // singleInstance, occurrence, exception, seriesMaster
	SeriesMasterID             string            `json:"seriesMasterId"`
	OriginalStart              string            `json:"originalStart"`
	ChangeKey                  string            `json:"changeKey"`
	ETag                       string            `json:"@odata.etag"`
	Subject                    string            `json:"subject"`
	Body                       *ItemBody         `json:"body"`
	BodyPreview                string            `json:"bodyPreview"`
	Start                      *DateTimeTimeZone `json:"start"`
	End                        *DateTimeTimeZone `json:"end"`
	OriginalStartTimeZone      string            `json:"originalStartTimeZone"`
	OriginalEndTimeZone        string            `json:"originalEndTimeZone"`
	IsAllDay                   bool              `json:"isAllDay"`
	IsCancelled                bool              `json:"isCancelled"`
	ShowAs                     string            `json:"showAs"`
	Sensitivity                string            `json:"sensitivity"`
	IsReminderOn               bool              `json:"isReminderOn"`
	ReminderMinutesBeforeStart int               `json:"reminderMinutesBeforeStart"`
	Location                   *Location         `json:"location"`
	Locations                  []Location        `json:"locations"`
	Attendees                  []Attendee        `json:"attendees"`
	Organizer                  *Recipient        `json:"organizer"`
	Recurrence                 *Recurrence       `json:"recurrence"`
	Categories                 []string          `json:"categories"`
	OnlineMeeting              *struct {
		JoinURL string `json:"joinUrl"`
	} `json:"onlineMeeting"`
	CreatedDateTime      string `json:"createdDateTime"`
	LastModifiedDateTime string `json:"lastModifiedDateTime"`
}

// DateTimeTimeZone is a local date-time and the zone it is in.
type DateTimeTimeZone struct {
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

// ItemBody is an event's body.
type ItemBody struct {
	ContentType string `json:"contentType"`
	Content     string `json:"content"`
}

// Location is a place.
type Location struct {
	DisplayName string `json:"displayName"`
}

// EmailAddress is a name and an address.
type EmailAddress struct {
	Name    string `json:"name"`
	Address string `json:"address"`
}

// Recipient is an organizer.
type Recipient struct {
	EmailAddress EmailAddress `json:"emailAddress"`
}

// Attendee is one attendee and their answer.
type Attendee struct {
	Type   string `json:"type"`
	Status *struct {
		Response string `json:"response"`
	} `json:"status"`
	EmailAddress EmailAddress `json:"emailAddress"`
}

// Recurrence is Graph's patternedRecurrence.
type Recurrence struct {
	Pattern struct {
		Type           string   `json:"type"`
		Interval       int      `json:"interval"`
		Month          int      `json:"month"`
		DayOfMonth     int      `json:"dayOfMonth"`
		DaysOfWeek     []string `json:"daysOfWeek"`
		FirstDayOfWeek string   `json:"firstDayOfWeek"`
		Index          string   `json:"index"`
	} `json:"pattern"`
	Range struct {
		Type                string `json:"type"`
		StartDate           string `json:"startDate"`
		EndDate             string `json:"endDate"`
		NumberOfOccurrences int    `json:"numberOfOccurrences"`
		RecurrenceTimeZone  string `json:"recurrenceTimeZone"`
	} `json:"range"`
}

// ErrMalformed marks a Graph event that cannot be turned into iCalendar.
var ErrMalformed = errors.New("malformed Graph event")

const prodID = "-//Hestia//Microsoft Graph mirror//EN"

// UID is the iCalendar UID of a Graph event: the UID Hestia gave an event
// it created (kept by Graph as the event's transactionId, the create's
// idempotency key), else Graph's iCalUId, else one made from the id.
func UID(ev *Event) string {
	if strings.HasSuffix(ev.TransactionID, "@hestia") {
		return ev.TransactionID
	}
	if ev.ICalUID != "" {
		return ev.ICalUID
	}
	return "graph-" + ev.ID
}

// eventZone is the zone an event lives in (its times and its recurrence):
// the zone it was created in, else its recurrence's. An unknown or custom
// one leaves the times in UTC, with a warning. Without either, the zone
// its start is written in (UTC when the request asked for UTC).
func eventZone(ev *Event) (*time.Location, string) {
	names := []string{ev.OriginalStartTimeZone}
	if ev.Recurrence != nil {
		names = append(names, ev.Recurrence.Range.RecurrenceTimeZone)
	}
	unknown := ""
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			continue
		}
		if loc, ok := Zone(n); ok {
			return loc, ""
		}
		if unknown == "" {
			unknown = n
		}
	}
	if unknown != "" {
		return time.UTC, fmt.Sprintf("unknown time zone %q: times kept in UTC", unknown)
	}
	if ev.Start != nil {
		if loc, ok := Zone(ev.Start.TimeZone); ok {
			return loc, ""
		}
	}
	return time.UTC, ""
}

// instant reads a dateTimeTimeZone as an instant.
func instant(d *DateTimeTimeZone) (time.Time, error) {
	if d == nil || d.DateTime == "" {
		return time.Time{}, fmt.Errorf("%w: no date-time", ErrMalformed)
	}
	loc, ok := Zone(d.TimeZone)
	if !ok && d.TimeZone != "" {
		return time.Time{}, fmt.Errorf("%w: unknown time zone %q", ErrMalformed, d.TimeZone)
	}
	t, err := parseLocal(d.DateTime, loc)
	if err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// parseLocal reads Graph's "2006-01-02T15:04:05.0000000" (fraction and
// an offset optional) in loc.
func parseLocal(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			if t.Year() < 1 || t.Year() > 9999 {
				break
			}
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: date-time %q", ErrMalformed, s)
}

// civilDate is the date part of a dateTime (all-day events are dates,
// whatever zone they are labelled with).
func civilDate(d *DateTimeTimeZone) (time.Time, error) {
	if d == nil || len(d.DateTime) < 10 {
		return time.Time{}, fmt.Errorf("%w: no date", ErrMalformed)
	}
	t, err := time.Parse("2006-01-02", d.DateTime[:10])
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: date %q", ErrMalformed, d.DateTime)
	}
	return t, nil
}

// parseOffset reads originalStart, an Edm.DateTimeOffset.
func parseOffset(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.9999999", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: originalStart %q", ErrMalformed, s)
}

// span is an event's start and end as written to iCalendar.
type span struct {
	start, end time.Time // in zone; dates (UTC midnight) when allDay
	allDay     bool
}

func eventSpan(ev *Event, zone *time.Location) (span, error) {
	if ev.IsAllDay {
		s, err := civilDate(ev.Start)
		if err != nil {
			return span{}, err
		}
		e, err := civilDate(ev.End)
		if err != nil || !e.After(s) {
			e = s.AddDate(0, 0, 1)
		}
		return span{start: s, end: e, allDay: true}, nil
	}
	s, err := instant(ev.Start)
	if err != nil {
		return span{}, err
	}
	e, err := instant(ev.End)
	if err != nil || e.Before(s) {
		e = s
	}
	return span{start: s.In(zone), end: e.In(zone)}, nil
}

// setWhen writes a DATE, a UTC DATE-TIME or a local one with the zone's
// IANA name as TZID (the index resolves IANA TZIDs without a VTIMEZONE).
func setWhen(props ical.Props, name string, t time.Time, allDay bool) {
	p := ical.NewProp(name)
	switch {
	case allDay:
		p.SetDate(t)
	case t.Location() == time.UTC:
		p.SetDateTime(t.UTC())
	default:
		p.SetDateTime(t)
	}
	props.Set(p)
}

// Object is the iCalendar object (RFC 5545) of one Graph event: a single
// event, or a series master with its exceptions as RECURRENCE-ID
// overrides and its cancelled occurrences as EXDATEs. An exception that
// cannot be read is left out and named in the warnings; a master that
// cannot be read is an error wrapping ErrMalformed.
func Object(master *Event, exceptions []*Event, cancelled []time.Time) ([]byte, []string, error) {
	zone, warn := eventZone(master)
	var warnings []string
	if warn != "" {
		warnings = append(warnings, warn)
	}
	cal := ical.NewCalendar()
	cal.Props.SetText(ical.PropProductID, prodID)
	cal.Props.SetText(ical.PropVersion, "2.0")
	uid := UID(master)
	m, sp, err := component(master, uid, zone)
	if err != nil {
		return nil, warnings, err
	}
	if master.Recurrence != nil {
		rule, err := rrule(master.Recurrence, sp, zone)
		if err != nil {
			return nil, warnings, err
		}
		m.Props.Set(&ical.Prop{Name: ical.PropRecurrenceRule, Params: ical.Params{}, Value: rule})
		seen := map[int64]bool{}
		sort.Slice(cancelled, func(i, j int) bool { return cancelled[i].Before(cancelled[j]) })
		for _, c := range cancelled {
			t := recurrenceTime(c, sp, zone)
			if seen[t.Unix()] {
				continue
			}
			seen[t.Unix()] = true
			ex := ical.Props{}
			setWhen(ex, ical.PropExceptionDates, t, sp.allDay)
			m.Props.Add(ex.Get(ical.PropExceptionDates))
		}
	}
	cal.Children = append(cal.Children, m)
	sort.Slice(exceptions, func(i, j int) bool { return exceptions[i].OriginalStart < exceptions[j].OriginalStart })
	for _, x := range exceptions {
		c, err := overrideComponent(x, uid, sp, zone)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("exception %s left out: %v", x.ID, err))
			continue
		}
		cal.Children = append(cal.Children, c)
	}
	var b bytes.Buffer
	if err := ical.NewEncoder(&b).Encode(cal); err != nil {
		return nil, warnings, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return b.Bytes(), warnings, nil
}

// recurrenceTime is an original start as the series writes its times: a
// date for an all-day series (the date in the series' zone), else the
// instant in the series' zone.
func recurrenceTime(t time.Time, sp span, zone *time.Location) time.Time {
	if sp.allDay {
		y, m, d := t.In(zone).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return t.In(zone)
}

func overrideComponent(x *Event, uid string, master span, zone *time.Location) (*ical.Component, error) {
	if x.OriginalStart == "" {
		return nil, fmt.Errorf("%w: an exception without originalStart", ErrMalformed)
	}
	os, err := parseOffset(x.OriginalStart)
	if err != nil {
		return nil, err
	}
	c, _, err := component(x, uid, zone)
	if err != nil {
		return nil, err
	}
	setWhen(c.Props, ical.PropRecurrenceID, recurrenceTime(os, master, zone), master.allDay)
	return c, nil
}

// component builds the VEVENT of one Graph event (master, single or
// exception) in zone.
func component(ev *Event, uid string, zone *time.Location) (*ical.Component, span, error) {
	sp, err := eventSpan(ev, zone)
	if err != nil {
		return nil, sp, err
	}
	c := ical.NewComponent(ical.CompEvent)
	c.Props.SetText(ical.PropUID, clean(uid, false))
	stamp := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{ev.LastModifiedDateTime, ev.CreatedDateTime} {
		if t, err := parseOffset(s); err == nil && s != "" {
			stamp = t.UTC()
			break
		}
	}
	c.Props.SetDateTime(ical.PropDateTimeStamp, stamp)
	if ev.LastModifiedDateTime != "" {
		if t, err := parseOffset(ev.LastModifiedDateTime); err == nil {
			c.Props.SetDateTime(ical.PropLastModified, t.UTC())
		}
	}
	setWhen(c.Props, ical.PropDateTimeStart, sp.start, sp.allDay)
	setWhen(c.Props, ical.PropDateTimeEnd, sp.end, sp.allDay)
	if s := clean(ev.Subject, false); s != "" {
		c.Props.SetText(ical.PropSummary, s)
	}
	if d := description(ev); d != "" {
		c.Props.SetText(ical.PropDescription, d)
	}
	if l := location(ev); l != "" {
		c.Props.SetText(ical.PropLocation, l)
	}
	if ev.IsCancelled {
		c.Props.SetText(ical.PropStatus, "CANCELLED")
	}
	// showAs → TRANSP (RFC 5545 §3.8.2.7), and Outlook's own busy status
	// so that tentative and out-of-office survive.
	switch strings.ToLower(ev.ShowAs) {
	case "free":
		c.Props.SetText(ical.PropTransparency, "TRANSPARENT")
		c.Props.Set(&ical.Prop{Name: "X-MICROSOFT-CDO-BUSYSTATUS", Params: ical.Params{}, Value: "FREE"})
	case "tentative", "busy", "oof", "workingelsewhere":
		c.Props.SetText(ical.PropTransparency, "OPAQUE")
		c.Props.Set(&ical.Prop{Name: "X-MICROSOFT-CDO-BUSYSTATUS", Params: ical.Params{}, Value: strings.ToUpper(ev.ShowAs)})
	}
	switch strings.ToLower(ev.Sensitivity) {
	case "personal", "private":
		c.Props.SetText(ical.PropClass, "PRIVATE")
	case "confidential":
		c.Props.SetText(ical.PropClass, "CONFIDENTIAL")
	}
	if len(ev.Categories) > 0 {
		var cats []string
		for _, x := range ev.Categories {
			if x = clean(x, false); x != "" {
				cats = append(cats, x)
			}
		}
		if len(cats) > 0 {
			p := ical.NewProp(ical.PropCategories)
			p.SetTextList(cats)
			c.Props.Set(p)
		}
	}
	if ev.Organizer != nil && validAddress(ev.Organizer.EmailAddress.Address) {
		p := ical.NewProp(ical.PropOrganizer)
		p.Value = "mailto:" + ev.Organizer.EmailAddress.Address
		if n := param(ev.Organizer.EmailAddress.Name); n != "" {
			p.Params.Set(ical.ParamCommonName, n)
		}
		c.Props.Set(p)
	}
	for _, a := range ev.Attendees {
		if !validAddress(a.EmailAddress.Address) {
			continue
		}
		p := ical.NewProp(ical.PropAttendee)
		p.Value = "mailto:" + a.EmailAddress.Address
		if n := param(a.EmailAddress.Name); n != "" {
			p.Params.Set(ical.ParamCommonName, n)
		}
		switch strings.ToLower(a.Type) {
		case "optional":
			p.Params.Set(ical.ParamRole, "OPT-PARTICIPANT")
		case "resource":
			p.Params.Set(ical.ParamRole, "NON-PARTICIPANT")
			p.Params.Set(ical.ParamCalendarUserType, "RESOURCE")
		default:
			p.Params.Set(ical.ParamRole, "REQ-PARTICIPANT")
		}
		if a.Status != nil {
			if ps := partStat(a.Status.Response); ps != "" {
				p.Params.Set(ical.ParamParticipationStatus, ps)
			}
		}
		c.Props.Add(p)
	}
	if ev.OnlineMeeting != nil && strings.HasPrefix(ev.OnlineMeeting.JoinURL, "https://") && !strings.ContainsAny(ev.OnlineMeeting.JoinURL, " \r\n\t\"") {
		p := ical.NewProp("CONFERENCE") // RFC 7986 §5.11
		p.Params.Set(ical.ParamValue, "URI")
		p.Value = ev.OnlineMeeting.JoinURL
		c.Props.Set(p)
	}
	if ev.IsReminderOn && ev.ReminderMinutesBeforeStart >= 0 && ev.ReminderMinutesBeforeStart <= 4*7*24*60 {
		a := ical.NewComponent(ical.CompAlarm)
		a.Props.SetText(ical.PropAction, "DISPLAY")
		a.Props.SetText(ical.PropDescription, "Reminder")
		trig := ical.NewProp(ical.PropTrigger)
		trig.Value = "-PT" + strconv.Itoa(ev.ReminderMinutesBeforeStart) + "M"
		a.Props.Set(trig)
		c.Children = append(c.Children, a)
	}
	return c, sp, nil
}

func partStat(r string) string {
	switch strings.ToLower(r) {
	case "accepted", "organizer":
		return "ACCEPTED"
	case "tentativelyaccepted":
		return "TENTATIVE"
	case "declined":
		return "DECLINED"
	case "notresponded", "none":
		return "NEEDS-ACTION"
	}
	return ""
}

func description(ev *Event) string {
	if ev.Body != nil && strings.TrimSpace(ev.Body.Content) != "" {
		text := ev.Body.Content
		if strings.EqualFold(ev.Body.ContentType, "html") {
			text = parse.HTMLToText(text)
		}
		return clean(text, true)
	}
	return clean(ev.BodyPreview, true)
}

func location(ev *Event) string {
	if ev.Location != nil {
		if s := clean(ev.Location.DisplayName, false); s != "" {
			return s
		}
	}
	var parts []string
	for _, l := range ev.Locations {
		if s := clean(l.DisplayName, false); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "; ")
}

// maxText bounds one text property (a pasted document as a body).
const maxText = 64 << 10

// clean makes text safe for an iCalendar TEXT value: CRLF and CR become
// LF (kept only when multiline), other control characters go, and the
// text is bounded.
func clean(s string, multiline bool) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r':
			if multiline {
				return '\n'
			}
			return ' '
		case r == '\t':
			return ' '
		case unicode.IsControl(r):
			return -1
		}
		return r
	}, s)
	s = strings.ToValidUTF8(s, "")
	if len(s) > maxText {
		s = strings.ToValidUTF8(s[:maxText], "")
	}
	return strings.TrimSpace(s)
}

// param makes a parameter value safe: no control characters, no double
// quotes (RFC 5545 §3.1 has no way to escape them).
func param(s string) string {
	s = clean(s, false)
	s = strings.ReplaceAll(s, `"`, "'")
	if len(s) > 256 {
		s = strings.ToValidUTF8(s[:256], "")
	}
	return s
}

func validAddress(a string) bool {
	return a != "" && len(a) <= 320 && strings.Contains(a, "@") && !strings.ContainsFunc(a, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == '"' || r == '<' || r == '>'
	})
}

var rruleDays = map[string]string{
	"sunday": "SU", "monday": "MO", "tuesday": "TU", "wednesday": "WE", "thursday": "TH", "friday": "FR", "saturday": "SA",
}

var rruleIndex = map[string]string{"first": "1", "second": "2", "third": "3", "fourth": "4", "last": "-1"}

// rrule writes a Graph recurrence as an RFC 5545 §3.3.10 RRULE for a
// series starting at sp in zone: the pattern becomes FREQ, INTERVAL,
// BYDAY, BYMONTHDAY, BYMONTH and BYSETPOS (relative patterns: "the
// second Tuesday" is BYDAY=TU;BYSETPOS=2), the range UNTIL (the end
// date's last second in the series' zone, in UTC; a DATE for all-day
// series) or COUNT.
func rrule(rec *Recurrence, sp span, zone *time.Location) (string, error) {
	p := rec.Pattern
	interval := p.Interval
	if interval < 1 {
		interval = 1
	}
	days := func() (string, error) {
		if len(p.DaysOfWeek) == 0 {
			return "", fmt.Errorf("%w: a %s recurrence without daysOfWeek", ErrMalformed, p.Type)
		}
		var out []string
		for _, d := range p.DaysOfWeek {
			code, ok := rruleDays[strings.ToLower(d)]
			if !ok {
				return "", fmt.Errorf("%w: day of week %q", ErrMalformed, d)
			}
			out = append(out, code)
		}
		return strings.Join(out, ","), nil
	}
	setpos := func() (string, error) {
		if p.Index == "" {
			return "1", nil
		}
		v, ok := rruleIndex[strings.ToLower(p.Index)]
		if !ok {
			return "", fmt.Errorf("%w: week index %q", ErrMalformed, p.Index)
		}
		return v, nil
	}
	dom := func() (string, error) {
		if p.DayOfMonth < 1 || p.DayOfMonth > 31 {
			return "", fmt.Errorf("%w: day of month %d", ErrMalformed, p.DayOfMonth)
		}
		return strconv.Itoa(p.DayOfMonth), nil
	}
	month := func() (string, error) {
		if p.Month < 1 || p.Month > 12 {
			return "", fmt.Errorf("%w: month %d", ErrMalformed, p.Month)
		}
		return strconv.Itoa(p.Month), nil
	}
	var parts []string
	add := func(k, v string) { parts = append(parts, k+"="+v) }
	var err error
	var v string
	switch strings.ToLower(p.Type) {
	case "daily":
		add("FREQ", "DAILY")
	case "weekly":
		add("FREQ", "WEEKLY")
		if v, err = days(); err != nil {
			return "", err
		}
		add("BYDAY", v)
		if w, ok := rruleDays[strings.ToLower(p.FirstDayOfWeek)]; ok {
			add("WKST", w)
		}
	case "absolutemonthly":
		add("FREQ", "MONTHLY")
		if v, err = dom(); err != nil {
			return "", err
		}
		add("BYMONTHDAY", v)
	case "relativemonthly":
		add("FREQ", "MONTHLY")
		if v, err = days(); err != nil {
			return "", err
		}
		add("BYDAY", v)
		if v, err = setpos(); err != nil {
			return "", err
		}
		add("BYSETPOS", v)
	case "absoluteyearly":
		add("FREQ", "YEARLY")
		if v, err = month(); err != nil {
			return "", err
		}
		add("BYMONTH", v)
		if v, err = dom(); err != nil {
			return "", err
		}
		add("BYMONTHDAY", v)
	case "relativeyearly":
		add("FREQ", "YEARLY")
		if v, err = month(); err != nil {
			return "", err
		}
		add("BYMONTH", v)
		if v, err = days(); err != nil {
			return "", err
		}
		add("BYDAY", v)
		if v, err = setpos(); err != nil {
			return "", err
		}
		add("BYSETPOS", v)
	default:
		return "", fmt.Errorf("%w: recurrence pattern %q", ErrMalformed, p.Type)
	}
	if interval > 1 {
		add("INTERVAL", strconv.Itoa(interval))
	}
	switch strings.ToLower(rec.Range.Type) {
	case "enddate":
		end, err := time.Parse("2006-01-02", rec.Range.EndDate)
		if err != nil {
			return "", fmt.Errorf("%w: range end date %q", ErrMalformed, rec.Range.EndDate)
		}
		if sp.allDay {
			add("UNTIL", end.Format("20060102"))
		} else {
			last := time.Date(end.Year(), end.Month(), end.Day(), 23, 59, 59, 0, zone)
			add("UNTIL", last.UTC().Format("20060102T150405Z"))
		}
	case "numbered":
		if rec.Range.NumberOfOccurrences < 1 {
			return "", fmt.Errorf("%w: %d occurrences", ErrMalformed, rec.Range.NumberOfOccurrences)
		}
		add("COUNT", strconv.Itoa(rec.Range.NumberOfOccurrences))
	case "noend", "":
	default:
		return "", fmt.Errorf("%w: recurrence range %q", ErrMalformed, rec.Range.Type)
	}
	return strings.Join(parts, ";"), nil
}
