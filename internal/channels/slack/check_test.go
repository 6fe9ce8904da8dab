package slack

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
)

// The connection test proves the bot token (auth.test) and, in Socket
// Mode, the app-level token (apps.connections.open) without connecting or
// posting; refusals name the setting, never the token.
func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	who, err := f.a.Check(context.Background())
	if err != nil || who != "@hestia ("+slacktest.BotUserID+") in Hestia Test, Socket Mode" {
		t.Fatalf("Check = %q, %v", who, err)
	}
	if f.s.Calls("apps.connections.open") != 1 || f.s.Connects() != 0 || f.s.Calls("chat.postMessage") != 0 {
		t.Errorf("connections.open %d, connects %d, posts %d", f.s.Calls("apps.connections.open"), f.s.Connects(), f.s.Calls("chat.postMessage"))
	}

	ev := newFixture(t, ModeEvents)
	if who, err := ev.a.Check(context.Background()); err != nil || !strings.HasSuffix(who, "Events API") || ev.s.Calls("apps.connections.open") != 0 {
		t.Errorf("events mode: %q, %v, connections.open %d", who, err, ev.s.Calls("apps.connections.open"))
	}

	adapter := func(t *testing.T, url, bot, app string) *Adapter {
		t.Helper()
		a, err := New(Config{APIURL: url, BotToken: bot, AppToken: app}, &http.Client{Timeout: 5 * time.Second}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, c := range []struct {
		name, bot, app, fail, want string
	}{
		{"bot token refused", "xoxb-9-SECRETBOT", slacktest.AppToken, "", "invalid_auth; check channels.slack.token"},
		{"app token refused", slacktest.BotToken, "xapp-1-SECRETAPP", "", "invalid_auth; check channels.slack.app_token"},
		{"bot token given where the app token goes", slacktest.BotToken, "xapp-" + strings.TrimPrefix(slacktest.BotToken, "xoxb-"), "", "channels.slack.app_token"},
		{"deactivated", slacktest.BotToken, slacktest.AppToken, "account_inactive", "account_inactive; check channels.slack.token"},
		{"outage", slacktest.BotToken, slacktest.AppToken, "service_unavailable", "auth.test: service_unavailable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := slacktest.New(t)
			if c.fail != "" {
				s.Fail("auth.test", c.fail)
			}
			_, err := adapter(t, s.APIURL, c.bot, c.app).Check(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			for _, secret := range []string{c.bot, c.app, "SECRET"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a token: %v", err)
				}
			}
		})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/api"
	ln.Close()
	if _, err := adapter(t, dead, slacktest.BotToken, slacktest.AppToken).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "channels.slack.api_url") {
		t.Errorf("unreachable: %v", err)
	}
}
