package config

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestOAuthValidation(t *testing.T) {
	t.Parallel()
	google := OAuthAccount{Name: "gmail", Provider: "google", ClientID: "123.apps.googleusercontent.com", ClientSecretFile: "/home/me/.config/hestia/secrets/google"}
	ms := OAuthAccount{Name: "work", Provider: "microsoft", ClientID: "0000-1111", Tenant: "contoso.onmicrosoft.com"}
	custom := OAuthAccount{Name: "corp", Provider: "custom", ClientID: "hestia", Scopes: []string{"mail"},
		AuthURL: "https://id.example.org/authorize", TokenURL: "https://id.example.org/token", DeviceURL: "http://127.0.0.1:9000/device"}
	with := func(a OAuthAccount, f func(*OAuthAccount)) []OAuthAccount { f(&a); return []OAuthAccount{a} }
	cases := []struct {
		name     string
		accounts []OAuthAccount
		wantKey  string
		wantText string
	}{
		{"none", nil, "", ""},
		{"presets and custom", []OAuthAccount{google, ms, custom}, "", ""},
		{"bad name", with(google, func(a *OAuthAccount) { a.Name = "My Gmail" }), "oauth.accounts[0].name", "lower-case"},
		{"path name", with(google, func(a *OAuthAccount) { a.Name = "../x" }), "oauth.accounts[0].name", ""},
		{"duplicate", []OAuthAccount{google, google}, "oauth.accounts[1].name", "no other"},
		{"unknown provider", with(google, func(a *OAuthAccount) { a.Provider = "yahoo" }), "oauth.accounts[0].provider", "google, microsoft, custom"},
		{"no client id", with(ms, func(a *OAuthAccount) { a.ClientID = "" }), "oauth.accounts[0].client_id", "docs/oauth.md"},
		{"relative secret file", with(google, func(a *OAuthAccount) { a.ClientSecretFile = "secret.txt" }), "oauth.accounts[0].client_secret_file", "absolute"},
		{"tenant on google", with(google, func(a *OAuthAccount) { a.Tenant = "common" }), "oauth.accounts[0].tenant", "only applies"},
		{"bad tenant", with(ms, func(a *OAuthAccount) { a.Tenant = "a/b" }), "oauth.accounts[0].tenant", "organizations"},
		{"scope with space", with(ms, func(a *OAuthAccount) { a.Scopes = []string{"a b"} }), "oauth.accounts[0].scopes[0]", "without spaces"},
		{"custom without scopes", with(custom, func(a *OAuthAccount) { a.Scopes = nil }), "oauth.accounts[0].scopes", "no defaults"},
		{"custom without token url", with(custom, func(a *OAuthAccount) { a.TokenURL = "" }), "oauth.accounts[0].token_url", "endpoint"},
		{"custom plain http", with(custom, func(a *OAuthAccount) { a.AuthURL = "http://id.example.org/authorize" }), "oauth.accounts[0].auth_url", "https:// for a provider"},
		{"custom bad url", with(custom, func(a *OAuthAccount) { a.RevokeURL = "id.example.org/revoke" }), "oauth.accounts[0].revoke_url", "https://"},
		{"endpoint on a preset", with(google, func(a *OAuthAccount) { a.TokenURL = "https://evil.example/token" }), "oauth.accounts[0].token_url", "only for provider = \"custom\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			errs := OAuthConfig{Accounts: c.accounts}.validate()
			if c.wantKey == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors %v", errs)
				}
				return
			}
			var ce *Error
			if len(errs) == 0 || !errors.As(errs[0], &ce) || ce.Key != c.wantKey {
				t.Fatalf("errors %v, want key %s", errs, c.wantKey)
			}
			if !strings.Contains(ce.Error(), c.wantKey) || !strings.Contains(ce.Error(), c.wantText) {
				t.Errorf("message %q does not name the key and %q", ce.Error(), c.wantText)
			}
		})
	}
}

