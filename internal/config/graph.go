package config

import (
	"fmt"
	"net/url"
	"strings"
)

// GraphAccount is one Microsoft 365 mailbox whose calendars
// ([[calendar.graph]]) or contact folders ([[contacts.graph]]) are
// mirrored through Microsoft Graph, signed in as the [[oauth.accounts]]
// entry OAuthAccount names (provider microsoft). Calendars are mirrored
// into DATA/calendar/graph/<name>/<calendar>, contact folders into
// DATA/contacts/graph/<name>/<folder>, and indexed like vdir sources;
// calendar writes go to Graph.
type GraphAccount struct {
	Name         string `toml:"name"`
	OAuthAccount string `toml:"oauth_account"`
	// Only lists the calendars (or contact folders) to mirror by name;
	// empty mirrors them all.
	Only     []string `toml:"only"`
	ReadOnly bool     `toml:"read_only"`
	// BaseURL is Graph's root; empty is https://graph.microsoft.com/v1.0
	// (a national cloud has its own).
	BaseURL string `toml:"base_url"`
}

// validateGraph checks [[calendar.graph]] and [[contacts.graph]]: names
// unique among each section's sources (an account's mirrors are named
// after it), the OAuth account known and a Microsoft (or custom) one,
// an https base URL.
func (c *Config) validateGraph() []error {
	var errs []error
	check := func(section string, accts []GraphAccount, taken map[string]bool) {
		for i, a := range accts {
			key := fmt.Sprintf("%s[%d]", section, i)
			if a.Name == "" || taken[a.Name] || strings.ContainsAny(a.Name, "/\\") || strings.HasPrefix(a.Name, ".") {
				errs = append(errs, &Error{Key: key + ".name", Value: a.Name, Allowed: "a unique, non-empty name without slashes (no other source of the section has it)"})
			}
			taken[a.Name] = true
			oa, ok := c.OAuth.Account(a.OAuthAccount)
			switch {
			case a.OAuthAccount == "" || !ok:
				names := make([]string, 0, len(c.OAuth.Accounts))
				for _, o := range c.OAuth.Accounts {
					if o.Provider == "microsoft" {
						names = append(names, o.Name)
					}
				}
				allowed := "the name of a provider = \"microsoft\" [[oauth.accounts]] entry (none is configured: add one, then run hestia accounts connect NAME)"
				if len(names) > 0 {
					allowed = "the name of a provider = \"microsoft\" [[oauth.accounts]] entry: " + strings.Join(names, ", ")
				}
				errs = append(errs, &Error{Key: key + ".oauth_account", Value: a.OAuthAccount, Allowed: allowed})
			case oa.Provider == "google":
				errs = append(errs, &Error{Key: key + ".oauth_account", Value: a.OAuthAccount,
					Allowed: "a microsoft (or custom) OAuth account: Google serves calendars and contacts over CalDAV/CardDAV ([[calendar.caldav]] with auth = \"oauth2\")"})
			}
			for j, n := range a.Only {
				if strings.TrimSpace(n) == "" {
					errs = append(errs, &Error{Key: fmt.Sprintf("%s.only[%d]", key, j), Value: n, Allowed: "a calendar or folder name as Outlook shows it"})
				}
			}
			if a.BaseURL != "" {
				u, err := url.Parse(a.BaseURL)
				switch {
				case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.RawQuery != "" || u.Fragment != "":
					errs = append(errs, &Error{Key: key + ".base_url", Value: a.BaseURL, Allowed: "Graph's root URL, e.g. https://graph.microsoft.com/v1.0"})
				case u.Scheme == "http" && !IsLoopbackHost(u.Hostname()):
					errs = append(errs, &Error{Key: key + ".base_url", Value: a.BaseURL, Allowed: "https for a service not on this machine (the access token travels to it)"})
				}
			}
		}
	}
	calNames := map[string]bool{}
	for _, s := range c.Calendar.Sources {
		calNames[s.Name] = true
	}
	for _, s := range c.Calendar.CalDAV {
		calNames[s.Name] = true
	}
	check("calendar.graph", c.Calendar.Graph, calNames)
	bookNames := map[string]bool{}
	for _, s := range c.Contacts.Sources {
		bookNames[s.Name] = true
	}
	for _, s := range c.Contacts.CardDAV {
		bookNames[s.Name] = true
	}
	check("contacts.graph", c.Contacts.Graph, bookNames)
	return errs
}
