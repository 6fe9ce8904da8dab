package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/config"
)

// The remote listener ([server.remote]) serves the same handler as the
// loopback one, over TLS with a self-signed certificate kept in the home.
// A browser cannot pin a certificate by itself, so the pairing link carries
// the certificate's SHA-256 fingerprint for the user to compare with the
// one the phone's browser shows before accepting it.

// certValidity stays under the 825 days Apple platforms accept for a
// certificate a user chooses to trust.
const certValidity = 800 * 24 * time.Hour

// EnsureCertificate returns the fingerprint of the certificate at certPath,
// generating a self-signed ECDSA P-256 certificate and key for hosts first
// when either file is missing or the certificate has expired. An existing
// valid pair is kept as is (its fingerprint is what paired phones checked),
// even when hosts changed: names outside its SANs matter only to a browser
// that trusts it, and a pinned fingerprint does not depend on them.
func EnsureCertificate(certPath, keyPath string, hosts []string, now time.Time) (fingerprint string, created bool, err error) {
	if c, err := readCert(certPath); err == nil {
		if _, kerr := os.Stat(keyPath); kerr == nil && now.Before(c.NotAfter) {
			if _, err := tls.LoadX509KeyPair(certPath, keyPath); err != nil {
				return "", false, fmt.Errorf("checking TLS key pair %s: %w", certPath, err)
			}
			return Fingerprint(c.Raw), false, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", false, fmt.Errorf("generating TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return "", false, fmt.Errorf("generating certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "Hestia", Organization: []string{"Hestia (self-signed)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, h := range append([]string{"localhost"}, hosts...) {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return "", false, fmt.Errorf("creating certificate: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", false, fmt.Errorf("encoding TLS key: %w", err)
	}
	for _, p := range []string{certPath, keyPath} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return "", false, fmt.Errorf("creating %s: %w", filepath.Dir(p), err)
		}
	}
	// The key first: a certificate without its key would be "kept" above.
	if err := atomicfile.Write(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return "", false, fmt.Errorf("writing TLS key: %w", err)
	}
	if err := atomicfile.Write(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return "", false, fmt.Errorf("writing TLS certificate: %w", err)
	}
	return Fingerprint(der), true, nil
}

// CertificateFingerprint is Fingerprint of the PEM certificate at path.
func CertificateFingerprint(path string) (string, error) {
	c, err := readCert(path)
	if err != nil {
		return "", err
	}
	return Fingerprint(c.Raw), nil
}

func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading TLS certificate: %w", err)
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("TLS certificate %s: no PEM CERTIFICATE block", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing TLS certificate %s: %w", path, err)
	}
	return c, nil
}

// Fingerprint is the SHA-256 of a DER certificate as browsers show it:
// uppercase hex pairs joined by colons.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	h := strings.ToUpper(hex.EncodeToString(sum[:]))
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

type remoteConnKey struct{}

// viaRemote reports whether r arrived on the remote listener, where
// loopback-only routes (local pairing) are refused whatever the peer
// address says.
func viaRemote(r *http.Request) bool {
	v, _ := r.Context().Value(remoteConnKey{}).(bool)
	return v
}

// remoteServer is the TLS server of the remote listener.
func (s *Server) remoteServer(ctx context.Context) (*http.Server, error) {
	cfg := s.opts.Config.Remote
	cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("loading remote TLS certificate %s: %w", cfg.TLSCert, err)
	}
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, remoteConnKey{}, true)
		},
	}, nil
}

// RemoteLink is the base URL and certificate fingerprint a device paired
// for remote access uses; "" when remote access is off.
func RemoteLink(r config.RemoteConfig) (base, fingerprint string, err error) {
	if !r.Enabled || len(r.Hosts) == 0 {
		return "", "", nil
	}
	_, port, err := net.SplitHostPort(r.Addr)
	if err != nil {
		return "", "", fmt.Errorf("server.remote.addr %q: %w", r.Addr, err)
	}
	fp, err := CertificateFingerprint(r.TLSCert)
	if err != nil {
		return "", "", fmt.Errorf("remote access is on but its certificate is unreadable (run `hestia remote enable` again): %w", err)
	}
	return "https://" + net.JoinHostPort(r.Hosts[0], port), fp, nil
}