// [[oauth.accounts]] parses from TOML, unknown keys are refused, and the
// whole configuration is validated with it.
func TestOAuthParse(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
[[oauth.accounts]]
name = "gmail"
provider = "google"
client_id = "123.apps.googleusercontent.com"

[[oauth.accounts]]
name = "work"
provider = "microsoft"
client_id = "0000-1111"
tenant = "organizations"
scopes = ["offline_access", "https://outlook.office.com/IMAP.AccessAsUser.All"]
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := cfg.OAuth.Account("work"); !ok || a.Tenant != "organizations" || len(a.Scopes) != 2 {
		t.Errorf("work = %+v", a)
	}
	if _, ok := cfg.OAuth.Account("nope"); ok {
		t.Error("found an account that is not there")
	}
	_, err = Parse([]byte("[[oauth.accounts]]\nname = \"x\"\nprovider = \"google\"\nclient_id = \"c\"\nclient_secret = \"inline\"\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "oauth.accounts.client_secret") {
		t.Errorf("an inline client_secret was accepted: %v", err)
	}
	_, err = Parse([]byte("[[oauth.accounts]]\nname = \"x\"\nprovider = \"google\"\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "oauth.accounts[0].client_id") {
		t.Errorf("missing client_id: %v", err)
	}
}

// A build (or the service's environment) may carry the OAuth client for a
// preset provider: an account without a client_id uses it, secret and
// all; the account's own client_id and secret file win; a custom provider
// never takes it; without one, the error names the variable.
func TestPackagedOAuthClient(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"HESTIA_OAUTH_GOOGLE_CLIENT_ID":     "packaged.apps.googleusercontent.com",
		"HESTIA_OAUTH_GOOGLE_CLIENT_SECRET": "not-so-secret",
		"HESTIA_OAUTH_MICROSOFT_CLIENT_ID":  " 0000-packaged \n",
	}
	env := func(k string) string { return vars[k] }
	cfg, err := Parse([]byte(`
[[oauth.accounts]]
name = "gmail"
provider = "google"

[[oauth.accounts]]
name = "own"
provider = "google"
client_id = "mine.apps.googleusercontent.com"

[[oauth.accounts]]
name = "own-secret"
provider = "google"
client_secret_file = "/home/me/secret"

[[oauth.accounts]]
name = "work"
provider = "microsoft"
`), env)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{
		"gmail":      {"packaged.apps.googleusercontent.com", "not-so-secret", "true"},
		"own":        {"mine.apps.googleusercontent.com", "", "false"},
		"own-secret": {"packaged.apps.googleusercontent.com", "", "true"},
		"work":       {"0000-packaged", "", "true"},
	}
	for name, w := range want {
		a, _ := cfg.OAuth.Account(name)
		if got := [3]string{a.ClientID, a.ClientSecret, strconv.FormatBool(a.Packaged)}; got != w {
			t.Errorf("%s: client %q, secret %q, packaged %s; want %v", name, got[0], got[1], got[2], w)
		}
	}
	_, err = Parse([]byte("[[oauth.accounts]]\nname = \"corp\"\nprovider = \"custom\"\nscopes = [\"mail\"]\nauth_url = \"https://id.example/a\"\ntoken_url = \"https://id.example/t\"\n"), env)
	if err == nil || !strings.Contains(err.Error(), "oauth.accounts[0].client_id") {
		t.Errorf("a custom provider took a packaged client: %v", err)
	}
	_, err = Parse([]byte("[[oauth.accounts]]\nname = \"work\"\nprovider = \"microsoft\"\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "HESTIA_OAUTH_MICROSOFT_CLIENT_ID") {
		t.Errorf("error without a packaged client: %v", err)
	}
	// What main builds in fills only what the environment leaves empty.
	layered := WithDefaults(func(k string) string {
		if k == "HESTIA_OAUTH_GOOGLE_CLIENT_ID" {
			return "from-env"
		}
		return ""
	}, map[string]string{"HESTIA_OAUTH_GOOGLE_CLIENT_ID": "built-in", "HESTIA_OAUTH_MICROSOFT_CLIENT_ID": "built-in-ms"})
	if id, _ := PackagedClient(layered, "google"); id != "from-env" {
		t.Errorf("google = %q, want the environment's", id)
	}
	if id, _ := PackagedClient(layered, "microsoft"); id != "built-in-ms" {
		t.Errorf("microsoft = %q, want the built-in one", id)
	}
}
