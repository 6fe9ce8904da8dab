package config

import (
	"errors"
	"strings"
	"testing"
)

func TestGraphValidation(t *testing.T) {
	t.Parallel()
	oauth := OAuthConfig{Accounts: []OAuthAccount{
		{Name: "work", Provider: "microsoft", ClientID: "0000"},
		{Name: "gmail", Provider: "google", ClientID: "1.apps.googleusercontent.com"},
	}}
	good := GraphAccount{Name: "m365", OAuthAccount: "work"}
	with := func(f func(*GraphAccount)) GraphAccount { a := good; f(&a); return a }
	cases := []struct {
		name     string
		cal      []GraphAccount
		contacts []GraphAccount
		wantKey  string
		wantText string
	}{
		{"none", nil, nil, "", ""},
		{"both sections, same name", []GraphAccount{good}, []GraphAccount{good}, "", ""},
		{"national cloud", []GraphAccount{with(func(a *GraphAccount) { a.BaseURL = "https://graph.microsoft.us/v1.0" })}, nil, "", ""},
		{"loopback fake", []GraphAccount{with(func(a *GraphAccount) { a.BaseURL = "http://127.0.0.1:8080/v1.0" })}, nil, "", ""},
		{"no name", []GraphAccount{with(func(a *GraphAccount) { a.Name = "" })}, nil, "calendar.graph[0].name", "non-empty"},
		{"slash", nil, []GraphAccount{with(func(a *GraphAccount) { a.Name = "a/b" })}, "contacts.graph[0].name", "without slashes"},
		{"taken by caldav", []GraphAccount{with(func(a *GraphAccount) { a.Name = "fastmail" })}, nil, "calendar.graph[0].name", "unique"},
		{"duplicate", []GraphAccount{good, good}, nil, "calendar.graph[1].name", "unique"},
		{"no oauth account", []GraphAccount{with(func(a *GraphAccount) { a.OAuthAccount = "" })}, nil, "calendar.graph[0].oauth_account", "microsoft\" [[oauth.accounts]] entry: work"},
		{"unknown oauth account", nil, []GraphAccount{with(func(a *GraphAccount) { a.OAuthAccount = "home" })}, "contacts.graph[0].oauth_account", "work"},
		{"google account", []GraphAccount{with(func(a *GraphAccount) { a.OAuthAccount = "gmail" })}, nil, "calendar.graph[0].oauth_account", "CalDAV"},
		{"empty only", []GraphAccount{with(func(a *GraphAccount) { a.Only = []string{" "} })}, nil, "calendar.graph[0].only[0]", "name"},
		{"plain http", []GraphAccount{with(func(a *GraphAccount) { a.BaseURL = "http://graph.example.org/v1.0" })}, nil, "calendar.graph[0].base_url", "https"},
		{"bad url", []GraphAccount{with(func(a *GraphAccount) { a.BaseURL = "graph.microsoft.com" })}, nil, "calendar.graph[0].base_url", "root URL"},
		{"credentials in url", []GraphAccount{with(func(a *GraphAccount) { a.BaseURL = "https://u:p@graph.microsoft.com/v1.0" })}, nil, "calendar.graph[0].base_url", "root URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := &Config{OAuth: oauth}
			cfg.Calendar.CalDAV = []DAVAccount{{Name: "fastmail"}}
			cfg.Calendar.Graph, cfg.Contacts.Graph = c.cal, c.contacts
			errs := cfg.validateGraph()
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
			if !strings.Contains(ce.Error(), c.wantText) {
				t.Errorf("message %q lacks %q", ce.Error(), c.wantText)
			}
		})
	}
}

// The sections parse from TOML and are validated with the rest.
func TestGraphParse(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`
[[oauth.accounts]]
name = "work"
provider = "microsoft"
client_id = "0000-1111"

[[calendar.graph]]
name = "m365"
oauth_account = "work"
only = ["Calendar", "Team"]

[[contacts.graph]]
name = "m365"
oauth_account = "work"
`), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Calendar.Graph) != 1 || cfg.Calendar.Graph[0].Only[1] != "Team" || len(cfg.Contacts.Graph) != 1 {
		t.Errorf("parsed %+v %+v", cfg.Calendar.Graph, cfg.Contacts.Graph)
	}
	_, err = Parse([]byte("[[calendar.graph]]\nname = \"m365\"\noauth_account = \"nope\"\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "calendar.graph[0].oauth_account") {
		t.Errorf("unknown account accepted: %v", err)
	}
	_, err = Parse([]byte("[[calendar.graph]]\nname = \"m365\"\naccount = \"work\"\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "calendar.graph.account") {
		t.Errorf("unknown key accepted: %v", err)
	}
}
