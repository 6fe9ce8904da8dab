package config

import (
	"fmt"
	"strings"
)

// How a mail ([[mail.accounts]]), CalDAV ([[calendar.caldav]]) or CardDAV
// ([[contacts.carddav]]) account signs in: `auth = "password"` (the
// default: password_env or password_file) or `auth = "oauth2"` with
// `oauth_account` naming an [[oauth.accounts]] entry, whose token is sent
// over SASL XOAUTH2/OAUTHBEARER (mail) or as an HTTP bearer token (DAV).
const (
	AuthPassword = "password"
	AuthOAuth2   = "oauth2"
)

// UsesOAuth reports whether the account signs in with an OAuth token.
func (a MailAccount) UsesOAuth() bool { return a.Auth == AuthOAuth2 }

// UsesOAuth reports whether the account signs in with an OAuth token.
func (a DAVAccount) UsesOAuth() bool { return a.Auth == AuthOAuth2 }

// Google's DAV endpoints, for [[calendar.caldav]] and [[contacts.carddav]]
// accounts with auth = "oauth2" and a provider = "google" OAuth account.
const (
	GoogleCalDAVURL = "https://apidata.googleusercontent.com/caldav/v2/"
	// GoogleCardDAVURL has the account's address in place of EMAIL.
	GoogleCardDAVURL = "https://www.googleapis.com/carddav/v1/principals/EMAIL/lists/default/"
)

// GoogleCardDAV returns the CardDAV address book URL of a Google account.
func GoogleCardDAV(email string) string {
	return strings.Replace(GoogleCardDAVURL, "EMAIL", email, 1)
}

// validateAccountAuth checks the auth and oauth_account keys of the mail,
// CalDAV and CardDAV accounts against each other and against
// [[oauth.accounts]] (a key of one section naming an entry of another, so
// it is checked here rather than in either section).
func (c *Config) validateAccountAuth() []error {
	var errs []error
	check := func(key, auth, oauthAccount string, passwordSet bool, dav string) *OAuthAccount {
		switch auth {
		case "", AuthPassword:
			if oauthAccount != "" {
				errs = append(errs, &Error{Key: key + ".oauth_account", Value: oauthAccount, Allowed: "empty unless auth = \"oauth2\""})
			}
			return nil
		case AuthOAuth2:
		default:
			errs = append(errs, &Error{Key: key + ".auth", Value: auth, Allowed: "password or oauth2"})
			return nil
		}
		if passwordSet {
			errs = append(errs, &Error{Key: key + ".password_env", Value: "", Allowed: "no password_env or password_file with auth = \"oauth2\" (the OAuth token replaces the password)"})
		}
		oa, ok := c.OAuth.Account(oauthAccount)
		if !ok {
			names := make([]string, len(c.OAuth.Accounts))
			for i, a := range c.OAuth.Accounts {
				names[i] = a.Name
			}
			allowed := "the name of an [[oauth.accounts]] entry (none is configured: add one, then run hestia accounts connect NAME)"
			if len(names) > 0 {
				allowed = "the name of an [[oauth.accounts]] entry: " + strings.Join(names, ", ")
			}
			errs = append(errs, &Error{Key: key + ".oauth_account", Value: oauthAccount, Allowed: allowed})
			return nil
		}
		if dav != "" && oa.Provider == "microsoft" {
			errs = append(errs, &Error{Key: key + ".oauth_account", Value: oauthAccount,
				Allowed: "a google or custom OAuth account: Microsoft 365 serves calendars and contacts through Microsoft Graph, not " + dav})
		}
		return &oa
	}
	for i, a := range c.Mail.Accounts {
		key := fmt.Sprintf("mail.accounts[%d]", i)
		if check(key, a.Auth, a.OAuthAccount, a.PasswordEnv != "" || a.PasswordFile != "", "") != nil &&
			a.Username == "" && a.Address == "" && (a.IMAPHost != "" || a.SMTPHost != "") {
			errs = append(errs, &Error{Key: key + ".username", Value: "", Allowed: "the mailbox's address (or set address): an OAuth login names the user"})
		}
	}
	for i, a := range c.Calendar.CalDAV {
		check(fmt.Sprintf("calendar.caldav[%d]", i), a.Auth, a.OAuthAccount, a.PasswordEnv != "" || a.PasswordFile != "", "CalDAV")
	}
	for i, a := range c.Contacts.CardDAV {
		key := fmt.Sprintf("contacts.carddav[%d]", i)
		check(key, a.Auth, a.OAuthAccount, a.PasswordEnv != "" || a.PasswordFile != "", "CardDAV")
		if strings.Contains(a.URL, "/principals/EMAIL/") {
			errs = append(errs, &Error{Key: key + ".url", Value: a.URL, Allowed: "the Google CardDAV URL with your address in place of EMAIL"})
		}
	}
	return errs
}
