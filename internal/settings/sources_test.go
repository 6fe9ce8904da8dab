package settings

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth"
)

const sourcesSample = `
[[calendar.sources]]
name = "personal"
path = "/home/me/.calendars/personal"

[[calendar.caldav]]
name = "fastmail"
url = "https://me:hunter2-in-url@caldav.example.org/dav/?token=query-secret"
username = "me"
password_file = "/home/me/.secrets/caldav"

[[contacts.sources]]
name = "book"
path = "/home/me/.contacts"
read_only = true

[[contacts.carddav]]
name = "work"
url = "https://carddav.example.org/"
username = "me@work"
password_env = "WORK_DAV_PASSWORD"

[mail]
sources = ["/mail/c"]

[telegram]
token = "123456:telegram-token-secret"
owner_id = 4242
contacts = ["77:chat+read"]

[channels.discord]
token = "discord-token-secret"
owners = ["123456789012345678"]
contacts = ["876543210987654321:chat"]

[mcp.servers.files]
command = "mcp-files"
args = ["--api-key", "args-secret"]

[mcp.servers.remote]
url = "https://mcp.example.org/mcp?key=mcp-query-secret"
headers_env = { Authorization = "MCP_TOKEN" }
disabled = true
`

func TestViewListsSourcesWithoutSecrets(t *testing.T) {
	s := newService(t, sourcesSample)
	s.MailSources = func(context.Context) ([]MailSource, error) {
		return []MailSource{{Path: "/mail/b", Account: "local"}, {Path: "/mail/a", Account: "old"}}, nil
	}
	s.Accounts = func(context.Context) ([]Account, error) {
		return []Account{{Name: "work", Provider: "microsoft", State: "reconnect needed", Detail: "invalid_grant"}}, nil
	}
	v, err := s.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	src := v.Sources
	if len(src.Calendars) != 1 || src.Calendars[0] != (Folder{Name: "personal", Path: "/home/me/.calendars/personal"}) {
		t.Errorf("calendars = %+v", src.Calendars)
	}
	if len(src.CalDAV) != 1 || src.CalDAV[0].URL != "https://caldav.example.org/dav/" || !src.CalDAV[0].PasswordSet || !src.CalDAV[0].PasswordFileSet {
		t.Errorf("caldav = %+v", src.CalDAV)
	}
	if len(src.Contacts) != 1 || !src.Contacts[0].ReadOnly {
		t.Errorf("contacts = %+v", src.Contacts)
	}
	if len(src.CardDAV) != 1 || !src.CardDAV[0].PasswordSet || src.CardDAV[0].PasswordFileSet || src.CardDAV[0].Username != "me@work" {
		t.Errorf("carddav = %+v", src.CardDAV)
	}
	if tg := src.Telegram; !tg.Enabled || tg.TokenFileSet || tg.OwnerID != 4242 || len(tg.Contacts) != 1 || tg.Contacts[0] != "77:chat+read" {
		t.Errorf("telegram = %+v", tg)
	}
	var discord, slack Channel
	for _, c := range src.Channels {
		switch c.Name {
		case "discord":
			discord = c
		case "slack":
			slack = c
		}
	}
	if len(src.Channels) != 6 || !discord.Enabled || len(discord.Owners) != 1 || discord.Owners[0] != "123456789012345678" || len(discord.Contacts) != 1 || slack.Enabled || slack.Owners == nil {
		t.Errorf("channels = %+v", src.Channels)
	}
	if len(src.Accounts) != 1 || src.Accounts[0].State != "reconnect needed" {
		t.Errorf("accounts = %+v", src.Accounts)
	}
	want := []MCPServer{{Name: "files", Command: "mcp-files"}, {Name: "remote", URL: "https://mcp.example.org/mcp", Disabled: true}}
	if len(src.MCP) != 2 || src.MCP[0] != want[0] || src.MCP[1] != want[1] {
		t.Errorf("mcp = %+v, want %+v", src.MCP, want)
	}
	if len(src.MailSources) != 3 || src.MailSources[0].Path != "/mail/a" || src.MailSources[2] != (MailSource{Path: "/mail/c", FromConfig: true}) {
		t.Errorf("mail sources = %+v, want sorted by path", src.MailSources)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2-in-url", "query-secret", "telegram-token-secret", "discord-token-secret", "args-secret", "mcp-query-secret", "/home/me/.secrets/caldav", "WORK_DAV_PASSWORD", "MCP_TOKEN"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("GET /api/settings contains %q: %s", secret, b)
		}
	}
}

func TestViewSourcesEmptyAndMailSourcesError(t *testing.T) {
	s := newService(t, "")
	s.MailSources = func(context.Context) ([]MailSource, error) { return nil, errors.New("mail store closed") }
	v, err := s.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v.Sources)
	// Empty lists are [] (not null) so the page shows its empty states.
	const want = `{"calendars":[],"caldav":[],"contacts":[],"carddav":[],"telegram":{"enabled":false,"token_file_set":false,"owner_id":0,"contacts":[]},"channels":[{"name":"slack","enabled":false,"owners":[],"contacts":[]},{"name":"discord","enabled":false,"owners":[],"contacts":[]},{"name":"whatsapp","enabled":false,"owners":[],"contacts":[]},{"name":"matrix","enabled":false,"owners":[],"contacts":[]},{"name":"signal","enabled":false,"owners":[],"contacts":[]},{"name":"email","enabled":false,"owners":[],"contacts":[]}],"accounts":[],"mcp_servers":[],"mail_sources":[],"mail_sources_error":"mail store closed"}`
	if string(b) != want {
		t.Errorf("sources = %s\nwant      %s", b, want)
	}
}

func TestPublicURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                              "",
		"https://u:p@h.example/x?t=1#f": "https://h.example/x",
		"http://127.0.0.1:8080/mcp":     "http://127.0.0.1:8080/mcp",
		"://bad":                        "",
	} {
		if got := publicURL(in); got != want {
			t.Errorf("publicURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// A sign-in the web app started shows in the Accounts section with its
// outcome, so a reloaded page knows it is waiting or why it failed.
func TestViewAccountsCarryTheirSignIn(t *testing.T) {
	s := newService(t, "")
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s.Accounts = func(context.Context) ([]Account, error) {
		return []Account{
			{Name: "home", Provider: "google", State: "ok"},
			{Name: "work", Provider: "custom", State: "not connected", Connect: &oauth.Attempt{Account: "work", State: oauth.AttemptFailed,
				Error: "connecting work: the sign-in was denied: the provider refused: access_denied (the user said no)", StartedAt: start, Deadline: start.Add(5 * time.Minute), FinishedAt: start.Add(time.Minute)}},
		}, nil
	}
	v, err := s.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v.Sources.Accounts)
	const want = `[{"name":"home","provider":"google","state":"ok"},{"name":"work","provider":"custom","state":"not connected","connect":{"account":"work","state":"failed","error":"connecting work: the sign-in was denied: the provider refused: access_denied (the user said no)","started_at":"2030-01-02T03:04:05Z","deadline":"2030-01-02T03:09:05Z","finished_at":"2030-01-02T03:05:05Z"}}]`
	if string(b) != want {
		t.Errorf("accounts = %s\nwant       %s", b, want)
	}
}
