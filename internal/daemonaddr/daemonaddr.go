// Package daemonaddr records where a home's daemon listens and lets the CLI
// prove, before it sends the home's bearer token, that whatever answers there
// is that home's daemon.
//
// The daemon writes DATA/daemon.json when it starts listening. The CLI reads
// it (not the configured address, which another home's daemon or a hostile
// process may hold) and asks GET /health?challenge=NONCE without the token.
// The daemon answers with the home's fingerprint (a one-way hash of the
// token, not secret) and a proof: an HMAC of the nonce and of the address the
// connection reached, keyed by the token. A process that does not hold the
// token cannot compute it, and one that relays the challenge to the real
// daemon on another address gets a proof bound to the wrong address.
package daemonaddr

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
)

// FileName is the record's name in the data directory.
const FileName = "daemon.json"

// ErrImpostor is returned when what answers at the recorded address is not
// this home's daemon; the token was not sent.
var ErrImpostor = errors.New("the process answering is not this home's daemon; the token was not sent")

// ErrNoRecord is returned when the daemon left no address record.
var ErrNoRecord = errors.New("no daemon address is recorded for this home")

// Record is what the daemon writes at listen time.
type Record struct {
	Addr      string    `json:"addr"` // host:port to dial
	TLS       bool      `json:"tls"`
	PID       int       `json:"pid"`
	Home      string    `json:"home"` // Fingerprint of the token
	StartedAt time.Time `json:"started_at"`
}

// BaseURL is the URL prefix to reach the daemon.
func (r Record) BaseURL() string {
	if r.TLS {
		return "https://" + r.Addr
	}
	return "http://" + r.Addr
}

// DialAddr turns a listener's address into one a client can dial: an
// unspecified IP (0.0.0.0, ::) becomes loopback.
func DialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if ip.To4() != nil {
			host = "127.0.0.1"
		} else {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port)
}

// Write stores rec at path atomically, readable by the owner only.
func Write(path string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".daemon-*.json")
	if err != nil {
		return fmt.Errorf("writing daemon address record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("writing daemon address record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing daemon address record: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing daemon address record: %w", err)
	}
	return nil
}

// Read loads the record at path. A missing file is ErrNoRecord.
func Read(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Record{}, ErrNoRecord
	}
	if err != nil {
		return Record{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, fmt.Errorf("%s is damaged (%v); restart the daemon to rewrite it", path, err)
	}
	if _, _, err := net.SplitHostPort(rec.Addr); err != nil {
		return Record{}, fmt.Errorf("%s holds no valid address (%q); restart the daemon to rewrite it", path, rec.Addr)
	}
	return rec, nil
}

// Fingerprint identifies a home without revealing its token.
func Fingerprint(tok authtoken.Token) string {
	sum := sha256.Sum256([]byte("hestia home fingerprint v1\x00" + tok.Value()))
	return hex.EncodeToString(sum[:16])
}

// Proof is the daemon's answer to a challenge received on the connection
// whose local address is addr.
func Proof(tok authtoken.Token, challenge, addr string) string {
	m := hmac.New(sha256.New, []byte(tok.Value()))
	io.WriteString(m, "hestia health proof v1\x00"+challenge+"\x00"+addr)
	return hex.EncodeToString(m.Sum(nil))
}

// ValidChallenge reports whether a challenge is well-formed: 32 to 128 hex
// characters.
func ValidChallenge(c string) bool {
	if len(c) < 32 || len(c) > 128 {
		return false
	}
	_, err := hex.DecodeString(c)
	return err == nil
}

// Health is the body of GET /health.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Home    string `json:"home,omitempty"`
	Proof   string `json:"proof,omitempty"`
}

// Verify asks baseURL's /health, without the token, to prove it holds tok.
// It returns nil only when the fingerprint and the proof match.
func Verify(ctx context.Context, client *http.Client, baseURL string, tok authtoken.Token) error {
	nonce := make([]byte, 32)
	rand.Read(nonce)
	challenge := hex.EncodeToString(nonce)
	var peer string
	trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { peer = ci.Conn.RemoteAddr().String() }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), "GET", baseURL+"/health?challenge="+url.QueryEscape(challenge), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("checking the daemon at %s: %w", baseURL, err)
	}
	defer resp.Body.Close()
	var h Health
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w (%s did not answer /health as a Hestia daemon: %s)", ErrImpostor, baseURL, resp.Status)
	}
	if h.Home != Fingerprint(tok) {
		return fmt.Errorf("%w (%s serves another home; is HESTIA_HOME right?)", ErrImpostor, baseURL)
	}
	want := Proof(tok, challenge, peer)
	if !hmac.Equal([]byte(h.Proof), []byte(want)) {
		return fmt.Errorf("%w (%s could not prove it holds this home's token)", ErrImpostor, baseURL)
	}
	return nil
}

// Connect reads the record at path and verifies that what answers at its
// address is the daemon holding tok. It returns the record only then; the
// caller may send the token to rec.BaseURL().
func Connect(ctx context.Context, client *http.Client, path string, tok authtoken.Token) (Record, error) {
	rec, err := Read(path)
	if err != nil {
		return Record{}, err
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := Verify(vctx, client, rec.BaseURL(), tok); err != nil {
		return Record{}, err
	}
	return rec, nil
}
