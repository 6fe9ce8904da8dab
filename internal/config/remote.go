package config

import (
	"net"
	"strconv"
	"strings"
)

// RemoteConfig is [server.remote]: a second listener, always TLS, that
// devices on the LAN (a phone) reach while the main listener stays on
// loopback. `hestia remote enable` writes it; the certificate is
// self-signed and generated once in the home, and its fingerprint travels
// in the pairing link so the phone's user can check it.
type RemoteConfig struct {
	Enabled bool   `toml:"enabled"`
	Addr    string `toml:"addr"` // host:port to bind, e.g. 0.0.0.0:4318
	// Hosts are the names and addresses a device uses to reach the
	// listener (the first is the one `hestia pair` links to). The Host
	// guard accepts them besides the loopback names; nothing else.
	Hosts   []string `toml:"hosts"`
	TLSCert string   `toml:"tls_cert"`
	TLSKey  string   `toml:"tls_key"`
}

// AllowsHost reports whether host (no port) is one of the configured
// remote names; false when remote access is off.
func (r RemoteConfig) AllowsHost(host string) bool {
	if !r.Enabled {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range r.Hosts {
		if strings.TrimSuffix(strings.ToLower(h), ".") == host {
			return true
		}
	}
	return false
}

func (r RemoteConfig) validate() []error {
	if !r.Enabled {
		return nil
	}
	var errs []error
	_, port, err := net.SplitHostPort(r.Addr)
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 0 || p > 65535 {
		errs = append(errs, &Error{Key: "server.remote.addr", Value: r.Addr, Allowed: "host:port to listen on, e.g. 0.0.0.0:4318"})
	}
	if len(r.Hosts) == 0 {
		errs = append(errs, &Error{Key: "server.remote.hosts", Value: "[]", Allowed: "at least one name or address devices use to reach this machine"})
	}
	for _, h := range r.Hosts {
		if h == "" || strings.ContainsAny(h, " /:@[]") {
			errs = append(errs, &Error{Key: "server.remote.hosts", Value: h, Allowed: "a host name or IPv4 address without port"})
		}
	}
	if r.TLSCert == "" || r.TLSKey == "" {
		errs = append(errs, &Error{Key: "server.remote.tls_cert", Value: r.TLSCert, Allowed: "the remote listener needs both tls_cert and tls_key (`hestia remote enable` writes them)"})
	}
	return errs
}
