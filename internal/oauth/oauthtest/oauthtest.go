// Package oauthtest is an in-process OAuth 2.0 authorization server for
// tests: what Hestia's OAuth client and the services that check its tokens
// (dovecot's oauth2 passdb, a fake Graph or DAV server) talk to.
//
// Endpoints (relative to URL):
//
//	GET  /authorize    RFC 6749 §4.1.1 with PKCE required (RFC 7636, S256);
//	                   consents at once, or shows an Allow/Deny page
//	POST /authorize    the page's answer
//	POST /token        authorization_code (checks the PKCE verifier and
//	                   redirect_uri), refresh_token (optional rotation,
//	                   scope narrowing), device_code (RFC 8628 §3.4)
//	POST /device       RFC 8628 §3.1 device authorization
//	GET|POST /verify   the page where a user approves a device code
//	POST /introspect   RFC 7662 (also GET with ?access_token= or a Bearer
//	                   header, as dovecot's introspection modes send it)
//	POST /revoke       RFC 7009
//
// Time is the server's own clock (Advance), so tests control expiry.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. Zero values pick the defaults noted.
type Options struct {
	ClientID     string // default "hestia-test"
	ClientSecret string // "": a public client, PKCE only
	// User is the signed-in user: introspection's username and email.
	User string // default "user@example.org"
	// AccessTTL is an access token's lifetime (default 1h).
	AccessTTL time.Duration
	// Rotate hands out a new refresh token at each refresh; the old one
	// is then refused with invalid_grant.
	Rotate bool
	// ConsentPage shows an Allow/Deny page at /authorize instead of
	// consenting at once (a browser test clicks through it).
	ConsentPage bool
	// Deny makes the automatic consent a refusal (error=access_denied).
	Deny bool
	// OmitRefresh leaves the refresh token out of the code exchange.
	OmitRefresh bool
	// DeviceInterval is the polling interval sent with a device code, in
	// seconds (default 5); DeviceTTL its lifetime (default 10m).
	DeviceInterval int
	DeviceTTL      time.Duration
	// Now is the base clock (default time.Now); Advance moves it on.
	Now func() time.Time
}

// Server is a running fake authorization server.
type Server struct {
	URL string
	srv *httptest.Server

	mu     sync.Mutex // guards everything below
	opts   Options
	offset time.Duration
	codes  map[string]*authCode
	grants map[string]*grantRec // by refresh token
	access map[string]*accessRec
	device map[string]*deviceRec // by device code
	// pending consent pages, by id
	pending map[string]url.Values
	stats   Stats
}

// Stats counts requests by kind.
type Stats struct {
	Authorize, CodeExchanges, Refreshes, DevicePolls, Introspections, Revocations int
	// RefreshScopes are the scope parameters of the refreshes, in order.
	RefreshScopes []string
}

type authCode struct {
	clientID, redirect, challenge, scope string
	expires                              time.Time
	used                                 bool
	grant                                *grantRec // set once exchanged
}

type grantRec struct {
	id       int
	refresh  string
	scope    []string
	user     string
	revoked  bool
	clientID string
}

type accessRec struct {
	grant   *grantRec
	scope   []string
	expires time.Time
	revoked bool
}

type deviceRec struct {
	userCode string
	scope    string
	expires  time.Time
	state    string   // "pending", "approved", "denied"
	script   []string // errors to answer first, one per poll
	done     bool
}

