package config

import (
	"strings"
	"testing"
)

func TestMatrixChannelDefaultsAndAccepted(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Channels.Matrix; m.Enabled() || m.Homeserver != "" {
		t.Errorf("defaults = %+v", m)
	}
	cases := []struct {
		name, file string
		env        map[string]string
		check      func(MatrixChannel) bool
	}{
		{"inline", "[channels.matrix]\nhomeserver = \"https://matrix.example.org\"\ntoken = \"syt_aGVzdGlh_abc\"\nowners = [\"@me:example.org\"]\ncontacts = [\"@anna:example.org:chat+approve\", \"@bob:other.net:8448\"]\n", nil,
			func(m MatrixChannel) bool { return m.Enabled() && m.Homeserver == "https://matrix.example.org" }},
		{"file", "[channels.matrix]\nhomeserver = \"https://example.org/matrix\"\ntoken_file = \"/etc/hestia/matrix-token\"\nowners = [\"@me:example.org\"]\n", nil,
			func(m MatrixChannel) bool { return m.Enabled() && m.TokenFile == "/etc/hestia/matrix-token" }},
		{"loopback http", "[channels.matrix]\nhomeserver = \"http://127.0.0.1:8008\"\ntoken = \"t\"\nowners = [\"@me:localhost\"]\n", nil,
			func(m MatrixChannel) bool { return m.Homeserver == "http://127.0.0.1:8008" }},
		{"localhost http", "[channels.matrix]\nhomeserver = \"http://localhost:8008\"\ntoken = \"t\"\nowners = [\"@me:localhost\"]\n", nil,
			func(m MatrixChannel) bool { return m.Enabled() }},
		{"env", "[channels.matrix]\nowners = [\"@me:example.org\"]\n", map[string]string{"HESTIA_CHANNELS_MATRIX_TOKEN": "syt_env", "HESTIA_CHANNELS_MATRIX_HOMESERVER": "https://hs.example.org"},
			func(m MatrixChannel) bool { return m.Token == "syt_env" && m.Homeserver == "https://hs.example.org" }},
		{"off", "[channels.matrix]\nowners = []\n", nil, func(m MatrixChannel) bool { return !m.Enabled() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := load(t, tc.file, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(cfg.Channels.Matrix) {
				t.Errorf("matrix = %+v", cfg.Channels.Matrix)
			}
		})
	}
}

func TestMatrixChannelRefusals(t *testing.T) {
	t.Parallel()
	const base = "[channels.matrix]\nowners = [\"@me:example.org\"]\n"
	const hs = "homeserver = \"https://matrix.example.org\"\n"
	cases := []struct {
		name, file string
		want       []string // substrings of the error
		hidden     []string // must not appear in it
	}{
		{"no owner", "[channels.matrix]\ntoken = \"syt_1\"\n" + hs, []string{"channels.matrix.owners", "your own id"}, nil},
		{"owner not an mxid", "[channels.matrix]\ntoken = \"syt_1\"\n" + hs + "owners = [\"me\"]\n", []string{"channels.matrix.owners", `"me"`, "@you:example.org"}, nil},
		{"owner without server", "[channels.matrix]\ntoken = \"syt_1\"\n" + hs + "owners = [\"@me\"]\n", []string{"channels.matrix.owners", `"@me"`}, nil},
		{"contact not an mxid", base + hs + "token = \"syt_1\"\ncontacts = [\"anna@example.org\"]\n", []string{"channels.matrix.contacts", "anna@example.org"}, nil},
		{"no homeserver", base + "token = \"syt_1\"\n", []string{"channels.matrix.homeserver", "https://matrix.example.org"}, nil},
		{"homeserver without token", base + hs, []string{"channels.matrix.token", "token_file"}, nil},
		{"plain http", base + "token = \"syt_1\"\nhomeserver = \"http://matrix.example.org\"\n", []string{"channels.matrix.homeserver", "in the clear"}, nil},
		{"api path", base + "token = \"syt_1\"\nhomeserver = \"https://matrix.example.org/_matrix/client/v3\"\n", []string{"channels.matrix.homeserver", "without /_matrix"}, nil},
		{"not a url", base + "token = \"syt_1\"\nhomeserver = \"matrix.example.org\"\n", []string{"channels.matrix.homeserver", "https URL"}, nil},
		{"relative file", base + hs + "token_file = \"matrix-token\"\n", []string{"channels.matrix.token_file", "absolute path"}, nil},
		{"token with spaces", base + hs + "token = \"syt_secretpart and more\"\n", []string{"channels.matrix.token", "without spaces"}, []string{"secretpart"}},
		{"old key", base + hs + "token = \"syt_1\"\napi_url = \"https://matrix.example.org\"\n", []string{"unknown key", "channels.matrix.api_url"}, nil},
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
