package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// oauthReconnectPoll is how often the daemon looks for grants found dead
// by another process (a CLI command, a doctor run) to notify about.
const oauthReconnectPoll = time.Minute

// OAuth returns the manager of the [[oauth.accounts]], built on first use
// (the CLI's accounts commands use it without serving). Components that
// reach an OAuth account (IMAP/SMTP, CalDAV, Graph) take their token
// Source from it.
func (a *App) OAuth() (*oauth.Manager, error) {
	a.oauth.once.Do(func() {
		a.oauth.kick = make(chan struct{}, 1)
		a.oauth.mgr, a.oauth.err = a.buildOAuth()
	})
	return a.oauth.mgr, a.oauth.err
}

// oauthState is the App's OAuth manager, built once.
type oauthState struct {
	once sync.Once
	mgr  *oauth.Manager
	err  error
	// kick wakes oauthReconnects when a refresh here found a dead grant.
	kick chan struct{}
	// attempts are the sign-ins the web app started (accounts_http.go);
	// nil unless serving.
	attempts *oauth.Attempts
}

func (a *App) buildOAuth() (*oauth.Manager, error) {
	accts, err := oauthAccounts(a.Config.OAuth)
	if err != nil {
		return nil, err
	}
	return oauth.NewManager(accts, oauth.Options{
		Dir: oauth.Dir(a.Paths.Data), Now: a.Now,
		Log: a.Log.With("component", "oauth"),
		// The fast path of the notification; oauthReconnects finds the
		// ones another process discovered.
		OnReconnect: func(ctx context.Context, re *oauth.ReconnectError) {
			select {
			case a.oauth.kick <- struct{}{}:
			default:
			}
		},
	})
}

// oauthAccounts turns the configuration into accounts, reading client
// secret files.
func oauthAccounts(c config.OAuthConfig) ([]oauth.Account, error) {
	var out []oauth.Account
	for i, ca := range c.Accounts {
		var p oauth.Provider
		switch ca.Provider {
		case "google":
			p = oauth.Google()
		case "microsoft":
			p = oauth.Microsoft(ca.Tenant)
		default:
			p = oauth.Custom(ca.AuthURL, ca.TokenURL, ca.DeviceURL, ca.RevokeURL, ca.Scopes)
		}
		acct := oauth.Account{Name: ca.Name, Provider: p, ClientID: ca.ClientID, ClientSecret: ca.ClientSecret, Scopes: ca.Scopes}
		if ca.ClientSecretFile != "" {
			s, err := readSecret(fmt.Sprintf("oauth.accounts[%d].client_secret", i), "", ca.ClientSecretFile)
			if err != nil {
				return nil, err
			}
			acct.ClientSecret = s
		}
		out = append(out, acct)
	}
	return out, nil
}

// initOAuth wires the accounts: the web app's routes (accounts_http.go),
// and the daemon notifies the user when a grant is found dead (once per
// connection: the notification key carries the connection's time). Doctor checks come from oauthChecks, so that
// `hestia doctor` shows them with or without a daemon.
func (a *App) initOAuth(ctx context.Context) error {
	if a.Server != nil {
		if err := a.routeAccounts(); err != nil {
			return err
		}
	}
	if len(a.Config.OAuth.Accounts) == 0 {
		return nil
	}
	if _, err := a.OAuth(); err != nil {
		return err
	}
	if a.Server != nil {
		a.AddWorker("oauth.reconnects", a.oauthReconnects)
	}
	return nil
}

// oauthChecks is one doctor check per account: ok with the token's
// expiry; a failure naming the command when the grant is dead; a warning
// when not yet connected or the provider is unreachable for now.
func (a *App) oauthChecks() []doctor.Check {
	if len(a.Config.OAuth.Accounts) == 0 {
		return nil
	}
	m, err := a.OAuth()
	if err != nil {
		return []doctor.Check{{Name: "oauth", Run: func(context.Context) (doctor.Status, string) { return doctor.Fail, err.Error() }}}
	}
	var checks []doctor.Check
	for _, name := range m.Names() {
		checks = append(checks, doctor.Check{Name: "oauth." + name, Run: func(ctx context.Context) (doctor.Status, string) {
			return oauthCheckResult(ctx, m, name)
		}})
	}
	return checks
}

func oauthCheckResult(ctx context.Context, m *oauth.Manager, name string) (doctor.Status, string) {
	st, err := m.Check(ctx, name)
	switch {
	case err == nil:
		d := "connected (" + st.Provider + ")"
		if !st.Expiry.IsZero() {
			d += "; token valid until " + st.Expiry.Local().Format("2006-01-02 15:04") + ", renewed by itself"
		}
		return doctor.OK, d
	case errors.Is(err, oauth.ErrNotConnected):
		return doctor.Warn, "not connected yet: run hestia accounts connect " + name
	case errors.Is(err, oauth.ErrReconnect):
		return doctor.Fail, "reconnect with hestia accounts connect " + name + ": " + err.Error()
	default:
		return doctor.Warn, "could not renew the token just now (will retry): " + err.Error()
	}
}

// oauthReconnects notifies about each dead grant once: at start (found
// while the daemon was down), when a refresh here finds one (kicked), and
// every oauthReconnectPoll for those another process found. Once the
// account is connected again its notification is marked read.
func (a *App) oauthReconnects(ctx context.Context) error {
	m, err := a.OAuth()
	if err != nil {
		return err
	}
	notified := map[string]string{} // account → key of its open notification
	t := time.NewTicker(oauthReconnectPoll)
	defer t.Stop()
	for {
		a.notifyReconnects(ctx, m, notified)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.oauth.kick:
		}
	}
}

func (a *App) notifyReconnects(ctx context.Context, m *oauth.Manager, notified map[string]string) {
	n := a.Notify
	if n == nil {
		return
	}
	dead := map[string]bool{}
	for _, re := range m.Reconnects() {
		dead[re.Account] = true
		acct, _ := m.Account(re.Account)
		key := "oauth-reconnect:" + re.Account + ":" + strconv.FormatInt(m.ConnectedAt(re.Account).Unix(), 10)
		if notified[re.Account] == key {
			continue
		}
		_, err := n.Notify(ctx, notify.Notification{
			Kind: "account", Key: key, URL: "/settings",
			Title: "Reconnect your " + providerLabel(acct.Provider.Name) + " account " + re.Account,
			Body: "Hestia can no longer sign in to " + re.Account + " (" + re.Code + "), so its mail, calendar and contacts are not updated. " +
				"Run: hestia accounts connect " + re.Account,
		})
		if err != nil {
			if ctx.Err() == nil {
				a.Log.Warn("oauthNotify", "account", re.Account, "err", err)
			}
			continue
		}
		notified[re.Account] = key
	}
	for name, key := range notified {
		if !dead[name] {
			if err := n.MarkReadKey(ctx, key); err == nil || ctx.Err() != nil {
				delete(notified, name)
			}
		}
	}
}

func providerLabel(p string) string {
	switch p {
	case "google":
		return "Google"
	case "microsoft":
		return "Microsoft"
	}
	return p
}
