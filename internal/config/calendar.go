package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// CalendarConfig configures the calendar and contacts connectors: vdir
// collections kept mirrored, the user's zone and working hours.
type CalendarConfig struct {
	// Sources are vdir folders of .ics files (one collection, or a folder
	// of collections such as ~/.calendars).
	Sources []VdirSource `toml:"sources"`
	// Timezone is the IANA zone for floating times, all-day events and
	// dates typed without a zone; empty means the system's.
	Timezone          string   `toml:"timezone"`
	DayStart          string   `toml:"day_start"`
	DayEnd            string   `toml:"day_end"`
	WorkDays          []string `toml:"work_days"`
	ReconcileInterval Duration `toml:"reconcile_interval"`
	// CalDAV accounts are mirrored into DATA/calendar/caldav/<name>/ and
	// indexed like vdir sources; writes go to the server.
	CalDAV []DAVAccount `toml:"caldav"`
	// Graph accounts (Microsoft 365) are mirrored into
	// DATA/calendar/graph/<name>/ (graph.go); writes go to Graph.
	Graph []GraphAccount `toml:"graph"`
}

// DAVAccount is one CalDAV (or CardDAV) login. The password comes from
// PasswordEnv or an owner-only PasswordFile, never from this file.
type DAVAccount struct {
	Name         string `toml:"name"`
	URL          string `toml:"url"`
	Username     string `toml:"username"`
	PasswordEnv  string `toml:"password_env"`
	PasswordFile string `toml:"password_file"`
	ReadOnly     bool   `toml:"read_only"`
	// Auth is password (the default) or oauth2, with OAuthAccount naming
	// the [[oauth.accounts]] entry whose bearer token is sent
	// (accountauth.go; Google: GoogleCalDAVURL, GoogleCardDAVURL).
	Auth         string `toml:"auth"`
	OAuthAccount string `toml:"oauth_account"`
}

// ContactsConfig configures the contacts connector.
type ContactsConfig struct {
	// Sources are vdir folders of .vcf files.
	Sources []VdirSource `toml:"sources"`
	// CardDAV accounts are mirrored into DATA/contacts/carddav/<name>/
	// and indexed like vdir sources (read-only: nothing writes contacts).
	CardDAV []DAVAccount `toml:"carddav"`
	// Graph accounts (Microsoft 365) are mirrored read-only into
	// DATA/contacts/graph/<name>/ (graph.go).
	Graph []GraphAccount `toml:"graph"`
}

// VdirSource is one vdir folder.
type VdirSource struct {
	Name     string `toml:"name"`
	Path     string `toml:"path"`
	ReadOnly bool   `toml:"read_only"`
	Color    string `toml:"color"`
}

func defaultCalendar() CalendarConfig {
	return CalendarConfig{DayStart: "09:00", DayEnd: "18:00", WorkDays: []string{"mon", "tue", "wed", "thu", "fri"},
		ReconcileInterval: Duration(5 * time.Minute)}
}

// Location returns the configured zone (the system's when empty).
func (c CalendarConfig) Location() *time.Location {
	if c.Timezone == "" {
		return time.Local
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return time.Local
	}
	return loc
}

func validateVdir(section string, srcs []VdirSource) []error {
	var errs []error
	names := map[string]bool{}
	for i, s := range srcs {
		key := fmt.Sprintf("%s.sources[%d]", section, i)
		if s.Name == "" || names[s.Name] || strings.ContainsAny(s.Name, "/\\") {
			errs = append(errs, &Error{Key: key + ".name", Value: s.Name, Allowed: "a unique, non-empty name without slashes"})
		}
		names[s.Name] = true
		if !filepath.IsAbs(s.Path) {
			errs = append(errs, &Error{Key: key + ".path", Value: s.Path, Allowed: "an absolute path"})
		}
	}
	return errs
}

func (c CalendarConfig) validate() []error {
	errs := validateVdir("calendar", c.Sources)
	names := map[string]bool{}
	for _, s := range c.Sources {
		names[s.Name] = true
	}
	errs = append(errs, validateDAV("calendar.caldav", "CalDAV", c.CalDAV, names)...)
	if c.Timezone != "" {
		if _, err := time.LoadLocation(c.Timezone); err != nil {
			errs = append(errs, &Error{Key: "calendar.timezone", Value: c.Timezone, Allowed: "an IANA zone like Europe/Rome"})
		}
	}
	clock := func(key, v string) time.Duration {
		t, err := time.Parse("15:04", v)
		if err != nil && v != "24:00" {
			errs = append(errs, &Error{Key: key, Value: v, Allowed: "a time of day like 09:00"})
			return -1
		}
		if v == "24:00" {
			return 24 * time.Hour
		}
		return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute
	}
	s, e := clock("calendar.day_start", c.DayStart), clock("calendar.day_end", c.DayEnd)
	if s >= 0 && e >= 0 && s >= e {
		errs = append(errs, &Error{Key: "calendar.day_end", Value: c.DayEnd, Allowed: "a time after day_start"})
	}
	for i, d := range c.WorkDays {
		switch strings.ToLower(d) {
		case "mon", "tue", "wed", "thu", "fri", "sat", "sun":
		default:
			errs = append(errs, &Error{Key: fmt.Sprintf("calendar.work_days[%d]", i), Value: d, Allowed: "mon, tue, wed, thu, fri, sat or sun"})
		}
	}
	if c.ReconcileInterval.D() < 10*time.Second || c.ReconcileInterval.D() > 24*time.Hour {
		errs = append(errs, &Error{Key: "calendar.reconcile_interval", Value: c.ReconcileInterval.D().String(), Allowed: "a duration between 10s and 24h"})
	}
	return errs
}

func (c ContactsConfig) validate() []error {
	errs := validateVdir("contacts", c.Sources)
	names := map[string]bool{}
	for _, s := range c.Sources {
		names[s.Name] = true
	}
	return append(errs, validateDAV("contacts.carddav", "CardDAV", c.CardDAV, names)...)
}

// validateDAV checks DAV accounts; names holds the section's source names
// (an account's mirrors are named after it, so names are shared).
func validateDAV(section, proto string, accts []DAVAccount, names map[string]bool) []error {
	var errs []error
	for i, a := range accts {
		key := fmt.Sprintf("%s[%d]", section, i)
		if a.Name == "" || names[a.Name] || strings.ContainsAny(a.Name, "/\\") {
			errs = append(errs, &Error{Key: key + ".name", Value: a.Name, Allowed: "a unique, non-empty name without slashes"})
		}
		names[a.Name] = true
		u, err := url.Parse(a.URL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			errs = append(errs, &Error{Key: key + ".url", Value: a.URL, Allowed: "an http(s) URL of the " + proto + " server"})
		case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
			errs = append(errs, &Error{Key: key + ".url", Value: a.URL, Allowed: "https for a non-loopback server"})
		}
		if a.Username != "" && !a.UsesOAuth() && a.PasswordEnv == "" && a.PasswordFile == "" {
			errs = append(errs, &Error{Key: key + ".password_env", Value: "", Allowed: "the name of an environment variable holding the password (or set password_file)"})
		}
	}
	return errs
}
