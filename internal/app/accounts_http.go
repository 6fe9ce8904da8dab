package app

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/httpjson"
	"github.com/hestia-dev/hestia/internal/oauth"
)

// accountsConnectTimeout bounds a sign-in started from the web app, as
// `hestia accounts connect` bounds its own by default.
const accountsConnectTimeout = 5 * time.Minute

// accountsDisconnectTimeout bounds the revocation request to the provider.
const accountsDisconnectTimeout = 30 * time.Second

// routeAccounts serves the [[oauth.accounts]] to the web app: their state
// (read), and connecting and disconnecting them (admin: a sign-in decides
// whose mail the assistant reads; the route table gives writes only the
// chat scope, so the handlers ask for admin themselves).
//
// Connecting runs the same loopback sign-in as `hestia accounts connect`
// in the daemon, without opening a browser: the page opens the address it
// is answered in a new tab, and the provider redirects that tab to the
// daemon's listener on 127.0.0.1. That works only for a browser on the
// daemon's machine; elsewhere `hestia accounts connect NAME --device`.
func (a *App) routeAccounts() error {
	m, err := a.OAuth()
	if err != nil {
		return err
	}
	a.oauth.attempts = oauth.NewAttempts(m, accountsConnectTimeout)
	a.OnClose(a.oauth.attempts.Close)
	mux := a.Server.API()
	mux.HandleFunc("GET /api/accounts", a.handleAccounts)
	mux.HandleFunc("GET /api/accounts/{name}", a.handleAccount)
	mux.HandleFunc("POST /api/accounts/{name}/connect", a.handleAccountConnect)
	mux.HandleFunc("POST /api/accounts/{name}/disconnect", a.handleAccountDisconnect)
	return nil
}

// accountJSON is an account's state without any secret, with the sign-in
// the web app started for it, if any.
type accountJSON struct {
	oauth.Status
	Connect *oauth.Attempt `json:"connect,omitempty"`
}

// oauthAttempts returns the manager and the background sign-ins (made by
// routeAccounts when serving, and stopped when the App closes).
func (a *App) oauthAttempts() (*oauth.Manager, *oauth.Attempts, error) {
	m, err := a.OAuth()
	if err != nil {
		return nil, nil, err
	}
	if a.oauth.attempts == nil {
		return nil, nil, errors.New("the daemon is not serving: no sign-in can run here")
	}
	return m, a.oauth.attempts, nil
}

// accountView is the account's state; a sign-in that succeeded and a
// token file since deleted (a disconnect from the CLI) are shown as they
// are now.
func accountView(m *oauth.Manager, s *oauth.Attempts, name string) (accountJSON, error) {
	st, err := m.Status(name)
	if err != nil {
		return accountJSON{}, err
	}
	out := accountJSON{Status: st}
	if at, ok := s.Attempt(name); ok {
		out.Connect = &at
	}
	return out, nil
}

// accountErr turns the manager's errors into answers.
func accountErr(w http.ResponseWriter, r *http.Request, err error) {
	var ue *oauth.UnknownAccountError
	switch {
	case errors.As(err, &ue):
		httpjson.Error(w, http.StatusNotFound, httpjson.CodeNotFound, err.Error())
	case errors.Is(err, oauth.ErrNotConnected):
		httpjson.Error(w, http.StatusConflict, "not_connected", "the account is not connected")
	default:
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("reading the account failed", err))
	}
}

func (a *App) handleAccounts(w http.ResponseWriter, r *http.Request) {
	m, s, err := a.oauthAttempts()
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("loading the OAuth accounts failed", err))
		return
	}
	out := []accountJSON{}
	for _, name := range m.Names() {
		v, err := accountView(m, s, name)
		if err != nil {
			accountErr(w, r, err)
			return
		}
		out = append(out, v)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"accounts": out})
}

func (a *App) handleAccount(w http.ResponseWriter, r *http.Request) {
	m, s, err := a.oauthAttempts()
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("loading the OAuth accounts failed", err))
		return
	}
	v, err := accountView(m, s, r.PathValue("name"))
	if err != nil {
		accountErr(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, v)
}

// handleAccountConnect starts (or finds waiting) the account's sign-in and
// answers the address to open at once; the page polls GET
// /api/accounts/{name} for the outcome.
func (a *App) handleAccountConnect(w http.ResponseWriter, r *http.Request) {
	if err := devices.Require(r.Context(), devices.Admin, "connect an account"); err != nil {
		httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
		return
	}
	m, s, err := a.oauthAttempts()
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("loading the OAuth accounts failed", err))
		return
	}
	name := r.PathValue("name")
	u, _, err := s.Start(r.Context(), name)
	if err != nil {
		var ue *oauth.UnknownAccountError
		if errors.As(err, &ue) {
			accountErr(w, r, err)
			return
		}
		// A listener that could not start, a provider without an
		// authorization endpoint: the text is the user's to act on.
		httpjson.Error(w, http.StatusConflict, "connect_failed", err.Error())
		return
	}
	v, err := accountView(m, s, name)
	if err != nil {
		accountErr(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"auth_url": u, "account": v})
}

// handleAccountDisconnect stops a sign-in still waiting, revokes the grant
// where the provider can and deletes the token file.
func (a *App) handleAccountDisconnect(w http.ResponseWriter, r *http.Request) {
	if err := devices.Require(r.Context(), devices.Admin, "disconnect an account"); err != nil {
		httpjson.Error(w, http.StatusForbidden, "forbidden", err.Error())
		return
	}
	m, s, err := a.oauthAttempts()
	if err != nil {
		httpjson.Respond(w, r, 0, nil, httpjson.Internal("loading the OAuth accounts failed", err))
		return
	}
	name := r.PathValue("name")
	if _, err := m.Account(name); err != nil {
		accountErr(w, r, err)
		return
	}
	cancelled := s.Cancel(name)
	ctx, cancel := context.WithTimeout(r.Context(), accountsDisconnectTimeout)
	defer cancel()
	res, err := m.Disconnect(ctx, name)
	if err != nil && !(cancelled && errors.Is(err, oauth.ErrNotConnected)) {
		accountErr(w, r, err)
		return
	}
	v, err := accountView(m, s, name)
	if err != nil {
		accountErr(w, r, err)
		return
	}
	out := map[string]any{"revoked": res.Revoked, "cancelled": cancelled, "account": v}
	if res.RevokeErr != nil {
		out["revoke_error"] = res.RevokeErr.Error()
	}
	if res.ManageURL != "" {
		out["manage_url"] = res.ManageURL
	}
	httpjson.Write(w, http.StatusOK, out)
}
