package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hestia-dev/hestia/internal/daemonaddr"
)

// The CLI must never send the home's token to whatever listens on the
// configured address: it dials the address its daemon recorded and sends
// the token only after the daemon proved it holds it.
func TestCLISendsTokenOnlyToItsOwnDaemon(t *testing.T) {
	home, env, _ := daemonEnv(t)
	var mu sync.Mutex
	var got []string
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte(`{"status":"ok","version":"x","code":"STOLEN","expires_at":"2030-01-01T00:00:00Z"}`))
	}))
	defer hostile.Close()
	daemonAddr := env["HESTIA_SERVER_ADDR"]
	// The configuration now names the hostile listener's port (the daemon
	// was started with another --addr, or the config changed since).
	env["HESTIA_SERVER_ADDR"] = strings.TrimPrefix(hostile.URL, "http://")
	r := run(t, home, env, "pair")
	if r.code != 0 || !strings.Contains(r.stdout, daemonAddr) || strings.Contains(r.stdout, "STOLEN") {
		t.Fatalf("pair did not reach its own daemon at %s: exit %d\n%s%s", daemonAddr, r.code, r.stdout, r.stderr)
	}
	// A stale or forged record pointing at the hostile listener.
	recPath := filepath.Join(home, daemonaddr.FileName)
	orig, err := os.ReadFile(recPath)
	if err != nil {
		t.Fatalf("daemon left no address record: %v", err)
	}
	var rec daemonaddr.Record
	json.Unmarshal(orig, &rec)
	rec.Addr = strings.TrimPrefix(hostile.URL, "http://")
	if err := daemonaddr.Write(recPath, rec); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"pair"}, {"chat", "--once", "hi"}, {"audit"}} {
		r = run(t, home, env, args...)
		if r.code == 0 || !strings.Contains(r.stderr, "not this home's daemon") {
			t.Errorf("%v with a forged record: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	os.WriteFile(recPath, orig, 0o600)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range got {
		if a != "" {
			t.Fatalf("the hostile listener received credentials: %q", a)
		}
	}
	if len(got) == 0 {
		t.Fatal("the forged record was never dialled; the test proves nothing")
	}
}
