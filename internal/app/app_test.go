package app

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/store"
)

func testApp(t *testing.T, home string) *App {
	t.Helper()
	paths, err := config.ResolvePaths(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Server.Addr = "127.0.0.1:0"
	return New(paths, cfg, slog.New(slog.DiscardHandler), "test")
}

// start serves a in the background and returns its base URL and a stop
// function that waits for a clean exit.
func start(t *testing.T, a *App) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ServeOptions{Ready: func(addr net.Addr) { ready <- addr }}) }()
	select {
	case addr := <-ready:
		return "http://" + addr.String(), func() error { cancel(); return <-done }
	case err := <-done:
		cancel()
		t.Fatalf("serve failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not start")
	}
	return "", nil
}

func TestServeLifecycle(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	a := testApp(t, home)
	base, stop := start(t, a)

	info, err := os.Stat(filepath.Join(home, "auth-token"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", info, err)
	}
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()

	req, _ := http.NewRequest("GET", base+"/api/system", nil)
	resp, _ = http.DefaultClient.Do(req)
	if resp.StatusCode != 401 {
		t.Fatalf("system without token: %d", resp.StatusCode)
	}
	resp.Body.Close()
	req.Header.Set("Authorization", "Bearer "+a.Token.Value())
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("system: %v %v", resp, err)
	}
	var sys SystemStatus
	json.NewDecoder(resp.Body).Decode(&sys)
	resp.Body.Close()
	if sys.Version != "test" || len(sys.Checks) == 0 {
		t.Fatalf("system body: %+v", sys)
	}

	// A second daemon on the same home refuses to start.
	b := testApp(t, home)
	err = b.Serve(context.Background(), ServeOptions{})
	if !errors.Is(err, lock.ErrHeld) {
		t.Fatalf("second daemon: %v", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if held, _ := lock.Held(a.Paths.LockFile()); held {
		t.Fatal("lock still held after shutdown")
	}
	// The token survives restarts.
	first := a.Token.Value()
	c := testApp(t, home)
	_, stop2 := start(t, c)
	defer stop2()
	if c.Token.Value() != first {
		t.Fatal("token changed across restarts")
	}
}

func TestStoresClosedOnShutdown(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	a := testApp(t, home)
	_, stop := start(t, a)
	db, err := a.OpenStore(context.Background(), store.Schema{Name: "probe", Migrations: []string{"CREATE TABLE t(x)"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(); err == nil {
		t.Fatal("store still open after shutdown")
	}
}

func TestSystemChecksReusedUntilFresh(t *testing.T) {
	t.Parallel()
	a := testApp(t, t.TempDir())
	var runs atomic.Int32
	a.AddCheck(doctor.Check{Name: "probe", Run: func(context.Context) (doctor.Status, string) {
		runs.Add(1)
		return doctor.OK, ""
	}})
	base, stop := start(t, a)
	defer stop()
	get := func(path string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+a.Token.Value())
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", path, resp, err)
		}
		resp.Body.Close()
	}
	get("/api/system")
	get("/api/system")
	if n := runs.Load(); n != 1 {
		t.Fatalf("checks ran %d times for two polls within the TTL, want 1", n)
	}
	get("/api/system?fresh=1")
	if n := runs.Load(); n != 2 {
		t.Fatalf("fresh=1 did not re-run the checks (%d runs)", n)
	}
}