// New starts a server; Close stops it.
func New(opts Options) *Server {
	if opts.ClientID == "" {
		opts.ClientID = "hestia-test"
	}
	if opts.User == "" {
		opts.User = "user@example.org"
	}
	if opts.AccessTTL == 0 {
		opts.AccessTTL = time.Hour
	}
	if opts.DeviceInterval == 0 {
		opts.DeviceInterval = 5
	}
	if opts.DeviceTTL == 0 {
		opts.DeviceTTL = 10 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, codes: map[string]*authCode{}, grants: map[string]*grantRec{},
		access: map[string]*accessRec{}, device: map[string]*deviceRec{}, pending: map[string]url.Values{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /authorize", s.consent)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /device", s.deviceAuth)
	mux.HandleFunc("GET /verify", s.verifyPage)
	mux.HandleFunc("POST /verify", s.verify)
	mux.HandleFunc("/introspect", s.introspect)
	mux.HandleFunc("/introspect/", s.introspect)
	mux.HandleFunc("POST /revoke", s.revoke)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Client is an HTTP client for the server that does not follow redirects
// (a test plays the browser and follows them itself).
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Endpoint URLs.
func (s *Server) AuthURL() string       { return s.URL + "/authorize" }
func (s *Server) TokenURL() string      { return s.URL + "/token" }
func (s *Server) DeviceAuthURL() string { return s.URL + "/device" }
func (s *Server) VerifyURL() string     { return s.URL + "/verify" }
func (s *Server) IntrospectURL() string { return s.URL + "/introspect" }
func (s *Server) RevokeURL() string     { return s.URL + "/revoke" }

// ClientID is the one registered client's id.
func (s *Server) ClientID() string { return s.opts.ClientID }

// Advance moves the server's clock on (expiring codes and tokens).
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	s.offset += d
	s.mu.Unlock()
}

// SetRotate turns refresh token rotation on or off.
func (s *Server) SetRotate(on bool) {
	s.mu.Lock()
	s.opts.Rotate = on
	s.mu.Unlock()
}

// SetAccessTTL changes the lifetime of access tokens issued from now on.
func (s *Server) SetAccessTTL(d time.Duration) {
	s.mu.Lock()
	s.opts.AccessTTL = d
	s.mu.Unlock()
}

func (s *Server) now() time.Time { return s.opts.Now().Add(s.offset) }

// Stats returns the request counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.RefreshScopes = slices.Clone(s.stats.RefreshScopes)
	return st
}

// RevokeAll revokes every grant and access token, as a user removing the
// app's access at the provider would: refreshes then get invalid_grant.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.grants {
		g.revoked = true
	}
	for _, a := range s.access {
		a.revoked = true
	}
}

// ExpireAccessTokens makes every access token issued so far inactive.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.access {
		a.revoked = true
	}
}

// Mint issues a grant directly, without a flow: for a test that needs a
// token a service will accept. scope "" grants "mail".
func (s *Server) Mint(scope string) (access, refresh string) {
	if scope == "" {
		scope = "mail"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.newGrant(strings.Fields(scope), s.opts.ClientID)
	return s.newAccess(g, g.scope), g.refresh
}

// ActiveAccess reports whether an access token would be introspected as
// active.
func (s *Server) ActiveAccess(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.access[token]
	return a != nil && s.activeLocked(a)
}

// ScriptDevice makes the next device polls answer these errors in order
// (e.g. "authorization_pending", "slow_down") before the device code's
// real state is answered.
func (s *Server) ScriptDevice(errs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.device {
		if !d.done {
			d.script = append(d.script, errs...)
		}
	}
}

// ApproveDevice and DenyDevice decide every pending device code, as the
// user would on the verification page.
func (s *Server) ApproveDevice() { s.decideDevices("approved") }
func (s *Server) DenyDevice()    { s.decideDevices("denied") }

func (s *Server) decideDevices(state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.device {
		if d.state == "pending" {
			d.state = state
		}
	}
}

// newToken is a random opaque token with a recognisable prefix.
func newToken(prefix string) string {
	b := make([]byte, 24)
	rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) newGrant(scope []string, clientID string) *grantRec {
	g := &grantRec{id: len(s.grants) + 1, refresh: newToken("rt-"), scope: scope, user: s.opts.User, clientID: clientID}
	s.grants[g.refresh] = g
	return g
}

func (s *Server) newAccess(g *grantRec, scope []string) string {
	tok := newToken("at-")
	s.access[tok] = &accessRec{grant: g, scope: scope, expires: s.now().Add(s.opts.AccessTTL)}
	return tok
}

func (s *Server) activeLocked(a *accessRec) bool {
	return !a.revoked && !a.grant.revoked && s.now().Before(a.expires)
}

// loopbackRedirect accepts what RFC 8252 §7.3 allows: http on a loopback
// host with any port.
func loopbackRedirect(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Port() == "" || u.Fragment != "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.stats.Authorize++
	s.mu.Unlock()
	// RFC 6749 §4.1.2.1: a bad client or redirect is shown, not redirected.
	if q.Get("client_id") != s.opts.ClientID {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	if !loopbackRedirect(q.Get("redirect_uri")) {
		http.Error(w, "redirect_uri must be a loopback http URL with a port", http.StatusBadRequest)
		return
	}
	if q.Get("response_type") != "code" {
		redirectError(w, r, q, "unsupported_response_type", "only code")
		return
	}
	if q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256" {
		redirectError(w, r, q, "invalid_request", "PKCE with S256 is required")
		return
	}
	if s.opts.ConsentPage {
		id := newToken("req-")
		s.mu.Lock()
		s.pending[id] = q
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		consentTmpl.Execute(w, map[string]string{"ID": id, "Scope": q.Get("scope")})
		return
	}
	if s.opts.Deny {
		redirectError(w, r, q, "access_denied", "the user said no")
		return
	}
	s.grantCode(w, r, q)
}

var consentTmpl = template.Must(template.New("c").Parse(`<!doctype html><html><head><title>Fake provider: consent</title></head>
<body><h1>Allow Hestia?</h1><p>It asks for: <span id="scope">{{.Scope}}</span></p>
<form method="post" action="/authorize"><input type="hidden" name="request" value="{{.ID}}">
<button name="decision" value="allow" id="allow">Allow</button>
<button name="decision" value="deny" id="deny">Deny</button></form></body></html>
`))

func (s *Server) consent(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	s.mu.Lock()
	q, ok := s.pending[r.PostForm.Get("request")]
	delete(s.pending, r.PostForm.Get("request"))
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such consent request", http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("decision") != "allow" {
		redirectError(w, r, q, "access_denied", "the user said no")
		return
	}
	s.grantCode(w, r, q)
}

