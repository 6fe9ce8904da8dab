package graphtest

import (
	"fmt"
	"strings"
	"time"
)

// DateTimeTimeZone is Graph's dateTimeTimeZone: a local date-time and the
// zone it is in (a Windows or IANA name).
type DateTimeTimeZone struct {
	DateTime string `json:"dateTime"`
	TimeZone string `json:"timeZone"`
}

// At is t as a DateTimeTimeZone in zone (a Windows or IANA name the fake
// knows; t is converted to it).
func At(t time.Time, zone string) DateTimeTimeZone {
	return DateTimeTimeZone{DateTime: t.In(loadZone(zone)).Format(localLayout), TimeZone: zone}
}

// Day is an all-day boundary: midnight of the date, in zone.
func Day(y int, m time.Month, d int, zone string) DateTimeTimeZone {
	return DateTimeTimeZone{DateTime: time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Format(localLayout), TimeZone: zone}
}

// localLayout is how Graph writes dateTime (seven fractional digits).
const localLayout = "2006-01-02T15:04:05.0000000"

func (d DateTimeTimeZone) instant() (time.Time, error) {
	s := d.DateTime
	if i := strings.IndexByte(s, '.'); i > 0 {
		s = s[:i]
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loadZone(d.TimeZone))
	if err != nil {
		return time.Time{}, fmt.Errorf("dateTime %q: %w", d.DateTime, err)
	}
	return t, nil
}

// ItemBody is an event's body.
type ItemBody struct {
	ContentType string `json:"contentType"` // text or html
	Content     string `json:"content"`
}

// Location is where an event is.
type Location struct {
	DisplayName string `json:"displayName"`
}

// EmailAddress is a name and an address.
type EmailAddress struct {
	Name    string `json:"name,omitempty"`
	Address string `json:"address"`
}

// Recipient is an organizer.
type Recipient struct {
	EmailAddress EmailAddress `json:"emailAddress"`
}

// ResponseStatus is an attendee's answer.
type ResponseStatus struct {
	Response string `json:"response"` // none, organizer, tentativelyAccepted, accepted, declined, notResponded
}

// Attendee is one attendee.
type Attendee struct {
	Type         string          `json:"type,omitempty"` // required, optional, resource
	Status       *ResponseStatus `json:"status,omitempty"`
	EmailAddress EmailAddress    `json:"emailAddress"`
}

// Pattern is a recurrence pattern.
type Pattern struct {
	Type           string   `json:"type"` // daily, weekly, absoluteMonthly, relativeMonthly, absoluteYearly, relativeYearly
	Interval       int      `json:"interval"`
	Month          int      `json:"month,omitempty"`
	DayOfMonth     int      `json:"dayOfMonth,omitempty"`
	DaysOfWeek     []string `json:"daysOfWeek,omitempty"`
	FirstDayOfWeek string   `json:"firstDayOfWeek,omitempty"`
	Index          string   `json:"index,omitempty"` // first, second, third, fourth, last
}

// Range is a recurrence range.
type Range struct {
	Type                string `json:"type"` // endDate, noEnd, numbered
	StartDate           string `json:"startDate"`
	EndDate             string `json:"endDate,omitempty"`
	NumberOfOccurrences int    `json:"numberOfOccurrences,omitempty"`
	RecurrenceTimeZone  string `json:"recurrenceTimeZone,omitempty"`
}

// Recurrence is a patternedRecurrence.
type Recurrence struct {
	Pattern Pattern `json:"pattern"`
	Range   Range   `json:"range"`
}

