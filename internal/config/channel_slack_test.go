package config

import (
	"strings"
	"testing"
)

func TestSlackChannelDefaultsAndAccepted(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Channels.Slack; s.Enabled() || s.Mode != "socket" || s.APIURL != "https://slack.com/api" {
		t.Errorf("defaults = %+v", s)
	}
	cases := []struct {
		name, file string
		env        map[string]string
		check      func(SlackChannel) bool
	}{
		{"socket", "[channels.slack]\ntoken = \"xoxb-1-2\"\napp_token = \"xapp-1-A-2\"\nowners = [\"U0OWNER\"]\ncontacts = [\"U0ANNA:chat\"]\n", nil,
			func(s SlackChannel) bool { return s.Enabled() && s.Mode == "socket" && s.AppToken == "xapp-1-A-2" }},
		{"events from files", "[channels.slack]\nmode = \"events\"\ntoken_file = \"/etc/hestia/slack-bot\"\nsigning_secret_file = \"/etc/hestia/slack-signing\"\nowners = [\"U0OWNER\"]\n", nil,
			func(s SlackChannel) bool {
				return s.Enabled() && s.Mode == "events" && s.SigningSecretFile == "/etc/hestia/slack-signing"
			}},
		{"env", "[channels.slack]\nowners = [\"U0OWNER\"]\n", map[string]string{"HESTIA_CHANNELS_SLACK_TOKEN": "xoxb-env", "HESTIA_CHANNELS_SLACK_APP_TOKEN_FILE": "/run/secrets/xapp"},
			func(s SlackChannel) bool { return s.Token == "xoxb-env" && s.AppTokenFile == "/run/secrets/xapp" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, tc.file, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg.Channels.Slack) {
				t.Errorf("slack = %+v", cfg.Channels.Slack)
			}
		})
	}
}

func TestSlackChannelRefusals(t *testing.T) {
	t.Parallel()
	const base = "[channels.slack]\nowners = [\"U0OWNER\"]\n"
	cases := []struct {
		name, file string
		want       []string // substrings of the error
		hidden     []string // must not appear in it
	}{
		{"no owner", "[channels.slack]\ntoken = \"xoxb-1\"\napp_token = \"xapp-1\"\n", []string{"channels.slack.owners", "your own id"}, nil},
		{"bad mode", base + "token = \"xoxb-1\"\napp_token = \"xapp-1\"\nmode = \"webhook\"\n", []string{"channels.slack.mode", `"webhook"`, `"socket"`, `"events"`}, nil},
		{"socket without app token", base + "token = \"xoxb-1\"\n", []string{"channels.slack.app_token", "xapp-", "app_token_file"}, nil},
		{"events without secret", base + "token = \"xoxb-1\"\nmode = \"events\"\n", []string{"channels.slack.signing_secret", "signing_secret_file"}, nil},
		{"user token", base + "token = \"xoxp-1234-secretpart\"\napp_token = \"xapp-1\"\n", []string{"channels.slack.token", `"xoxp-…"`, "xoxb-"}, []string{"secretpart"}},
		{"bot token as app token", base + "token = \"xoxb-1\"\napp_token = \"xoxb-9999-secretpart\"\n", []string{"channels.slack.app_token", "xapp-"}, []string{"secretpart"}},
		{"relative file", base + "token_file = \"slack-bot\"\napp_token = \"xapp-1\"\n", []string{"channels.slack.token_file", "absolute path"}, nil},
		{"relative signing file", base + "token = \"xoxb-1\"\nmode = \"events\"\nsigning_secret_file = \"sign\"\n", []string{"channels.slack.signing_secret_file", "absolute path"}, nil},
		{"bad api url", base + "token = \"xoxb-1\"\napp_token = \"xapp-1\"\napi_url = \"slack.com\"\n", []string{"channels.slack.api_url", "https://slack.com/api"}, nil},
		{"app token alone", "[channels.slack]\napp_token = \"xapp-1-secretpart\"\n", []string{"channels.slack.token", "bot token"}, []string{"secretpart"}},
		{"unknown key", base + "bot_token = \"xoxb-1\"\n", []string{"unknown key", "channels.slack.bot_token"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, nil)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, h := range tc.hidden {
				if strings.Contains(err.Error(), h) {
					t.Errorf("error %q shows the secret %q", err, h)
				}
			}
		})
	}
}
