package server

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
)

func TestEnsureCertificate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "tls")
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fp, created, err := EnsureCertificate(cert, key, []string{"192.168.1.20", "hestia.lan"}, now)
	if err != nil || !created {
		t.Fatalf("first call: created %v err %v", created, err)
	}
	if len(fp) != 32*3-1 || strings.Count(fp, ":") != 31 {
		t.Fatalf("fingerprint %q is not SHA-256 hex pairs", fp)
	}
	for _, p := range []string{cert, key} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
	c, err := readCert(cert)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.IPAddresses) != 1 || c.IPAddresses[0].String() != "192.168.1.20" || !contains(c.DNSNames, "hestia.lan") || !contains(c.DNSNames, "localhost") {
		t.Errorf("SANs: IPs %v names %v", c.IPAddresses, c.DNSNames)
	}
	// A restart (even with other hosts) keeps the pair: phones checked its fingerprint.
	fp2, created, err := EnsureCertificate(cert, key, []string{"10.0.0.9"}, now.Add(24*time.Hour))
	if err != nil || created || fp2 != fp {
		t.Fatalf("second call: fp %s created %v err %v; want %s kept", fp2, created, err, fp)
	}
	if got, err := CertificateFingerprint(cert); err != nil || got != fp {
		t.Fatalf("CertificateFingerprint = %s, %v; want %s", got, err, fp)
	}
	// Expired: a new one.
	fp3, created, err := EnsureCertificate(cert, key, nil, now.Add(certValidity+time.Hour))
	if err != nil || !created || fp3 == fp {
		t.Fatalf("after expiry: created %v err %v same %v", created, err, fp3 == fp)
	}
}

func TestEnsureCertificateBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, []byte("not a certificate"), 0o600)
	if _, _, err := EnsureCertificate(cert, key, nil, time.Now()); err == nil || !strings.Contains(err.Error(), "no PEM CERTIFICATE") {
		t.Fatalf("garbage certificate: err %v", err)
	}
	// A valid certificate with another pair's key is refused, not served.
	other := t.TempDir()
	if _, _, err := EnsureCertificate(cert+"2", key, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureCertificate(filepath.Join(other, "c.pem"), filepath.Join(other, "k.pem"), nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := EnsureCertificate(filepath.Join(other, "c.pem"), key, nil, time.Now()); err == nil {
		t.Fatal("mismatched key accepted")
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// startRemote serves a daemon whose main listener is loopback and whose
// remote listener answers as "hestia.lan".
func startRemote(t *testing.T) (s *Server, mainAddr, remoteAddr, fp string) {
	t.Helper()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	fp, _, err := EnsureCertificate(cert, key, []string{"hestia.lan"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	full := config.Default()
	full.Server.Addr = "127.0.0.1:0"
	full.Server.Remote = config.RemoteConfig{Enabled: true, Addr: "127.0.0.1:0", Hosts: []string{"hestia.lan"}, TLSCert: cert, TLSKey: key}
	if err := full.Validate(); err != nil {
		t.Fatalf("remote config rejected: %v", err)
	}
	tok, _ := authtoken.New()
	s = New(Options{Config: full.Server, Token: tok})
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String(), s.RemoteAddr().String(), fp
}

func TestRemoteListener(t *testing.T) {
	t.Parallel()
	_, mainAddr, remoteAddr, fp := startRemote(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url, host string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Error struct{ Code string } }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp, body.Error.Code
	}
	resp, _ := get("https://"+remoteAddr+"/health", "hestia.lan:4318")
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("remote /health: status %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
	if got := Fingerprint(resp.TLS.PeerCertificates[0].Raw); got != fp {
		t.Errorf("served certificate %s, generated %s", got, fp)
	}
	// The Host guard: the configured name passes, another is refused on both listeners.
	if resp, code := get("https://"+remoteAddr+"/health", "evil.example"); resp.StatusCode != 403 || code != "forbidden_host" {
		t.Errorf("unconfigured name on remote: %d %s", resp.StatusCode, code)
	}
	if resp, code := get("http://"+mainAddr+"/health", "evil.example:4317"); resp.StatusCode != 403 || code != "forbidden_host" {
		t.Errorf("unconfigured name on main: %d %s", resp.StatusCode, code)
	}
	if resp, _ := get("http://"+mainAddr+"/health", "HESTIA.LAN."); resp.StatusCode != 200 {
		t.Errorf("configured name (case, trailing dot) on main: %d", resp.StatusCode)
	}
	// The main listener stays plain HTTP on loopback.
	if resp, _ := get("http://"+mainAddr+"/health", "127.0.0.1"); resp.StatusCode != 200 || resp.TLS != nil {
		t.Errorf("main listener: %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
	// Plain HTTP to the remote port gets no API answer.
	if resp, err := http.Get("http://" + remoteAddr + "/health"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP served on the remote listener")
	}
}

// Local pairing stays loopback-only: a request over the remote listener is
// refused even from a loopback peer with a same-origin browser's headers.
func TestRemoteRefusesLocalPairing(t *testing.T) {
	t.Parallel()
	_, mainAddr, remoteAddr, _ := startRemote(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	post := func(base, origin string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/api/pair/local/start", strings.NewReader("{}"))
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Error struct{ Code string } }
		json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Error.Code
	}
	if st, code := post("https://"+remoteAddr, "https://"+remoteAddr); st != 403 || code != "not_local" {
		t.Errorf("local pairing over the remote listener: %d %s", st, code)
	}
	if st, code := post("http://"+mainAddr, "http://"+mainAddr); st != 202 {
		t.Errorf("local pairing on the main listener: %d %s", st, code)
	}
}

func TestHostGuardRemoteOff(t *testing.T) {
	t.Parallel()
	cfg := config.Default().Server
	cfg.Remote = config.RemoteConfig{Enabled: false, Hosts: []string{"hestia.lan"}}
	tok, _ := authtoken.New()
	s := New(Options{Config: cfg, Token: tok})
	r := httptest.NewRequest("GET", "http://hestia.lan:4317/health", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != 403 {
		t.Fatalf("remote host accepted while remote is off: %d", rec.Code)
	}
}

func TestRemoteListenFails(t *testing.T) {
	t.Parallel()
	cfg := config.Default().Server
	cfg.Addr = "127.0.0.1:0"
	cfg.Remote = config.RemoteConfig{Enabled: true, Addr: "127.0.0.1:99999", Hosts: []string{"x"}, TLSCert: "c", TLSKey: "k"}
	tok, _ := authtoken.New()
	if _, err := New(Options{Config: cfg, Token: tok}).Listen(); err == nil || !strings.Contains(err.Error(), "server.remote.addr") {
		t.Fatalf("bad remote addr: %v", err)
	}
	cfg.Remote.Addr = "127.0.0.1:0"
	s := New(Options{Config: cfg, Token: tok})
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(context.Background(), ln); err == nil || !strings.Contains(err.Error(), "remote TLS certificate") {
		t.Fatalf("missing remote certificate: %v", err)
	}
}

// With remote access on, a pairing code comes with the LAN address and
// the certificate fingerprint, so the web UI's link reaches a phone.
func TestPairCodeCarriesRemoteLink(t *testing.T) {
	t.Parallel()
	s, mainAddr, _, fp := startRemote(t)
	req, _ := http.NewRequest("POST", "http://"+mainAddr+"/api/pair/codes", nil)
	req.Header.Set("Authorization", "Bearer "+s.opts.Token.Value())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Code, URL, Fingerprint string }
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 200 || body.Code == "" || body.Fingerprint != fp || !strings.HasPrefix(body.URL, "https://hestia.lan:") {
		t.Fatalf("pair code with remote on: %d %+v, want the LAN link and %s", resp.StatusCode, body, fp)
	}
}
