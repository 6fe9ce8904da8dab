package graphcal

//go:generate go run gen_windowszones.go

import (
	"strings"
	"time"
)

// Zone resolves a time-zone name as Graph writes it: a Windows name
// ("W. Europe Standard Time", through the CLDR table in windowszones.go),
// an IANA name (events created through the API may carry one), or
// Exchange's "tzone://Microsoft/Utc". ok is false for an empty, custom
// ("tzone://Microsoft/Custom") or unknown name; the location is then UTC.
func Zone(name string) (loc *time.Location, ok bool) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return time.UTC, false
	case strings.EqualFold(name, "UTC"), strings.EqualFold(name, "tzone://Microsoft/Utc"), name == "Etc/UTC", name == "Etc/GMT":
		return time.UTC, true
	}
	if iana, found := windowsZones[name]; found {
		name = iana
	}
	if strings.HasPrefix(name, "tzone://") {
		return time.UTC, false
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC, false
	}
	return loc, true
}
