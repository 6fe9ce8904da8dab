package settings

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/mail/mailauth"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// OAuth in the setup steps. A mail, calendar or contacts step with
// auth = "oauth2" writes the account with auth and oauth_account instead
// of a password file, and the [[oauth.accounts]] entry it names when
// config.toml has none by that name (provider, client id, the client
// secret in an owner-only file, tenant). The sign-in itself is the
// browser's: `hestia accounts connect NAME`. Until then the connection
// cannot be tested, so the step is saved untested and its answer says
// which command to run; once connected (and the daemon knows the
// account), the test logs in with the token like a password would.

// OAuthTokenFunc gives the token source of an [[oauth.accounts]] entry for
// a purpose; nil, or an error, when the running daemon does not know it.
type OAuthTokenFunc func(account string, p oauth.Purpose) (mailauth.Tokens, error)

var oauthNameRE = lazyre.New(`^[a-z0-9][a-z0-9_-]{0,39}$`)

// normalizeAuth checks auth and, for oauth2, fills oauth_account from the
// step's name (lower-cased, other characters as -) and drops a password
// left in the form.
func normalizeAuth(in *StepInput) error {
	switch in.Auth {
	case "", config.AuthPassword:
		in.Auth = ""
		return nil
	case config.AuthOAuth2:
	default:
		return fmt.Errorf("%w: auth %q is not password or oauth2", ErrStepInput, in.Auth)
	}
	in.Password = ""
	if in.OAuthAccount == "" {
		in.OAuthAccount = strings.Trim(strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			}
			return '-'
		}, in.Name), "-_")
	}
	if !oauthNameRE.MatchString(in.OAuthAccount) {
		return fmt.Errorf("%w: oauth_account %q: use lower-case letters, digits, - and _ (up to 40)", ErrStepInput, in.OAuthAccount)
	}
	switch in.OAuthProvider {
	case "", "google", "microsoft":
	default:
		return fmt.Errorf("%w: oauth_provider %q is not google or microsoft (edit config.toml for a custom provider)", ErrStepInput, in.OAuthProvider)
	}
	if in.Tenant != "" && in.OAuthProvider != "microsoft" {
		return fmt.Errorf("%w: tenant applies to oauth_provider microsoft only", ErrStepInput)
	}
	return nil
}

// normalizeDAVOAuth checks a calendar or contacts step signing in with
// OAuth: a server URL (not a folder), with the address in place of EMAIL
// in Google's CardDAV URL.
func normalizeDAVOAuth(in *StepInput) error {
	if in.URL == "" {
		return fmt.Errorf("%w: an OAuth sign-in needs the server's url, not a folder", ErrStepInput)
	}
	if strings.Contains(in.URL, "/EMAIL/") {
		if !strings.Contains(in.Username, "@") {
			return fmt.Errorf("%w: give your Google address as username: it goes into the CardDAV URL in place of EMAIL", ErrStepInput)
		}
		in.URL = strings.Replace(in.URL, "/EMAIL/", "/"+in.Username+"/", 1)
	}
	if !strings.HasPrefix(in.URL, "https://") && !strings.HasPrefix(in.URL, "http://") {
		return fmt.Errorf("%w: %q is not an http(s) URL", ErrStepInput, in.URL)
	}
	return nil
}

func purposeOf(step string) oauth.Purpose {
	switch step {
	case StepCalendar:
		return oauth.Calendar
	case StepContacts:
		return oauth.Contacts
	}
	return oauth.Mail
}

// connectNote is the answer of a step that could not be tested because
// the account is not signed in (or the daemon does not know it yet).
func connectNote(name, why string) map[string]any {
	return map[string]any{"tested": false, "connect": "hestia accounts connect " + name,
		"note": why + ": run hestia accounts connect " + name + " to sign in, then restart Hestia (Settings → Restart now) if it was running when the account was added"}
}

