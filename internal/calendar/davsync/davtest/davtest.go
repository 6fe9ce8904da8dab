// Package davtest starts a real CalDAV server (Radicale) for tests.
package davtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// StartRadicale runs Debian's radicale on a free loopback port with its
// storage in a temp folder (auth type none: any password) and one calendar
// collection /user/collection/ named display, and returns the base URL. It
// skips the test when radicale is missing, unless HESTIA_REQUIRE_SERVICES=1.
func StartRadicale(t testing.TB, user, collection, display string) string {
	t.Helper()
	bin, err := exec.LookPath("radicale")
	if err != nil {
		if os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatal("radicale is required (HESTIA_REQUIRE_SERVICES=1) but not installed")
		}
		t.Skip("radicale not installed")
	}
	storage := t.TempDir()
	col := filepath.Join(storage, "collection-root", user, collection)
	if err := os.MkdirAll(col, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(col, ".Radicale.props"), []byte(`{"tag": "VCALENDAR", "D:displayname": "`+display+`"}`), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(t.TempDir(), "config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[server]\nhosts = %s\n[auth]\ntype = none\n[storage]\nfilesystem_folder = %s\n[logging]\nlevel = warning\n", addr, storage)), 0o644)
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	base := "http://" + addr + "/"
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base)
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("radicale did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return base
}
