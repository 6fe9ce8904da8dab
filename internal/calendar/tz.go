package calendar

import (
	"strings"
	"time"

	"github.com/emersion/go-ical"
)

// windowsZones maps the Windows time-zone names Outlook and Exchange write
// as TZID to IANA zones (the "001" territory of CLDR's windowsZones.xml).
// Only the commonly seen names are listed; an unknown one falls back to the
// file's VTIMEZONE offsets.
var windowsZones = map[string]string{
	"Dateline Standard Time":          "Etc/GMT+12",
	"UTC-11":                          "Etc/GMT+11",
	"Hawaiian Standard Time":          "Pacific/Honolulu",
	"Alaskan Standard Time":           "America/Anchorage",
	"Pacific Standard Time":           "America/Los_Angeles",
	"Pacific Standard Time (Mexico)":  "America/Tijuana",
	"US Mountain Standard Time":       "America/Phoenix",
	"Mountain Standard Time":          "America/Denver",
	"Central America Standard Time":   "America/Guatemala",
	"Central Standard Time":           "America/Chicago",
	"Central Standard Time (Mexico)":  "America/Mexico_City",
	"Canada Central Standard Time":    "America/Regina",
	"SA Pacific Standard Time":        "America/Bogota",
	"Eastern Standard Time":           "America/New_York",
	"US Eastern Standard Time":        "America/Indianapolis",
	"Venezuela Standard Time":         "America/Caracas",
	"Atlantic Standard Time":          "America/Halifax",
	"SA Western Standard Time":        "America/La_Paz",
	"Pacific SA Standard Time":        "America/Santiago",
	"Newfoundland Standard Time":      "America/St_Johns",
	"E. South America Standard Time":  "America/Sao_Paulo",
	"Argentina Standard Time":         "America/Buenos_Aires",
	"SA Eastern Standard Time":        "America/Cayenne",
	"Greenland Standard Time":         "America/Godthab",
	"UTC-02":                          "Etc/GMT+2",
	"Azores Standard Time":            "Atlantic/Azores",
	"Cape Verde Standard Time":        "Atlantic/Cape_Verde",
	"UTC":                             "Etc/UTC",
	"GMT Standard Time":               "Europe/London",
	"Greenwich Standard Time":         "Atlantic/Reykjavik",
	"Morocco Standard Time":           "Africa/Casablanca",
	"W. Europe Standard Time":         "Europe/Berlin",
	"Central Europe Standard Time":    "Europe/Budapest",
	"Romance Standard Time":           "Europe/Paris",
	"Central European Standard Time":  "Europe/Warsaw",
	"W. Central Africa Standard Time": "Africa/Lagos",
	"GTB Standard Time":               "Europe/Bucharest",
	"E. Europe Standard Time":         "Europe/Chisinau",
	"Egypt Standard Time":             "Africa/Cairo",
	"FLE Standard Time":               "Europe/Kiev",
	"Israel Standard Time":            "Asia/Jerusalem",
	"South Africa Standard Time":      "Africa/Johannesburg",
	"Turkey Standard Time":            "Europe/Istanbul",
	"Arab Standard Time":              "Asia/Riyadh",
	"Arabic Standard Time":            "Asia/Baghdad",
	"E. Africa Standard Time":         "Africa/Nairobi",
	"Russian Standard Time":           "Europe/Moscow",
	"Iran Standard Time":              "Asia/Tehran",
	"Arabian Standard Time":           "Asia/Dubai",
	"Afghanistan Standard Time":       "Asia/Kabul",
	"Pakistan Standard Time":          "Asia/Karachi",
	"West Asia Standard Time":         "Asia/Tashkent",
	"India Standard Time":             "Asia/Calcutta",
	"Sri Lanka Standard Time":         "Asia/Colombo",
	"Nepal Standard Time":             "Asia/Katmandu",
	"Central Asia Standard Time":      "Asia/Almaty",
	"Bangladesh Standard Time":        "Asia/Dhaka",
	"Myanmar Standard Time":           "Asia/Rangoon",
	"SE Asia Standard Time":           "Asia/Bangkok",
	"China Standard Time":             "Asia/Shanghai",
	"Singapore Standard Time":         "Asia/Singapore",
	"Taipei Standard Time":            "Asia/Taipei",
	"W. Australia Standard Time":      "Australia/Perth",
	"Korea Standard Time":             "Asia/Seoul",
	"Tokyo Standard Time":             "Asia/Tokyo",
	"Cen. Australia Standard Time":    "Australia/Adelaide",
	"AUS Central Standard Time":       "Australia/Darwin",
	"E. Australia Standard Time":      "Australia/Brisbane",
	"AUS Eastern Standard Time":       "Australia/Sydney",
	"Tasmania Standard Time":          "Australia/Hobart",
	"West Pacific Standard Time":      "Pacific/Port_Moresby",
	"Central Pacific Standard Time":   "Pacific/Guadalcanal",
	"New Zealand Standard Time":       "Pacific/Auckland",
	"Fiji Standard Time":              "Pacific/Fiji",
	"Tonga Standard Time":             "Pacific/Tongatapu",
	"Samoa Standard Time":             "Pacific/Apia",
}

