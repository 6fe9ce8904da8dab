package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/config"
)

func TestRemoteEnablePairDisable(t *testing.T) {
	t.Parallel()
	home, env, _ := daemonEnv(t)
	cfgPath := filepath.Join(home, "config.toml")
	before, _ := os.ReadFile(cfgPath)

	if r := run(t, home, env, "remote", "status"); r.code != 0 || !strings.Contains(r.stdout, "Remote access is off") {
		t.Fatalf("status off: %+v", r)
	}
	// Bad input changes nothing.
	for _, args := range [][]string{
		{"remote", "enable", "--host", "hestia.lan:4318"},
		{"remote", "enable", "--host", "hestia.lan", "--addr", "nowhere"},
		{"remote", "frobnicate"},
	} {
		if r := run(t, home, env, args...); r.code != 2 || r.stderr == "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if now, _ := os.ReadFile(cfgPath); string(now) != string(before) {
		t.Fatalf("a refused enable changed config.toml:\n%s", now)
	}

	r := run(t, home, env, "remote", "enable", "--host", "hestia.lan,192.168.7.7", "--addr", "127.0.0.1:4999")
	if r.code != 0 || !strings.Contains(r.stdout, "https://hestia.lan:4999") || !strings.Contains(r.stdout, "generated") {
		t.Fatalf("enable: %+v", r)
	}
	data, _ := os.ReadFile(cfgPath)
	if !strings.HasPrefix(string(data), string(before)) || !strings.Contains(string(data), "[server.remote]\nenabled = true\naddr = '127.0.0.1:4999'\nhosts = ['hestia.lan', '192.168.7.7']") {
		t.Fatalf("config.toml lost its lines or lacks the table:\n%s", data)
	}
	for _, p := range []string{cfgPath, filepath.Join(home, "tls", "remote-cert.pem"), filepath.Join(home, "tls", "remote-key.pem")} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v, want mode 0600", p, err, st)
		}
	}
	// Enabling again keeps the certificate (same fingerprint) and one table.
	r2 := run(t, home, env, "remote", "enable")
	if r2.code != 0 || !strings.Contains(r2.stdout, "kept") || fingerprintLine(r.stdout) != fingerprintLine(r2.stdout) || fingerprintLine(r.stdout) == "" {
		t.Fatalf("enable again: %+v", r2)
	}
	if data, _ := os.ReadFile(cfgPath); strings.Count(string(data), "[server.remote]") != 1 || !strings.Contains(string(data), "hestia.lan") {
		t.Fatalf("re-enable wrote:\n%s", data)
	}

	r = run(t, home, env, "pair", "--json")
	var p struct{ Code, Link, Fingerprint string }
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.Fingerprint != fingerprintLine(r2.stdout) ||
		p.Link != "https://hestia.lan:4999/pair#code="+p.Code+"&fp="+strings.ReplaceAll(p.Fingerprint, ":", "") {
		t.Fatalf("pair with remote on: %v %+v", err, r)
	}
	if r := run(t, home, env, "pair", "--no-qr"); r.code != 0 || !strings.Contains(r.stdout, p.Fingerprint) || !strings.Contains(r.stdout, "https://hestia.lan:4999/pair#code=") {
		t.Fatalf("pair text: %+v", r)
	}
	// The running daemon was not restarted: status says so.
	r = run(t, home, env, "remote", "status", "--json")
	var st struct {
		Enabled, Listening bool
		URL, Problem       string
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Enabled || st.Listening || st.URL != "https://hestia.lan:4999" || !strings.Contains(st.Problem, "no answer") {
		t.Fatalf("status: %v %+v", err, r)
	}

	if r := run(t, home, env, "remote", "disable"); r.code != 0 || !strings.Contains(r.stdout, "off") {
		t.Fatalf("disable: %+v", r)
	}
	r = run(t, home, env, "pair", "--json")
	p.Fingerprint = ""
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || !strings.HasPrefix(p.Link, "http://127.0.0.1:") || p.Fingerprint != "" {
		t.Fatalf("pair after disable: %v %+v", err, r)
	}
	if _, err := os.Stat(filepath.Join(home, "tls", "remote-cert.pem")); err != nil {
		t.Errorf("disable removed the certificate: %v", err)
	}
}

func fingerprintLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); len(l) == 95 && strings.Count(l, ":") == 31 {
			return l
		}
	}
	return ""
}

func TestReplaceRemoteTable(t *testing.T) {
	t.Parallel()
	r := config.RemoteConfig{Enabled: true, Addr: "0.0.0.0:4318", Hosts: []string{"a.lan"}, TLSCert: `C:\h\c.pem`, TLSKey: "/h/it's.pem"}
	in := "# mine\n[server]\naddr = \"127.0.0.1:4317\" # keep\n\n[ server.remote ] # old\nenabled = false\nhosts = [\"x\"]\n\n[agent]\nfile_roots = []\n"
	out := string(replaceRemoteTable([]byte(in), r))
	want := "# mine\n[server]\naddr = \"127.0.0.1:4317\" # keep\n\n[agent]\nfile_roots = []\n\n# Written by"
	if !strings.HasPrefix(out, want) || strings.Count(out, "server.remote") != 1 {
		t.Fatalf("got:\n%s", out)
	}
	cfg, err := config.Parse([]byte(out), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Server.Remote; got.TLSCert != r.TLSCert || got.TLSKey != r.TLSKey || !got.AllowsHost("a.lan") {
		t.Fatalf("round trip: %+v", got)
	}
	// An empty file gets just the table; no leading blank line.
	if out := string(replaceRemoteTable(nil, r)); !strings.HasPrefix(out, "# Written by") {
		t.Fatalf("empty: %q", out)
	}
}