func (s *Server) grantCode(w http.ResponseWriter, r *http.Request, q url.Values) {
	code := newToken("code-")
	s.mu.Lock()
	s.codes[code] = &authCode{clientID: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		scope: q.Get("scope"), expires: s.now().Add(time.Minute)}
	s.mu.Unlock()
	u, _ := url.Parse(q.Get("redirect_uri"))
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func redirectError(w http.ResponseWriter, r *http.Request, q url.Values, code, desc string) {
	u, _ := url.Parse(q.Get("redirect_uri"))
	v := u.Query()
	v.Set("error", code)
	v.Set("error_description", desc)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// clientAuth checks the client (RFC 6749 §2.3): Basic or form fields; a
// confidential client must prove its secret.
func (s *Server) clientAuth(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.opts.ClientID {
		return id, false
	}
	if s.opts.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.ClientSecret)) != 1 {
		return id, false
	}
	return id, true
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	clientID, ok := s.clientAuth(r)
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := r.PostForm
	switch f.Get("grant_type") {
	case "authorization_code":
		s.stats.CodeExchanges++
		c := s.codes[f.Get("code")]
		switch {
		case c == nil:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown code")
			return
		case c.used:
			// RFC 6749 §4.1.2: a code used twice revokes what it gave.
			if c.grant != nil {
				c.grant.revoked = true
			}
			oauthError(w, http.StatusBadRequest, "invalid_grant", "code already used")
			return
		case !s.now().Before(c.expires):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "code expired")
			return
		case c.clientID != clientID || c.redirect != f.Get("redirect_uri"):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri or client does not match the authorization request")
			return
		}
		c.used = true
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if f.Get("code_verifier") == "" || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.challenge)) != 1 {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
			return
		}
		g := s.newGrant(strings.Fields(c.scope), clientID)
		c.grant = g
		s.issue(w, g, g.scope, !s.opts.OmitRefresh)
	case "refresh_token":
		s.stats.Refreshes++
		s.stats.RefreshScopes = append(s.stats.RefreshScopes, f.Get("scope"))
		g := s.grants[f.Get("refresh_token")]
		if g == nil || g.revoked || g.clientID != clientID {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "the refresh token is invalid, expired or revoked")
			return
		}
		scope := g.scope
		if sc := f.Get("scope"); sc != "" {
			scope = strings.Fields(sc)
			for _, x := range scope {
				if !slices.Contains(g.scope, x) {
					oauthError(w, http.StatusBadRequest, "invalid_scope", "scope "+x+" was not granted")
					return
				}
			}
		}
		if s.opts.Rotate {
			delete(s.grants, g.refresh)
			g.refresh = newToken("rt-")
			s.grants[g.refresh] = g
		}
		s.issue(w, g, scope, s.opts.Rotate)
	case "urn:ietf:params:oauth:grant-type:device_code":
		s.stats.DevicePolls++
		d := s.device[f.Get("device_code")]
		switch {
		case d == nil || d.done:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown device code")
			return
		case len(d.script) > 0:
			e := d.script[0]
			d.script = d.script[1:]
			oauthError(w, http.StatusBadRequest, e, "scripted")
			return
		case !s.now().Before(d.expires):
			oauthError(w, http.StatusBadRequest, "expired_token", "the device code expired")
			return
		case d.state == "denied":
			d.done = true
			oauthError(w, http.StatusBadRequest, "access_denied", "the user said no")
			return
		case d.state == "pending":
			oauthError(w, http.StatusBadRequest, "authorization_pending", "waiting for the user")
			return
		}
		d.done = true
		g := s.newGrant(strings.Fields(d.scope), clientID)
		s.issue(w, g, g.scope, true)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type "+f.Get("grant_type"))
	}
}