// Event is a Graph event as the fake keeps it. The fake sets ID,
// ICalUID, Type, ChangeKey and LastModifiedDateTime; tests set the rest.
type Event struct {
	ID                         string           `json:"id"`
	ICalUID                    string           `json:"iCalUId"`
	TransactionID              string           `json:"transactionId,omitempty"`
	Type                       string           `json:"type"`
	ChangeKey                  string           `json:"changeKey"`
	Subject                    string           `json:"subject"`
	Body                       *ItemBody        `json:"body,omitempty"`
	Start                      DateTimeTimeZone `json:"start"`
	End                        DateTimeTimeZone `json:"end"`
	OriginalStartTimeZone      string           `json:"originalStartTimeZone,omitempty"`
	OriginalEndTimeZone        string           `json:"originalEndTimeZone,omitempty"`
	IsAllDay                   bool             `json:"isAllDay"`
	IsCancelled                bool             `json:"isCancelled"`
	ShowAs                     string           `json:"showAs,omitempty"`
	Sensitivity                string           `json:"sensitivity,omitempty"`
	IsReminderOn               bool             `json:"isReminderOn"`
	ReminderMinutesBeforeStart int              `json:"reminderMinutesBeforeStart"`
	Location                   *Location        `json:"location,omitempty"`
	Attendees                  []Attendee       `json:"attendees,omitempty"`
	Organizer                  *Recipient       `json:"organizer,omitempty"`
	Recurrence                 *Recurrence      `json:"recurrence,omitempty"`
	Categories                 []string         `json:"categories,omitempty"`
	SeriesMasterID             string           `json:"seriesMasterId,omitempty"`
	OriginalStart              string           `json:"originalStart,omitempty"`
	LastModifiedDateTime       string           `json:"lastModifiedDateTime,omitempty"`
	ETag                       string           `json:"@odata.etag,omitempty"`
}

// PhysicalAddress is a postal address.
type PhysicalAddress struct {
	Street          string `json:"street,omitempty"`
	City            string `json:"city,omitempty"`
	State           string `json:"state,omitempty"`
	CountryOrRegion string `json:"countryOrRegion,omitempty"`
	PostalCode      string `json:"postalCode,omitempty"`
}

// Contact is a Graph contact as the fake keeps it.
type Contact struct {
	ID                   string           `json:"id"`
	ChangeKey            string           `json:"changeKey"`
	ParentFolderID       string           `json:"parentFolderId,omitempty"`
	DisplayName          string           `json:"displayName,omitempty"`
	GivenName            string           `json:"givenName,omitempty"`
	MiddleName           string           `json:"middleName,omitempty"`
	Surname              string           `json:"surname,omitempty"`
	Title                string           `json:"title,omitempty"`
	Generation           string           `json:"generation,omitempty"`
	NickName             string           `json:"nickName,omitempty"`
	JobTitle             string           `json:"jobTitle,omitempty"`
	CompanyName          string           `json:"companyName,omitempty"`
	Department           string           `json:"department,omitempty"`
	EmailAddresses       []EmailAddress   `json:"emailAddresses,omitempty"`
	BusinessPhones       []string         `json:"businessPhones,omitempty"`
	HomePhones           []string         `json:"homePhones,omitempty"`
	MobilePhone          string           `json:"mobilePhone,omitempty"`
	HomeAddress          *PhysicalAddress `json:"homeAddress,omitempty"`
	BusinessAddress      *PhysicalAddress `json:"businessAddress,omitempty"`
	Birthday             string           `json:"birthday,omitempty"`
	PersonalNotes        string           `json:"personalNotes,omitempty"`
	Categories           []string         `json:"categories,omitempty"`
	LastModifiedDateTime string           `json:"lastModifiedDateTime,omitempty"`
	ETag                 string           `json:"@odata.etag,omitempty"`
}

// windowsZones are the few Windows zone names the fake understands (its
// own small table, so that it does not share the converter's).
var windowsZones = map[string]string{
	"UTC":                            "UTC",
	"W. Europe Standard Time":        "Europe/Berlin",
	"Romance Standard Time":          "Europe/Paris",
	"Central Europe Standard Time":   "Europe/Budapest",
	"Central European Standard Time": "Europe/Warsaw",
	"GMT Standard Time":              "Europe/London",
	"Pacific Standard Time":          "America/Los_Angeles",
	"Eastern Standard Time":          "America/New_York",
	"Tokyo Standard Time":            "Asia/Tokyo",
	"India Standard Time":            "Asia/Kolkata",
	"AUS Eastern Standard Time":      "Australia/Sydney",
}

// knownZones are the table's zones, loaded once: loading a zone reads
// the zoneinfo file, which dominated the fake's time. Read-only after
// init.
var knownZones = func() map[string]*time.Location {
	m := map[string]*time.Location{}
	for win, iana := range windowsZones {
		if loc, err := time.LoadLocation(iana); err == nil {
			m[win], m[iana] = loc, loc
		}
	}
	return m
}()

func loadZone(name string) *time.Location {
	if loc, ok := knownZones[name]; ok {
		return loc
	}
	if name == "" || name == "UTC" || name == "tzone://Microsoft/Utc" {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}
