package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/cli/daemonclient"
	"github.com/hestia-dev/hestia/internal/clisock"
	"github.com/hestia-dev/hestia/internal/mail"
)

// TestOneBinary builds cmd/hestia as `go install` does and checks that it
// is the whole program: `version`, an import, the queries without a daemon
// (the stores opened by the command), and with `hestia serve` running the
// same queries answered by the daemon on its socket — the HTTP API's own
// answers — until it stops, when the command opens the stores again.
func TestOneBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	bin := filepath.Join(t.TempDir(), "hestia")
	// A packager's built-in OAuth client (docs/oauth.md) is one -X away.
	build := exec.Command(goBin, "build", "-ldflags", "-X main.microsoftClientID=0000-built-in", "-o", bin, "./cmd/hestia")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hestia: %v\n%s", err, out)
	}
	home, err := os.MkdirTemp("", "h1") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 23:30:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)
	os.WriteFile(filepath.Join(md, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: Bo <bo@x.org>\nTo: ann@x.org\nSubject: Re: Solar panels\nIn-Reply-To: <a@x>\nDate: Tue, 6 Jan 2026 11:00:00 +0000\n\nGreat, the installer.\n"), 0o644)
	os.MkdirAll(filepath.Join(home, "wiki", "pages"), 0o700)
	os.WriteFile(filepath.Join(home, "wiki", "pages", "Boiler.md"), []byte("---\ntitle: Boiler\n---\n# Boiler\nThe boiler warranty ends in May.\n"), 0o600)

	// The zone is far from UTC: dates on the command line and in its
	// answers are local, with and without the daemon.
	runEnv := append(os.Environ(), "HESTIA_HOME="+home, "TZ=Pacific/Kiritimati", "HESTIA_SERVER_ADDR=127.0.0.1:0")
	runBin := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = runEnv
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("hestia %q: %v", args, err)
		}
		return result{code, out.String(), errb.String()}
	}

	if r := runBin("version"); r.code != 0 || r.stdout != "hestia dev\n" {
		t.Fatalf("version: %+v", r)
	}
	// An OAuth account without a client id loads with the built-in one
	// (another home: this one's daemon is started below).
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "config.toml"), []byte("[[oauth.accounts]]\nname = \"work\"\nprovider = \"microsoft\"\n"), 0o600)
	for _, tc := range []struct{ env, want string }{{"", "0000-built-in"}, {"HESTIA_OAUTH_MICROSOFT_CLIENT_ID=from-env", "from-env"}} {
		cmd := exec.Command(bin, "config", "show")
		cmd.Env = append(os.Environ(), "HESTIA_HOME="+other, tc.env)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `client_id = "`+tc.want+`"`) {
			t.Fatalf("config show with %q: %v\n%s", tc.env, err, out)
		}
	}
	if r := runBin("mail", "import", "--quiet", md); r.code != 0 || !strings.Contains(r.stdout, "2 new messages") {
		t.Fatalf("mail import: %+v", r)
	}
	if r := runBin("wiki", "reindex"); r.code != 0 {
		t.Fatalf("wiki reindex: %+v", r)
	}
	queries := [][]string{
		{"mail", "read", "1"}, {"mail", "read", "1", "--json"}, {"mail", "thread", "1"}, {"mail", "thread", "2", "--limit", "1"},
		{"mail", "read", "99"}, {"mail", "read"}, {"mail", "search", "--after", "soon"}, {"mail", "search", "--from", "ann", "--count"},
		// Local midnight of the 6th in UTC+14 is 10:00 UTC on the 5th:
		// the first message (23:30 UTC on the 5th) is on the 6th here.
		{"mail", "search", "--after", "2026-01-06", "--before", "2026-01-07", "--per-message"},
		{"mail", "search", "--after", "2026-01-07", "--per-message", "--count"},
		{"mail", "search", "--sort", "size", "--limit", "500"},
		{"wiki", "search", "warranty"},
	}
	alone := map[string]result{}
	for _, args := range queries {
		alone[strings.Join(args, " ")] = runBin(args...)
	}
	if r := alone["mail search --after 2026-01-06 --before 2026-01-07 --per-message"]; r.code != 0 || strings.Count(r.stdout, "\n") != 1 || !strings.Contains(r.stdout, "2026-01-06  Ann") {
		t.Errorf("a local day without the daemon: %+v", r)
	}
	if r := alone["mail search --after 2026-01-07 --per-message --count"]; r.stdout != "1\n" {
		t.Errorf("after a local day without the daemon: %+v", r)
	}
	if r := alone["mail read 99"]; r.code != 1 || !strings.Contains(r.stderr, "99") {
		t.Errorf("an unknown message without the daemon: %+v", r)
	}

	daemon := exec.Command(bin, "serve")
	daemon.Env = runEnv
	// A file, not a buffer: the log is read while the daemon writes it.
	dlog, err := os.Create(filepath.Join(t.TempDir(), "daemon.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer dlog.Close()
	daemon.Stdout, daemon.Stderr = dlog, dlog
	logText := func() string { b, _ := os.ReadFile(dlog.Name()); return string(b) }
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	sock := clisock.Path(home)
	exited := make(chan error, 1)
	go func() { exited <- daemon.Wait() }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			daemon.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	}
	defer stop()
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("the daemon exited (%v):\n%s", err, logText())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon made no socket:\n%s", logText())
		}
	}
	for _, args := range queries {
		key := strings.Join(args, " ")
		if got := runBin(args...); got != alone[key] {
			t.Errorf("%q with the daemon: %+v\nwithout: %+v", args, got, alone[key])
		}
	}
	// With the daemon a free-text search is the API's: same messages, same
	// order, same mode (and the daemon says why it ranked without vectors),
	// global flags or not.
	if r := runBin("mail", "search", "installer"); r.code != 0 || !strings.Contains(r.stdout, "Re: Solar panels") || !strings.Contains(r.stderr, "lexical only: no message vectors yet") {
		t.Errorf("mail search with the daemon: %+v", r)
	}
	c, err := daemonclient.Connect(func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatalf("connecting over TCP: %v\n%s", err, logText())
	}
	var api mail.Result
	if err := c.Do(context.Background(), "GET", "/api/mail/search?"+url.Values{"q": {"installer"}, "limit": {"20"}}.Encode(), nil, &api); err != nil {
		t.Fatal(err)
	}
	r := runBin("--log-level", "debug", "mail", "search", "installer", "--json")
	var cli mail.Result
	if err := json.Unmarshal([]byte(r.stdout), &cli); r.code != 0 || err != nil {
		t.Fatalf("mail search --json with the daemon: %+v %v", r, err)
	}
	if !slices.Equal(ids(cli.Messages), ids(api.Messages)) || cli.Mode != api.Mode || cli.Degraded != api.Degraded || len(api.Messages) == 0 {
		t.Errorf("the CLI found %v (%s, %q), the API %v (%s, %q)", ids(cli.Messages), cli.Mode, cli.Degraded, ids(api.Messages), api.Mode, api.Degraded)
	}
	if r := runBin("--log-level", "loud", "mail", "search", "x"); r.code != 2 || !strings.Contains(r.stderr, "log-level") {
		t.Errorf("a bad --log-level with the daemon: %+v", r)
	}

	stop()
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after the daemon stopped: %v", err)
	}
	if r := runBin("mail", "read", "1"); r != alone["mail read 1"] {
		t.Errorf("mail read after the daemon stopped: %+v", r)
	}
}

func ids(list []mail.Summary) []int64 {
	out := make([]int64, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}