// issue answers a token response; mu is held.
func (s *Server) issue(w http.ResponseWriter, g *grantRec, scope []string, withRefresh bool) {
	resp := map[string]any{
		"access_token": s.newAccess(g, scope),
		"token_type":   "Bearer",
		"expires_in":   int(s.opts.AccessTTL / time.Second),
		"scope":        strings.Join(scope, " "),
	}
	if withRefresh {
		resp["refresh_token"] = g.refresh
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) deviceAuth(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if r.PostForm.Get("client_id") != s.opts.ClientID {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client")
		return
	}
	dc, uc := newToken("dc-"), fmt.Sprintf("%04X-%04X", randInt(), randInt())
	s.mu.Lock()
	s.device[dc] = &deviceRec{userCode: uc, scope: r.PostForm.Get("scope"), expires: s.now().Add(s.opts.DeviceTTL), state: "pending"}
	interval := s.opts.DeviceInterval
	ttl := s.opts.DeviceTTL
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"device_code": dc, "user_code": uc,
		"verification_uri":          s.VerifyURL(),
		"verification_uri_complete": s.VerifyURL() + "?user_code=" + url.QueryEscape(uc),
		"expires_in":                int(ttl / time.Second), "interval": interval,
	})
}

func randInt() uint16 {
	var b [2]byte
	rand.Read(b[:])
	return uint16(b[0])<<8 | uint16(b[1])
}

var verifyTmpl = template.Must(template.New("v").Parse(`<!doctype html><html><head><title>Fake provider: device</title></head>
<body><h1>Connect a device</h1><form method="post" action="/verify">
<input name="user_code" id="user_code" value="{{.}}">
<button name="decision" value="allow" id="allow">Allow</button>
<button name="decision" value="deny" id="deny">Deny</button></form></body></html>
`))

func (s *Server) verifyPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	verifyTmpl.Execute(w, r.URL.Query().Get("user_code"))
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	code := strings.ToUpper(strings.TrimSpace(r.PostForm.Get("user_code")))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.device {
		if d.userCode == code && d.state == "pending" {
			d.state = "denied"
			if r.PostForm.Get("decision") == "allow" {
				d.state = "approved"
			}
			fmt.Fprintln(w, "Done: you can go back to your device.")
			return
		}
	}
	http.Error(w, "no such code", http.StatusBadRequest)
}

// introspect answers RFC 7662 §2.2. The token comes in the form (POST),
// the query (?token= or ?access_token=, or appended to the URL as
// dovecot's "get" mode does) or a Bearer header (its "auth" mode).
func (s *Server) introspect(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	tok := r.Form.Get("token")
	if tok == "" {
		tok = r.Form.Get("access_token")
	}
	if tok == "" {
		if h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
			tok = strings.TrimSpace(h)
		}
	}
	if tok == "" {
		tok = strings.TrimPrefix(r.URL.Path, "/introspect/")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Introspections++
	a := s.access[tok]
	if a == nil || !s.activeLocked(a) {
		writeJSON(w, http.StatusOK, map[string]any{"active": false})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"active": true, "scope": strings.Join(a.scope, " "), "client_id": a.grant.clientID,
		"username": a.grant.user, "email": a.grant.user, "sub": a.grant.user,
		"token_type": "Bearer", "exp": a.expires.Unix(), "iat": a.expires.Add(-s.opts.AccessTTL).Unix(),
	})
}

// revoke follows RFC 7009 §2.2: 200 whether or not the token was known.
func (s *Server) revoke(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if _, ok := s.clientAuth(r); !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Revocations++
	if g := s.grants[tok]; g != nil {
		g.revoked = true
	}
	if a := s.access[tok]; a != nil {
		a.revoked = true
	}
	w.WriteHeader(http.StatusOK)
}
