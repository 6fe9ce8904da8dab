package doctor

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/lock"
	"github.com/hestia-dev/hestia/internal/store"
)

func byName(rs []Result) map[string]Result {
	m := map[string]Result{}
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

func TestBrokenStoreFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbDir := t.TempDir()
	good, err := store.Open(ctx, filepath.Join(dbDir, "good.db"), store.Schema{Name: "good", Migrations: []string{"CREATE TABLE t(x)"}})
	if err != nil {
		t.Fatal(err)
	}
	good.Close()
	// A file that is not a database at all.
	os.WriteFile(filepath.Join(dbDir, "broken.db"), []byte(strings.Repeat("garbage!", 1000)), 0o600)
	checks, err := Stores(dbDir)
	if err != nil {
		t.Fatal(err)
	}
	rs := byName(Run(ctx, checks, 2*time.Second))
	if rs["store.good"].Status != OK {
		t.Errorf("good store: %+v", rs["store.good"])
	}
	if rs["store.broken"].Status != Fail || rs["store.broken"].Detail == "" {
		t.Errorf("broken store: %+v", rs["store.broken"])
	}
	if !Failed(Run(ctx, checks, 2*time.Second)) {
		t.Error("Failed() false with a broken store")
	}
}

func TestTimeoutAndPanic(t *testing.T) {
	t.Parallel()
	checks := []Check{
		{Name: "slow", Run: func(ctx context.Context) (Status, string) { time.Sleep(2 * time.Second); return OK, "" }},
		{Name: "boom", Run: func(ctx context.Context) (Status, string) { panic("bad") }},
		{Name: "fine", Run: func(ctx context.Context) (Status, string) { return OK, "yes" }},
	}
	start := time.Now()
	rs := byName(Run(context.Background(), checks, 100*time.Millisecond))
	if time.Since(start) > time.Second {
		t.Errorf("checks did not run in parallel with a timeout: %v", time.Since(start))
	}
	if rs["slow"].Status != Fail || !strings.Contains(rs["slow"].Detail, "timed out") {
		t.Errorf("slow: %+v", rs["slow"])
	}
	if rs["boom"].Status != Fail || !strings.Contains(rs["boom"].Detail, "crashed") {
		t.Errorf("boom: %+v", rs["boom"])
	}
	if rs["fine"].Status != OK {
		t.Errorf("fine: %+v", rs["fine"])
	}
}

func TestHomeWritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if s, _ := HomeWritable(dir).Run(context.Background()); s != OK {
		t.Fatal("writable dir reported", s)
	}
	if s, _ := HomeWritable(filepath.Join(dir, "missing")).Run(context.Background()); s != Fail {
		t.Fatal("missing dir reported", s)
	}
}

func TestDaemonAndEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lockPath := filepath.Join(t.TempDir(), "hestia.lock")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" && r.Header.Get("Authorization") != "Bearer good" {
			w.WriteHeader(401)
		}
	}))
	defer srv.Close()
	if s, _ := Daemon(lockPath, srv.URL, srv.Client()).Run(ctx); s != Warn {
		t.Errorf("no daemon: %s", s)
	}
	l, err := lock.Acquire(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if s, d := Daemon(lockPath, srv.URL+"/health", srv.Client()).Run(ctx); s != OK {
		t.Errorf("running daemon: %s %s", s, d)
	}
	if s, _ := Daemon(lockPath, "http://127.0.0.1:1/health", srv.Client()).Run(ctx); s != Fail {
		t.Errorf("locked but silent daemon: %s", s)
	}
	if s, _ := HTTPReachable("llm", srv.URL, "good", srv.Client()).Run(ctx); s != OK {
		t.Errorf("reachable endpoint: %s", s)
	}
	if s, d := HTTPReachable("llm", srv.URL, "bad", srv.Client()).Run(ctx); s != Fail || !strings.Contains(d, "rejected") {
		t.Errorf("auth rejected: %s %s", s, d)
	}
	if s, _ := HTTPReachable("llm", "http://127.0.0.1:1/v1/models", "", srv.Client()).Run(ctx); s != Fail {
		t.Errorf("unreachable: %s", s)
	}
}

func TestDiskSpace(t *testing.T) {
	t.Parallel()
	if s, _ := DiskSpace(t.TempDir(), 0, 0).Run(context.Background()); s != OK {
		t.Errorf("status %s", s)
	}
	if s, _ := DiskSpace(t.TempDir(), 0, 1<<62).Run(context.Background()); s != Fail {
		t.Errorf("status %s with absurd threshold", s)
	}
}
