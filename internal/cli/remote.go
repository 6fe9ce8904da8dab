package cli

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/server"
)

// defaultRemoteAddr is where the LAN listener binds unless --addr says
// otherwise: every interface, so a changed DHCP address does not stop the
// daemon; the Host guard still accepts only the configured hosts.
const defaultRemoteAddr = "0.0.0.0:4318"

func runRemote(ctx context.Context, env *Env, args []string) error {
	const usage = "usage: hestia remote enable [--host NAME[,NAME]] [--addr HOST:PORT] | disable | status [--json]"
	if len(args) == 0 {
		return usagef(usage)
	}
	switch args[0] {
	case "enable":
		fs := env.flags("remote enable")
		hostList := fs.String("host", "", "comma-separated names or IPv4 addresses the phone uses to reach this machine (default: this machine's LAN address)")
		addr := fs.String("addr", "", "address the TLS listener binds (default "+defaultRemoteAddr+", or the address already configured)")
		if err := parse(fs, args[1:], 0); err != nil {
			return err
		}
		return remoteEnable(env, *hostList, *addr)
	case "disable":
		if err := parse(env.flags("remote disable"), args[1:], 0); err != nil {
			return err
		}
		paths, cfg, err := env.load()
		if err != nil {
			return err
		}
		r := cfg.Server.Remote
		if !r.Enabled {
			fmt.Fprintln(env.Stdout, "remote access is already off")
			return nil
		}
		r.Enabled = false
		if err := writeRemote(paths, env.Getenv, r); err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, "Remote access off in config.toml (the certificate stays in the home, so phones keep the same fingerprint if you turn it on again). Restart the daemon to close the listener; paired devices keep their tokens until `hestia devices revoke`.")
		return nil
	case "status":
		fs := env.flags("remote status")
		asJSON := fs.Bool("json", false, "print the status as JSON")
		if err := parse(fs, args[1:], 0); err != nil {
			return err
		}
		return remoteStatus(ctx, env, *asJSON)
	}
	return usagef(usage)
}

func remoteEnable(env *Env, hostList, addr string) error {
	paths, cfg, err := env.load()
	if err != nil {
		return err
	}
	r := cfg.Server.Remote
	var hosts []string
	for _, h := range strings.Split(hostList, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		hosts = r.Hosts
	}
	if len(hosts) == 0 {
		ip := lanIPv4()
		if ip == "" {
			return usagef("no LAN address found on this machine's interfaces; name the one the phone reaches with --host")
		}
		hosts = []string{ip}
	}
	switch {
	case addr != "":
	case r.Addr != "":
		addr = r.Addr
	default:
		addr = defaultRemoteAddr
	}
	if r.TLSCert == "" {
		r.TLSCert, r.TLSKey = filepath.Join(paths.Data, "tls", "remote-cert.pem"), filepath.Join(paths.Data, "tls", "remote-key.pem")
	}
	r.Enabled, r.Addr, r.Hosts = true, addr, hosts
	// Validate before generating anything, so a bad --addr changes nothing.
	probe := cfg
	probe.Server.Remote = r
	if err := probe.Validate(); err != nil {
		return usagef("%v", err)
	}
	fp, created, err := server.EnsureCertificate(r.TLSCert, r.TLSKey, hosts, time.Now())
	if err != nil {
		return err
	}
	if err := writeRemote(paths, env.Getenv, r); err != nil {
		return err
	}
	verb := "kept"
	if created {
		verb = "generated"
	}
	_, port, _ := net.SplitHostPort(addr)
	fmt.Fprintf(env.Stdout, "Remote access on in %s: the daemon will also listen on %s with TLS, for https://%s.\n", paths.ConfigFile(), addr, net.JoinHostPort(hosts[0], port))
	fmt.Fprintf(env.Stdout, "Self-signed certificate %s (%s); SHA-256 fingerprint:\n  %s\n", verb, r.TLSCert, fp)
	fmt.Fprintln(env.Stdout, "Restart the daemon so it listens, then run `hestia pair`: its link and QR code point there and carry the fingerprint. The phone's browser warns about the certificate; accept it only if the fingerprint it shows matches.")
	return nil
}

// lanIPv4 is the first IPv4 address of an up, non-loopback interface,
// private ranges first; "" when there is none.
func lanIPv4() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	var public string
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.To4() == nil || !n.IP.IsGlobalUnicast() {
				continue
			}
			if n.IP.IsPrivate() {
				return n.IP.String()
			}
			if public == "" {
				public = n.IP.String()
			}
		}
	}
	return public
}

