package daemonaddr_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/daemonaddr"
	"github.com/hestia-dev/hestia/internal/server"
)

// daemon serves a real server handler for tok on a loopback port.
func daemon(t *testing.T, tok authtoken.Token) *httptest.Server {
	t.Helper()
	s := server.New(server.Options{Config: config.Default().Server, Token: tok, Version: "t"})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

// listener records every Authorization header it receives and answers
// with handler.
type listener struct {
	mu    sync.Mutex
	auths []string
}

func (l *listener) serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			l.auths = append(l.auths, a)
		}
		l.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tok, _ := authtoken.New()
	other, _ := authtoken.New()
	real := daemon(t, tok)
	if err := daemonaddr.Verify(ctx, http.DefaultClient, real.URL, tok); err != nil {
		t.Fatalf("own daemon refused: %v", err)
	}
	// Another home's daemon: different fingerprint.
	if err := daemonaddr.Verify(ctx, http.DefaultClient, daemon(t, other).URL, tok); !errors.Is(err, daemonaddr.ErrImpostor) || !strings.Contains(err.Error(), "another home") {
		t.Errorf("other home's daemon: %v", err)
	}
	var l listener
	// A listener that is not Hestia at all.
	plain := l.serve(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })
	if err := daemonaddr.Verify(ctx, http.DefaultClient, plain.URL, tok); !errors.Is(err, daemonaddr.ErrImpostor) {
		t.Errorf("plain listener: %v", err)
	}
	// One that copies the real daemon's public fingerprint.
	copycat := l.serve(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"status":"ok","home":"`+daemonaddr.Fingerprint(tok)+`","proof":"00"}`)
	})
	if err := daemonaddr.Verify(ctx, http.DefaultClient, copycat.URL, tok); !errors.Is(err, daemonaddr.ErrImpostor) || !strings.Contains(err.Error(), "prove") {
		t.Errorf("copied fingerprint: %v", err)
	}
	// One that relays the challenge to the real daemon: the proof is bound
	// to the real daemon's address, not the relay's.
	relay := l.serve(t, func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(real.URL + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		io.Copy(w, resp.Body)
	})
	if err := daemonaddr.Verify(ctx, http.DefaultClient, relay.URL, tok); !errors.Is(err, daemonaddr.ErrImpostor) {
		t.Errorf("relay: %v", err)
	}
	if len(l.auths) != 0 {
		t.Errorf("a listener received credentials: %q", l.auths)
	}
}

func TestHealthChallengeValidation(t *testing.T) {
	t.Parallel()
	tok, _ := authtoken.New()
	real := daemon(t, tok)
	for _, c := range []string{"abc", "zz" + strings.Repeat("0", 40), strings.Repeat("a", 130)} {
		resp, err := http.Get(real.URL + "/health?challenge=" + c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), "challenge must be") {
			t.Errorf("challenge %q: %d %s", c, resp.StatusCode, b)
		}
	}
	resp, err := http.Get(real.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), tok.Value()) || !strings.Contains(string(b), daemonaddr.Fingerprint(tok)) {
		t.Errorf("health body: %s", b)
	}
}

func TestRecordReadWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, daemonaddr.FileName)
	if _, err := daemonaddr.Read(path); !errors.Is(err, daemonaddr.ErrNoRecord) {
		t.Fatalf("missing: %v", err)
	}
	rec := daemonaddr.Record{Addr: "127.0.0.1:4318", PID: 7, Home: "h"}
	if err := daemonaddr.Write(path, rec); err != nil {
		t.Fatal(err)
	}
	got, err := daemonaddr.Read(path)
	if err != nil || got.Addr != rec.Addr || got.BaseURL() != "http://127.0.0.1:4318" {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	for name, body := range map[string]string{"damaged": "{not json", "no address": `{"addr":"nowhere"}`} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := daemonaddr.Read(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s record: %v", name, err)
		}
	}
	if got := daemonaddr.DialAddr(&net.TCPAddr{IP: net.IPv4zero, Port: 9}); got != "127.0.0.1:9" {
		t.Errorf("DialAddr 0.0.0.0 = %s", got)
	}
	if got := daemonaddr.DialAddr(&net.TCPAddr{IP: net.IPv6unspecified, Port: 9}); got != "[::1]:9" {
		t.Errorf("DialAddr :: = %s", got)
	}
}