// testOAuth tests a step with the account's token, or says how to
// connect when there is none yet.
func (s *Service) testOAuth(ctx context.Context, step string, in StepInput) (map[string]any, error) {
	if s.OAuthTokens == nil {
		return connectNote(in.OAuthAccount, "not tested: this process has no OAuth accounts"), nil
	}
	tokens, err := s.OAuthTokens(in.OAuthAccount, purposeOf(step))
	if err != nil || tokens == nil {
		return connectNote(in.OAuthAccount, "not tested: the running daemon does not know OAuth account "+in.OAuthAccount+" yet"), nil
	}
	tok, err := tokens.Token(ctx)
	switch {
	case errors.Is(err, oauth.ErrNotConnected):
		return connectNote(in.OAuthAccount, "not tested: OAuth account "+in.OAuthAccount+" is not signed in yet"), nil
	case errors.Is(err, oauth.ErrReconnect):
		return connectNote(in.OAuthAccount, "not tested: OAuth account "+in.OAuthAccount+" must be signed in again"), nil
	case err != nil:
		return nil, &StepError{Part: "OAuth token of " + in.OAuthAccount, Err: err}
	}
	switch step {
	case StepMail:
		n, err := testIMAP(ctx, in, tokens)
		if err != nil {
			return nil, err
		}
		if err := testSMTP(ctx, in, tokens); err != nil {
			return nil, err
		}
		return map[string]any{"mailboxes": n, "oauth_account": in.OAuthAccount}, nil
	case StepCalendar, StepContacts:
		proto := "CalDAV"
		if step == StepContacts {
			proto = "CardDAV"
		}
		if err := propfindAuth(ctx, in.URL, tok.SetAuthHeader); err != nil {
			return nil, &StepError{Part: proto, Err: err}
		}
		return map[string]any{"url": in.URL, "oauth_account": in.OAuthAccount}, nil
	}
	return nil, fmt.Errorf("%w: step %s has no OAuth sign-in", ErrStepInput, step)
}

// saveOAuth tests (where it can) and saves an OAuth step: the
// [[oauth.accounts]] entry when missing, then the account.
func (s *Service) saveOAuth(ctx context.Context, step string, in StepInput) (map[string]any, error) {
	s.mu.Lock()
	cfg, _, err := s.current()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var oauthFields [][2]any
	existing, ok := cfg.OAuth.Account(in.OAuthAccount)
	if !ok {
		// A client id may be left out where this build carries one for
		// the provider (config.PackagedClient).
		clientID := in.ClientID
		if packaged, _ := config.PackagedClient(s.Env, in.OAuthProvider); clientID == "" && packaged != "" {
			clientID = packaged
		}
		if err := need([2]string{"oauth_provider", in.OAuthProvider}, [2]string{"client_id", clientID}); err != nil {
			return nil, fmt.Errorf("%w (no OAuth account %s in config.toml yet: give the provider and the client id you registered, see docs/oauth.md)", err, in.OAuthAccount)
		}
		oauthFields = [][2]any{{"name", in.OAuthAccount}, {"provider", in.OAuthProvider}}
		if in.ClientID != "" {
			oauthFields = append(oauthFields, [2]any{"client_id", in.ClientID})
		}
		if in.Tenant != "" {
			oauthFields = append(oauthFields, [2]any{"tenant", in.Tenant})
		}
	} else if in.OAuthProvider != "" && in.OAuthProvider != existing.Provider {
		return nil, fmt.Errorf("%w: OAuth account %s is a %s account, not %s", ErrStepInput, in.OAuthAccount, existing.Provider, in.OAuthProvider)
	}
	if (step == StepCalendar || step == StepContacts) && (existing.Provider == "microsoft" || (!ok && in.OAuthProvider == "microsoft")) {
		return nil, fmt.Errorf("%w: Microsoft 365 calendars and contacts are reached through Microsoft Graph, not CalDAV/CardDAV", ErrStepInput)
	}
	found, err := s.testOAuth(ctx, step, in)
	if err != nil {
		return nil, err
	}
	if oauthFields != nil && in.ClientSecret != "" {
		path, err := writeSecret(s.Paths, "oauth-"+in.OAuthAccount+"-client", in.ClientSecret)
		if err != nil {
			return nil, err
		}
		oauthFields = append(oauthFields, [2]any{"client_secret_file", path})
	}
	var section string
	var fields [][2]any
	switch step {
	case StepMail:
		section = "mail.accounts"
		fields = [][2]any{{"name", in.Name}, {"address", in.Address}, {"username", in.Username},
			{"auth", config.AuthOAuth2}, {"oauth_account", in.OAuthAccount},
			{"imap_host", in.IMAPHost}, {"imap_port", in.IMAPPort}, {"imap_security", in.IMAPSecurity},
			{"smtp_host", in.SMTPHost}, {"smtp_port", in.SMTPPort}, {"smtp_security", in.SMTPSecurity}, {"save_sent", in.SaveSent}}
	case StepCalendar:
		section = "calendar.caldav"
	case StepContacts:
		section = "contacts.carddav"
	}
	if fields == nil {
		fields = [][2]any{{"name", in.Name}, {"url", in.URL}, {"auth", config.AuthOAuth2}, {"oauth_account", in.OAuthAccount}}
	}
	edit := func(d *doc) error {
		if oauthFields != nil {
			if err := d.appendEntry("oauth.accounts", oauthFields); err != nil {
				return err
			}
		}
		d.dropEntry(section, "name", in.Name)
		return d.appendEntry(section, fields)
	}
	if _, _, err := s.applyDoc(ctx, edit); err != nil {
		return nil, err
	}
	found["saved"] = step
	found["file"] = s.Paths.ConfigFile()
	return found, nil
}
