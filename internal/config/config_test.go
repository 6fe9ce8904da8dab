package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func envMap(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestResolvePaths(t *testing.T) {
	t.Parallel()
	p, err := ResolvePaths(envMap(map[string]string{"HESTIA_HOME": "/srv/h", "XDG_DATA_HOME": "/x"}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Data != "/srv/h" || p.Config != "/srv/h" || p.TokenFile() != "/srv/h/auth-token" {
		t.Errorf("HESTIA_HOME paths = %+v", p)
	}
	p, err = ResolvePaths(envMap(map[string]string{"XDG_DATA_HOME": "/d", "XDG_CONFIG_HOME": "/c", "HOME": "/home/u"}))
	if err != nil {
		t.Fatal(err)
	}
	if p.Data != "/d/hestia" || p.Config != "/c/hestia" || p.ConfigFile() != "/c/hestia/config.toml" {
		t.Errorf("XDG paths = %+v", p)
	}
	p, _ = ResolvePaths(envMap(map[string]string{"HOME": "/home/u", "XDG_DATA_HOME": "relative"}))
	if p.Data != "/home/u/.local/share/hestia" || p.Config != "/home/u/.config/hestia" {
		t.Errorf("fallback paths = %+v (relative XDG values must be ignored per spec)", p)
	}
	if _, err := ResolvePaths(envMap(nil)); err == nil {
		t.Error("no HOME and no HESTIA_HOME accepted")
	}
}

func load(t *testing.T, file string, env map[string]string) (Config, error) {
	t.Helper()
	dir := t.TempDir()
	if file != "" {
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return Load(Paths{Data: dir, Config: dir, Logs: dir}, envMap(env))
}

func TestDefaultsWithNoFile(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:4317" || cfg.Log.Level != "info" || cfg.LLM.EffectiveTurnTimeout() != 30*time.Minute || cfg.LLM.LocalFirstTokenTimeout.D() != 15*time.Minute {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestFileAndEnvOverride(t *testing.T) {
	t.Parallel()
	cfg, err := load(t, `
[server]
addr = "127.0.0.1:5000"
[log]
level = "debug"
[llm]
timeout = "30s"
`, map[string]string{
		"HESTIA_LOG_LEVEL":    "warn",
		"HESTIA_LLM_BASE_URL": "http://127.0.0.1:11434/v1",
		"HESTIA_LLM_API_KEY":  "sk-secret-value",
		"HESTIA_LLM_MODEL":    "llama3",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr != "127.0.0.1:5000" {
		t.Errorf("addr = %q", cfg.Server.Addr)
	}
	if cfg.Log.Level != "warn" {
		t.Errorf("env did not override file: level = %q", cfg.Log.Level)
	}
	if cfg.LLM.EffectiveTurnTimeout() != 30*time.Second || cfg.LLM.Model != "llama3" || cfg.LLM.APIKey != "sk-secret-value" {
		t.Errorf("llm = %+v", cfg.LLM)
	}
	shown, err := cfg.Masked().TOML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(shown, "sk-secret-value") || !strings.Contains(shown, "********") {
		t.Errorf("secret not masked in show output:\n%s", shown)
	}
	if cfg.LLM.APIKey != "sk-secret-value" {
		t.Error("Masked modified the original")
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		env        map[string]string
		want       []string // substrings of the error
	}{
		{"unknown key", "[server]\nadress = \"x\"\n", nil, []string{"unknown key", "server.adress"}},
		{"unknown section", "[bogus]\nx = 1\n", nil, []string{"unknown key", "bogus"}},
		{"syntax", "[server\naddr=1", nil, []string{"line"}},
		{"wrong type", "[log]\nmax_size_mb = \"big\"\n", nil, []string{"max_size_mb"}},
		{"bad level", "[log]\nlevel = \"loud\"\n", nil, []string{"log.level", `"loud"`, "debug, info, warn, error"}},
		{"bad addr", "[server]\naddr = \"nonsense\"\n", nil, []string{"server.addr", `"nonsense"`, "host:port"}},
		{"remote without opt-in", "[server]\naddr = \"0.0.0.0:4317\"\n", nil, []string{"server.addr", "allow_remote", "tls_cert"}},
		{"remote without tls", "[server]\naddr = \"0.0.0.0:4317\"\nallow_remote = true\n", nil, []string{"tls_cert", "requires"}},
		{"bad duration", "[llm]\ntimeout = \"soon\"\n", nil, []string{"duration"}},
		{"timeout range", "[llm]\ntimeout = \"10ms\"\n", nil, []string{"llm.timeout", "between 1s and 1h"}},
		{"first token range", "[llm]\nfirst_token_timeout = \"0s\"\n", nil, []string{"llm.first_token_timeout", "between 1s and 2h0m0s"}},
		{"idle range", "", map[string]string{"HESTIA_LLM_IDLE_TIMEOUT": "2h"}, []string{"llm.idle_timeout", "between 1s and 1h0m0s"}},
		{"window range", "[llm]\ncontext_window = 100\n", nil, []string{"llm.context_window", "512"}},
		{"bad url", "[llm]\nbase_url = \"ftp://x\"\n", nil, []string{"llm.base_url", "ftp://x"}},
		{"env bad int", "", map[string]string{"HESTIA_LOG_MAX_SIZE_MB": "lots"}, []string{"HESTIA_LOG_MAX_SIZE_MB", "log.max_size_mb", "integer"}},
		{"env bad bool", "", map[string]string{"HESTIA_SERVER_ALLOW_REMOTE": "maybe"}, []string{"server.allow_remote", "true or false"}},
		{"env bad level", "", map[string]string{"HESTIA_LOG_LEVEL": "chatty"}, []string{"log.level", "chatty"}},
		{"carddav plain http", "[[contacts.carddav]]\nname = \"dav\"\nurl = \"http://dav.example.org/\"\n", nil, []string{"contacts.carddav[0].url", "https for a non-loopback server"}},
		{"carddav no url", "[[contacts.carddav]]\nname = \"dav\"\n", nil, []string{"contacts.carddav[0].url", "CardDAV server"}},
		{"carddav no password", "[[contacts.carddav]]\nname = \"dav\"\nurl = \"https://dav.example.org/\"\nusername = \"me\"\n", nil, []string{"contacts.carddav[0].password_env"}},
		{"carddav slash name", "[[contacts.carddav]]\nname = \"a/b\"\nurl = \"https://dav.example.org/\"\n", nil, []string{"contacts.carddav[0].name", "without slashes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(t, tc.file, tc.env)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestIsLoopbackHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "127.1.2.3": true, "0.0.0.0": false, "192.168.1.2": false, "example.com": false} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, got)
		}
	}
}

func TestWebAndDocsConfigRefusals(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Web.SearchURL = "ftp://x"
	c.Web.AllowHosts = []string{"ok.lan", "10.0.0.0/8", "bad host/x"}
	c.Docs.MaxBytes = 500 << 20
	err := c.Validate()
	for _, want := range []string{"web.search_url", "web.allow_hosts", "bad host/x", "docs.max_bytes"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "10.0.0.0/8") || strings.Contains(err.Error(), "ok.lan") {
		t.Errorf("valid allow_hosts refused: %v", err)
	}
}
