package davtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// BearerServer fronts a DAV server (Radicale) with OAuth bearer tokens the
// way Google's CalDAV and CardDAV endpoints behave: a request without a
// bearer token gets 401 with a bare Bearer challenge, one whose token
// Check refuses gets 401 with error="invalid_token" (RFC 6750 §3.1), and
// a good one is forwarded with Basic auth as the token's user, which is
// how Radicale (auth type none) learns whose principal it is.
type BearerServer struct {
	URL string
	// Check says whose token it is, or false for an unknown, expired or
	// revoked one (the fake provider's introspection).
	Check func(token string) (user string, ok bool)

	mu      sync.Mutex // guards the counts below
	refused int
	passed  int
	basic   int // requests that came with Basic auth instead
}

// StartBearer starts a BearerServer in front of target (a base URL from
// Start or StartRadicale); it stops with the test.
func StartBearer(t testing.TB, target string, check func(token string) (string, bool)) *BearerServer {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	b := &BearerServer{Check: check}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		tok, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			b.count(&b.refused)
			if strings.HasPrefix(auth, "Basic ") {
				b.count(&b.basic)
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="dav"`)
			http.Error(w, "bearer token required", http.StatusUnauthorized)
			return
		}
		user, ok := b.Check(strings.TrimSpace(tok))
		if !ok {
			b.count(&b.refused)
			w.Header().Set("WWW-Authenticate", `Bearer realm="dav", error="invalid_token", error_description="Invalid Credentials"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		b.count(&b.passed)
		r.Header.Del("Authorization")
		r.SetBasicAuth(user, "x")
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b.URL = srv.URL + "/"
	return b
}

func (b *BearerServer) count(n *int) {
	b.mu.Lock()
	*n++
	b.mu.Unlock()
}

// Counts returns how many requests were forwarded, refused with a 401,
// and came with Basic auth (a client that ignored the bearer setting).
func (b *BearerServer) Counts() (passed, refused, basic int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.passed, b.refused, b.basic
}

// Introspect returns a Check that asks an RFC 7662 introspection endpoint
// (oauthtest's) whether a token is active, and whose.
func Introspect(endpoint string) func(token string) (string, bool) {
	return func(tok string) (string, bool) {
		resp, err := http.PostForm(endpoint, url.Values{"token": {tok}})
		if err != nil {
			return "", false
		}
		defer resp.Body.Close()
		var r struct {
			Active   bool   `json:"active"`
			Username string `json:"username"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || !r.Active {
			return "", false
		}
		return r.Username, true
	}
}
