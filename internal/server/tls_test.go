package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
)

func writeSelfSigned(t *testing.T, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hestia-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return certPath, keyPath
}

func TestServeTLS(t *testing.T) {
	t.Parallel()
	certPath, keyPath := writeSelfSigned(t, t.TempDir())
	tok, _ := authtoken.New()
	cfg := config.Default().Server
	cfg.Addr, cfg.TLSCert, cfg.TLSKey, cfg.AllowRemote = "127.0.0.1:0", certPath, keyPath, true
	full := config.Default()
	full.Server = cfg
	if err := full.Validate(); err != nil {
		t.Fatalf("TLS config rejected: %v", err)
	}
	s := New(Options{Config: cfg, Token: tok})
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get("https://" + ln.Addr().String() + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("status %d tls %v", resp.StatusCode, resp.TLS != nil)
	}
	// Plain HTTP to the TLS port does not get an answer from the API.
	if resp, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP served on TLS listener")
	}
}

func TestServeBadCertFails(t *testing.T) {
	t.Parallel()
	tok, _ := authtoken.New()
	cfg := config.Default().Server
	cfg.Addr, cfg.TLSCert, cfg.TLSKey = "127.0.0.1:0", "/nonexistent/cert.pem", "/nonexistent/key.pem"
	s := New(Options{Config: cfg, Token: tok})
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(context.Background(), ln); err == nil {
		t.Fatal("served with a missing certificate")
	}
}
