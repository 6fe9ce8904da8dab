package oauthtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, u string, form url.Values, basic ...string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if len(basic) == 2 {
		req.SetBasicAuth(basic[0], basic[1])
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// Introspection answers in each way dovecot's oauth2 passdb asks, and
// turns inactive on expiry and revocation.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	s := New(Options{User: "anna@example.org", AccessTTL: time.Hour})
	defer s.Close()
	access, _ := s.Mint("mail calendar")
	ways := map[string]func() *http.Request{
		"post form": func() *http.Request {
			r, _ := http.NewRequest("POST", s.IntrospectURL(), strings.NewReader(url.Values{"token": {access}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			return r
		},
		"get query": func() *http.Request {
			r, _ := http.NewRequest("GET", s.IntrospectURL()+"?access_token="+url.QueryEscape(access), nil)
			return r
		},
		"bearer": func() *http.Request {
			r, _ := http.NewRequest("GET", s.IntrospectURL(), nil)
			r.Header.Set("Authorization", "Bearer "+access)
			return r
		},
		"appended": func() *http.Request {
			r, _ := http.NewRequest("GET", s.IntrospectURL()+"/"+access, nil)
			return r
		},
	}
	for name, req := range ways {
		code, out := do(t, req())
		if code != 200 || out["active"] != true || out["username"] != "anna@example.org" || out["email"] != "anna@example.org" || out["scope"] != "mail calendar" {
			t.Errorf("%s: %d %v", name, code, out)
		}
	}
	if _, out := post(t, s.IntrospectURL(), url.Values{"token": {"at-unknown"}}); out["active"] != false || len(out) != 1 {
		t.Errorf("unknown token: %v", out)
	}
	s.Advance(2 * time.Hour)
	if _, out := do(t, ways["post form"]()); out["active"] != false {
		t.Errorf("expired token: %v", out)
	}
}

func TestRefreshRotationScopeAndRevocation(t *testing.T) {
	t.Parallel()
	s := New(Options{ClientSecret: "sec", Rotate: true})
	defer s.Close()
	_, refresh := s.Mint("mail calendar")
	form := func(rt, scope string) url.Values {
		v := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
		if scope != "" {
			v.Set("scope", scope)
		}
		return v
	}
	if code, out := post(t, s.TokenURL(), form(refresh, "")); code != 401 || out["error"] != "invalid_client" {
		t.Errorf("no client secret: %d %v", code, out)
	}
	code, out := post(t, s.TokenURL(), form(refresh, "mail"), s.ClientID(), "sec")
	next, _ := out["refresh_token"].(string)
	if code != 200 || out["scope"] != "mail" || next == "" || next == refresh {
		t.Fatalf("rotation: %d %v", code, out)
	}
	if code, out := post(t, s.TokenURL(), form(refresh, ""), s.ClientID(), "sec"); code != 400 || out["error"] != "invalid_grant" {
		t.Errorf("old refresh token: %d %v", code, out)
	}
	if code, out := post(t, s.TokenURL(), form(next, "tasks"), s.ClientID(), "sec"); code != 400 || out["error"] != "invalid_scope" {
		t.Errorf("wider scope: %d %v", code, out)
	}
	if code, _ := post(t, s.RevokeURL(), url.Values{"token": {next}, "token_type_hint": {"refresh_token"}}, s.ClientID(), "sec"); code != 200 {
		t.Errorf("revoke: %d", code)
	}
	if code, out := post(t, s.TokenURL(), form(next, ""), s.ClientID(), "sec"); code != 400 || out["error"] != "invalid_grant" {
		t.Errorf("after revocation: %d %v", code, out)
	}
	if code, _ := post(t, s.RevokeURL(), url.Values{"token": {"never-issued"}}, s.ClientID(), "sec"); code != 200 {
		t.Errorf("revoking an unknown token: %d, want 200 (RFC 7009 §2.2)", code)
	}
	if st := s.Stats(); st.Refreshes != 4 || st.Revocations != 2 {
		t.Errorf("stats = %+v", st)
	}
}

func TestAuthorizeRefusesBadRequests(t *testing.T) {
	t.Parallel()
	s := New(Options{})
	defer s.Close()
	base := url.Values{"response_type": {"code"}, "client_id": {s.ClientID()}, "redirect_uri": {"http://127.0.0.1:5000/"},
		"state": {"x"}, "code_challenge": {"abc"}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for name, c := range map[string]struct {
		key, value string
		status     int
	}{
		"other client":   {"client_id", "evil", 400},
		"remote":         {"redirect_uri", "http://evil.example:5000/", 400},
		"no port":        {"redirect_uri", "http://127.0.0.1/", 400},
		"https loopback": {"redirect_uri", "https://127.0.0.1:5000/", 400},
		"no pkce":        {"code_challenge", "", 302},
	} {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		v.Set(c.key, c.value)
		resp, err := noFollow.Get(s.AuthURL() + "?" + v.Encode())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d, want %d", name, resp.StatusCode, c.status)
		}
		if c.status == 302 && !strings.Contains(resp.Header.Get("Location"), "error=invalid_request") {
			t.Errorf("%s: redirected to %s", name, resp.Header.Get("Location"))
		}
	}
}
