package config

import (
	"strings"
	"testing"
)

func TestRemoteConfig(t *testing.T) {
	t.Parallel()
	good := RemoteConfig{Enabled: true, Addr: "0.0.0.0:4318", Hosts: []string{"192.168.1.5", "hestia.lan"}, TLSCert: "/h/c.pem", TLSKey: "/h/k.pem"}
	for _, tc := range []struct {
		name string
		edit func(*RemoteConfig)
		want string // "" = valid
	}{
		{"valid", func(*RemoteConfig) {}, ""},
		{"off ignores the rest", func(r *RemoteConfig) { *r = RemoteConfig{Addr: "junk"} }, ""},
		{"no port", func(r *RemoteConfig) { r.Addr = "0.0.0.0" }, "server.remote.addr"},
		{"port out of range", func(r *RemoteConfig) { r.Addr = "0.0.0.0:70000" }, "server.remote.addr"},
		{"no hosts", func(r *RemoteConfig) { r.Hosts = nil }, "server.remote.hosts"},
		{"host with port", func(r *RemoteConfig) { r.Hosts = []string{"hestia.lan:4318"} }, "server.remote.hosts"},
		{"no key", func(r *RemoteConfig) { r.TLSKey = "" }, "server.remote.tls_cert"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := Default()
			cfg.Server.Remote = good
			tc.edit(&cfg.Server.Remote)
			err := cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

func TestRemoteParses(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("[server.remote]\nenabled = true\naddr = \"0.0.0.0:4318\"\nhosts = [\"Hestia.LAN\"]\ntls_cert = \"c\"\ntls_key = \"k\"\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Server.Remote
	if !r.AllowsHost("hestia.lan") || r.AllowsHost("evil.example") || cfg.Server.Addr != "127.0.0.1:4317" {
		t.Fatalf("parsed %+v", cfg.Server)
	}
	r.Enabled = false
	if r.AllowsHost("hestia.lan") {
		t.Fatal("host allowed while remote is off")
	}
}