// zones resolves TZID parameters for one file: IANA names, Windows names,
// vendor-prefixed names ("/mozilla.org/20050126_1/Europe/Rome",
// "/citadel.org/.../Europe/Rome") and, failing those, the fixed standard
// rules (or failing that the fixed offset) of the file's own VTIMEZONE. The floating location is used for
// times without a zone (RFC 5545 §3.3.5 form #1) and for dates.
type zones struct {
	floating *time.Location
	// wr is the calendar's X-WR-TIMEZONE (Google, Apple exports): times
	// without a zone are read in it rather than in floating. Nil when
	// absent or not a known zone.
	wr    *time.Location
	vtz   map[string]*ical.Component
	cache map[string]resolved
}

type resolved struct {
	loc   *time.Location
	exact bool
}

func newZones(cal *ical.Component, floating *time.Location) *zones {
	z := &zones{floating: floating, vtz: map[string]*ical.Component{}, cache: map[string]resolved{}}
	if p := cal.Props.Get("X-WR-TIMEZONE"); p != nil {
		if loc, exact := resolveTZID(textUnescaper.Replace(p.Value), nil); exact {
			z.wr = loc
		}
	}
	for _, c := range cal.Children {
		if c.Name == ical.CompTimezone {
			if p := c.Props.Get(ical.PropTimezoneID); p != nil {
				// TZID is TEXT: Outlook's "(UTC+01:00) Amsterdam\, Berlin…"
				// is referenced unescaped from DTSTART's parameter.
				z.vtz[textUnescaper.Replace(p.Value)] = c
			}
		}
	}
	return z
}

// lookup returns the location for tzid and whether it was resolved to a
// real zone (false: a fixed-offset approximation or UTC fallback).
func (z *zones) lookup(tzid string) (*time.Location, bool) {
	tzid = strings.Trim(strings.TrimSpace(tzid), `"`)
	if r, ok := z.cache[tzid]; ok {
		return r.loc, r.exact
	}
	loc, exact := resolveTZID(tzid, z.vtz[tzid])
	z.cache[tzid] = resolved{loc, exact}
	return loc, exact
}

func resolveTZID(tzid string, vtz *ical.Component) (*time.Location, bool) {
	name := strings.Trim(strings.TrimSpace(tzid), `"`)
	try := func(n string) *time.Location {
		if n == "" || strings.EqualFold(n, "local") {
			return nil
		}
		loc, err := time.LoadLocation(n)
		if err != nil {
			return nil
		}
		return loc
	}
	if loc := try(name); loc != nil {
		return loc, true
	}
	if iana, ok := windowsZones[name]; ok {
		if loc := try(iana); loc != nil {
			return loc, true
		}
	}
	if vtz != nil {
		if p := vtz.Props.Get("X-LIC-LOCATION"); p != nil {
			if loc := try(p.Value); loc != nil {
				return loc, true
			}
		}
	}
	// Vendor prefixes: try the last two and three path segments.
	if parts := strings.Split(name, "/"); len(parts) > 2 {
		for n := 3; n >= 2; n-- {
			if len(parts) >= n {
				if loc := try(strings.Join(parts[len(parts)-n:], "/")); loc != nil {
					return loc, true
				}
			}
		}
	}
	if vtz != nil {
		if rule, ok := posixFromVTimezone(vtz); ok {
			if loc, err := locationFromPosix(posixPrefix+rule, rule); err == nil {
				return loc, true
			}
		}
		if loc := fixedFromVTimezone(name, vtz); loc != nil {
			return loc, false
		}
	}
	return time.UTC, false
}

// fixedFromVTimezone approximates an unknown zone by the TZOFFSETTO of its
// STANDARD (or first) sub-component, for custom zones whose daylight saving
// rules posixFromVTimezone cannot express; such events may be an hour off
// in summer.
func fixedFromVTimezone(name string, vtz *ical.Component) *time.Location {
	var pick *ical.Component
	for _, c := range vtz.Children {
		if c.Name == "STANDARD" {
			pick = c
			break
		}
		if pick == nil {
			pick = c
		}
	}
	if pick == nil {
		return nil
	}
	p := pick.Props.Get("TZOFFSETTO")
	if p == nil {
		return nil
	}
	off, ok := parseUTCOffset(p.Value)
	if !ok {
		return nil
	}
	return time.FixedZone(name, off)
}

// parseUTCOffset parses an RFC 5545 §3.3.14 UTC-OFFSET (+0100, -053000).
func parseUTCOffset(s string) (int, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 5 && len(s) != 7 {
		return 0, false
	}
	sign := 1
	switch s[0] {
	case '+':
	case '-':
		sign = -1
	default:
		return 0, false
	}
	n := 0
	parts := []int{}
	for i := 1; i+1 < len(s)+1 && i < len(s); i += 2 {
		a, b := s[i], s[i+1]
		if a < '0' || a > '9' || b < '0' || b > '9' {
			return 0, false
		}
		parts = append(parts, int(a-'0')*10+int(b-'0'))
	}
	mult := []int{3600, 60, 1}
	for i, p := range parts {
		n += p * mult[i]
	}
	return sign * n, true
}

// textUnescaper undoes RFC 5545 §3.3.11 TEXT escapes.
var textUnescaper = strings.NewReplacer(`\\`, `\`, `\,`, ",", `\;`, ";", `\n`, "\n", `\N`, "\n")

// ResolveTZID returns the location a TZID of cal names (see zones).
func ResolveTZID(cal *ical.Component, tzid string) *time.Location {
	loc, _ := newZones(cal, time.UTC).lookup(tzid)
	return loc
}