// writeRemote replaces the [server.remote] table of config.toml (appending
// it when absent), leaving every other line as it was, after checking the
// result parses and validates as the daemon will read it.
func writeRemote(paths config.Paths, env config.Env, r config.RemoteConfig) error {
	path := paths.ConfigFile()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	out := replaceRemoteTable(data, r)
	if _, err := config.Parse(out, env); err != nil {
		return fmt.Errorf("%s with remote access would not load, nothing written: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if err := atomicfile.Write(path, out, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// replaceRemoteTable drops the lines of every [server.remote] table (its
// header up to the next table header) and appends the new table.
func replaceRemoteTable(data []byte, r config.RemoteConfig) []byte {
	var b bytes.Buffer
	skipping := false
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if line == "" {
			continue
		}
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			name := t
			if i := strings.Index(name, "#"); i >= 0 {
				name = name[:i]
			}
			name = strings.ReplaceAll(strings.Trim(strings.TrimSpace(name), "[]"), " ", "")
			skipping = name == "server.remote"
			if skipping {
				continue
			}
		}
		if !skipping {
			b.WriteString(line)
		}
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n")) {
		b.WriteByte('\n')
	}
	if b.Len() > 0 && !bytes.HasSuffix(b.Bytes(), []byte("\n\n")) {
		b.WriteByte('\n')
	}
	quoted := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		quoted[i] = tomlString(h)
	}
	fmt.Fprintf(&b, "# Written by `hestia remote enable|disable`: a TLS listener for devices on the LAN.\n[server.remote]\nenabled = %t\naddr = %s\nhosts = [%s]\ntls_cert = %s\ntls_key = %s\n",
		r.Enabled, tomlString(r.Addr), strings.Join(quoted, ", "), tomlString(r.TLSCert), tomlString(r.TLSKey))
	return b.Bytes()
}

// tomlString is s as a TOML literal string when it can be one (paths with
// backslashes stay readable), else a basic string.
func tomlString(s string) string {
	if !strings.ContainsAny(s, "'\n\r") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}

// remoteLink is the base URL and certificate fingerprint a paired device
// uses when remote access is on; "" when it is off.
func remoteLink(r config.RemoteConfig) (base, fingerprint string, err error) {
	return server.RemoteLink(r)
}

func remoteStatus(ctx context.Context, env *Env, asJSON bool) error {
	_, cfg, err := env.load()
	if err != nil {
		return err
	}
	r := cfg.Server.Remote
	st := struct {
		Enabled     bool     `json:"enabled"`
		Addr        string   `json:"addr,omitempty"`
		Hosts       []string `json:"hosts,omitempty"`
		URL         string   `json:"url,omitempty"`
		Fingerprint string   `json:"fingerprint,omitempty"`
		Listening   bool     `json:"listening"`
		Problem     string   `json:"problem,omitempty"`
	}{Enabled: r.Enabled, Addr: r.Addr, Hosts: r.Hosts}
	if r.Enabled {
		st.URL, st.Fingerprint, err = remoteLink(r)
		if err != nil {
			st.Problem = err.Error()
		} else if err := probeRemote(ctx, st.URL, r.Addr, st.Fingerprint); err != nil {
			st.Problem = err.Error()
		} else {
			st.Listening = true
		}
	}
	if asJSON {
		return printJSON(env.Stdout, st)
	}
	if !r.Enabled {
		fmt.Fprintln(env.Stdout, "Remote access is off: the daemon listens on loopback only. `hestia remote enable` turns on a TLS listener for your phone.")
		return nil
	}
	fmt.Fprintf(env.Stdout, "Remote access is on: %s (listening on %s; hosts %s)\n", st.URL, r.Addr, strings.Join(r.Hosts, ", "))
	if st.Fingerprint != "" {
		fmt.Fprintf(env.Stdout, "Certificate SHA-256: %s\n", st.Fingerprint)
	}
	if st.Listening {
		fmt.Fprintln(env.Stdout, "The daemon answers there with this certificate.")
	} else {
		fmt.Fprintf(env.Stdout, "Not answering yet: %s\n", st.Problem)
	}
	return nil
}

// probeRemote asks the listener for /health, dialling the bound address
// (the host name may not resolve here) and accepting only the certificate
// with the expected fingerprint.
func probeRemote(ctx context.Context, url, bind, fp string) error {
	host, port, _ := net.SplitHostPort(bind)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	dialAddr := net.JoinHostPort(host, port)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, dialAddr)
		},
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // self-signed: checked by fingerprint below
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || server.Fingerprint(raw[0]) != fp {
					return errors.New("the listener presents another certificate than the one in the home")
				}
				return nil
			},
		},
	}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("no answer on %s (is the daemon running, restarted since `remote enable`?): %w", dialAddr, err)
	}
	defer resp.Body.Close()
	var h struct{ Status string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&h) != nil || h.Status != "ok" {
		return fmt.Errorf("%s/health answered %s", url, resp.Status)
	}
	return nil
}

// pairRemoteBase is remoteLink for this home's configuration.
func pairRemoteBase(env *Env) (base, fingerprint string, err error) {
	_, cfg, err := env.load()
	if err != nil {
		return "", "", err
	}
	return remoteLink(cfg.Server.Remote)
}
