package app

import (
	"context"
	"fmt"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// tokenSource gives the token source of the [[oauth.accounts]] entry name
// for purpose p: what a mail, CalDAV or CardDAV account with
// auth = "oauth2" signs in with.
type tokenSource func(name string, p oauth.Purpose) (*oauth.Source, error)

// accountTokens is the App's tokenSource, through its oauth.Manager.
func (a *App) accountTokens(name string, p oauth.Purpose) (*oauth.Source, error) {
	m, err := a.OAuth()
	if err != nil {
		return nil, err
	}
	return m.Source(name, p)
}

// accountAuthChecks adds, for each mail, CalDAV and CardDAV account that
// signs in with OAuth, a doctor check naming the OAuth account it depends
// on and that account's state, read from its token file without a
// request (the oauth.NAME check renews the token itself): a dead grant
// fails here too, under the name of the account the user knows.
func (a *App) accountAuthChecks() []doctor.Check {
	type dep struct{ kind, name, oauthAccount string }
	var deps []dep
	for _, m := range a.Config.Mail.Accounts {
		if m.UsesOAuth() {
			deps = append(deps, dep{"mail", m.Name, m.OAuthAccount})
		}
	}
	for _, d := range a.Config.Calendar.CalDAV {
		if d.UsesOAuth() {
			deps = append(deps, dep{"caldav", d.Name, d.OAuthAccount})
		}
	}
	for _, d := range a.Config.Contacts.CardDAV {
		if d.UsesOAuth() {
			deps = append(deps, dep{"carddav", d.Name, d.OAuthAccount})
		}
	}
	var checks []doctor.Check
	for _, d := range deps {
		checks = append(checks, doctor.Check{Name: d.kind + "." + d.name + ".signin", Run: func(context.Context) (doctor.Status, string) {
			m, err := a.OAuth()
			if err != nil {
				return doctor.Fail, err.Error()
			}
			st, err := m.Status(d.oauthAccount)
			if err != nil {
				return doctor.Fail, err.Error()
			}
			via := fmt.Sprintf("signs in with OAuth account %s (%s)", d.oauthAccount, st.Provider)
			switch st.State {
			case oauth.StateOK:
				return doctor.OK, via
			case oauth.StateNotConnected:
				return doctor.Warn, via + ", not connected yet: run hestia accounts connect " + d.oauthAccount
			default:
				return doctor.Fail, via + ", which must be reconnected: run hestia accounts connect " + d.oauthAccount
			}
		}})
	}
	return checks
}
