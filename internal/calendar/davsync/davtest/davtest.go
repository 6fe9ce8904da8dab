// Package davtest starts a real CalDAV/CardDAV server (Radicale) for
// tests.
package davtest

import (
	"encoding/json"
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
	return Start(t, user, Collection{Name: collection, Display: display})
}

// Collection is one collection to create before the server starts.
type Collection struct {
	Name    string
	Display string
	// AddressBook makes a CardDAV address book instead of a calendar.
	AddressBook bool
	// Components, for a calendar, lists the components it accepts
	// ("VTODO" for a task list); empty accepts every kind.
	Components string
}

// Start runs Radicale (see StartRadicale) with the given collections
// under /user/ and returns the base URL.
func Start(t testing.TB, user string, cols ...Collection) string {
	t.Helper()
	bin, err := exec.LookPath("radicale")
	if err != nil {
		if os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatal("radicale is required (HESTIA_REQUIRE_SERVICES=1) but not installed")
		}
		t.Skip("radicale not installed")
	}
	storage := t.TempDir()
	for _, c := range cols {
		dir := filepath.Join(storage, "collection-root", user, c.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		tag := "VCALENDAR"
		if c.AddressBook {
			tag = "VADDRESSBOOK"
		}
		p := map[string]string{"tag": tag, "D:displayname": c.Display}
		if c.Components != "" {
			p["C:supported-calendar-component-set"] = c.Components
		}
		props, _ := json.Marshal(p)
		if err := os.WriteFile(filepath.Join(dir, ".Radicale.props"), props, 0o644); err != nil {
			t.Fatal(err)
		}
	}
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
