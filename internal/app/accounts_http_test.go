package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/oauth"
	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// The web app connects an account through the daemon: the connect answers
// the provider's address at once, the browser (here a client following
// redirects) consents and lands on the daemon's loopback listener, the
// account turns ok; disconnect revokes and deletes the tokens. No answer
// ever carries a token.
func TestAccountsHTTPConnectFlow(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	clk := &testClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := oauthApp(t, srv, clk)
	base, stop := start(t, a)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	var bodies []string
	call := func(method, path string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		bodies = append(bodies, string(b))
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, v
	}

	code, list := call("GET", "/api/accounts")
	accts, _ := list["accounts"].([]any)
	if code != 200 || len(accts) != 1 || accts[0].(map[string]any)["state"] != oauth.StateNotConnected {
		t.Fatalf("list: %d %v", code, list)
	}
	code, res := call("POST", "/api/accounts/work/connect")
	authURL, _ := res["auth_url"].(string)
	if code != 200 || !strings.HasPrefix(authURL, srv.AuthURL()+"?") {
		t.Fatalf("connect: %d %v", code, res)
	}
	if c := res["account"].(map[string]any)["connect"].(map[string]any); c["state"] != oauth.AttemptWaiting {
		t.Errorf("connect answer's attempt = %v", c)
	}
	// The address is for the one who started it, not for readers.
	if _, v := call("GET", "/api/accounts/work"); strings.Contains(toJSON(t, v), "state=") || v["connect"].(map[string]any)["state"] != oauth.AttemptWaiting {
		t.Errorf("account while waiting: %v", v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "You can close this tab") {
		t.Fatalf("browser: %d %s", resp.StatusCode, page)
	}
	var got map[string]any
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		// The grant is stored a moment before the sign-in records its end.
		if _, got = call("GET", "/api/accounts/work"); got["connect"].(map[string]any)["state"] != oauth.AttemptWaiting {
			break
		}
	}
	if got["state"] != oauth.StateOK || got["connect"].(map[string]any)["state"] != oauth.AttemptConnected || got["provider"] != "custom" {
		t.Fatalf("account after consent: %v", got)
	}
	tokFile := filepath.Join(oauth.Dir(a.Paths.Data), "work.json")
	raw, err := os.ReadFile(tokFile)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		RefreshToken string `json:"refresh_token"`
	}
	json.Unmarshal(raw, &g)
	if len(g.RefreshToken) < 10 {
		t.Fatalf("token file has no refresh token: %d bytes", len(raw))
	}

	if code, v := call("POST", "/api/accounts/nope/connect"); code != 404 || !strings.Contains(toJSON(t, v), "no OAuth account named") {
		t.Errorf("unknown account: %d %v", code, v)
	}
	code, res = call("POST", "/api/accounts/work/disconnect")
	if code != 200 || res["revoked"] != true || res["account"].(map[string]any)["state"] != oauth.StateNotConnected {
		t.Fatalf("disconnect: %d %v", code, res)
	}
	if _, err := os.Stat(tokFile); !os.IsNotExist(err) {
		t.Errorf("token file after disconnect: %v", err)
	}
	if s := srv.Stats(); s.Revocations != 1 {
		t.Errorf("revocations = %d", s.Revocations)
	}
	if code, v := call("POST", "/api/accounts/work/disconnect"); code != 409 || !strings.Contains(toJSON(t, v), "not_connected") {
		t.Errorf("second disconnect: %d %v", code, v)
	}
	// A sign-in left waiting is stopped by a disconnect.
	call("POST", "/api/accounts/work/connect")
	if code, v := call("POST", "/api/accounts/work/disconnect"); code != 200 || v["cancelled"] != true {
		t.Errorf("disconnect while waiting: %d %v", code, v)
	}
	for _, b := range bodies {
		if strings.Contains(b, g.RefreshToken) || strings.Contains(b, "at-") || strings.Contains(b, "access_token") {
			t.Errorf("an answer carries a token: %s", b)
		}
	}
}

// Connecting and disconnecting need admin: a paired phone with the default
// scopes (and a request with no identity) is refused before anything runs.
func TestAccountsHTTPNeedsAdmin(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	a := oauthApp(t, srv, &testClock{t: time.Now()})
	phone := devices.WithIdentity(context.Background(), devices.Identity{DeviceID: "d1", Name: "phone", Scopes: devices.DefaultScopes})
	for _, c := range []struct {
		name string
		ctx  context.Context
		h    http.HandlerFunc
		path string
		want string
	}{
		{"phone connects", phone, a.handleAccountConnect, "/api/accounts/work/connect", `lacks the admin scope to connect an account`},
		{"phone disconnects", phone, a.handleAccountDisconnect, "/api/accounts/work/disconnect", `lacks the admin scope to disconnect an account`},
		{"no identity", context.Background(), a.handleAccountConnect, "/api/accounts/work/connect", "carries no device identity"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequestWithContext(c.ctx, "POST", c.path, nil)
		r.SetPathValue("name", "work")
		c.h(w, r)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), c.want) {
			t.Errorf("%s: %d %s", c.name, w.Code, w.Body)
		}
	}
	if a.oauth.attempts != nil {
		if _, ok := a.oauth.attempts.Attempt("work"); ok {
			t.Error("a refused request started a sign-in")
		}
	}
	if s := srv.Stats(); s.Authorize != 0 {
		t.Errorf("the provider was asked: %+v", s)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
