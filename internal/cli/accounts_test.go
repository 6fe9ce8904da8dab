package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/oauth/oauthtest"
)

// hookWriter collects output and calls onURL once for the first http URL
// printed on its own line: the test's browser, or its user at another
// device.
type hookWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	fired bool
	onURL func(string)
}

var printedURL = regexp.MustCompile(`(?m)^\s+(http://\S+)$`)

func (w *hookWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if m := printedURL.FindStringSubmatch(w.buf.String()); m != nil && !w.fired && w.onURL != nil {
		w.fired = true
		go w.onURL(m[1])
	}
	return n, err
}

func (w *hookWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func runHooked(t *testing.T, home string, onURL func(string), args ...string) (int, string, string) {
	t.Helper()
	out := &hookWriter{onURL: onURL}
	var errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: out, Stderr: &errb, Version: "test",
		Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return ""
		}}
	code := Main(context.Background(), args, env)
	return code, out.String(), errb.String()
}

func accountsHome(t *testing.T, srv *oauthtest.Server) string {
	t.Helper()
	home := t.TempDir()
	cfg := fmt.Sprintf(`[[oauth.accounts]]
name = "work"
provider = "custom"
client_id = %q
scopes = ["mail", "calendar"]
auth_url = %q
token_url = %q
device_url = %q
revoke_url = %q

[[oauth.accounts]]
name = "gmail"
provider = "google"
client_id = "123.apps.googleusercontent.com"
`, srv.ClientID(), srv.AuthURL(), srv.TokenURL(), srv.DeviceAuthURL(), srv.RevokeURL())
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// connect (browser), list, disconnect; no token is ever printed.
func TestAccountsConnectListDisconnect(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	home := accountsHome(t, srv)

	if r := run(t, home, nil, "accounts", "list"); r.code != 0 || !strings.Contains(r.stdout, "not connected") || !strings.Contains(r.stdout, "hestia accounts connect gmail") {
		t.Errorf("list before connecting: %+v", r)
	}
	var page string
	browsed := make(chan struct{})
	code, out, errs := runHooked(t, home, func(u string) {
		defer close(browsed)
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(u)
		if err != nil {
			t.Error(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page = string(b)
	}, "accounts", "connect", "work", "--no-browser", "--timeout", "20s")
	<-browsed
	if code != 0 || !strings.Contains(out, "Connected work (custom)") || !strings.Contains(page, "You can close this tab") {
		t.Fatalf("connect: %d %q %q; page %q", code, out, errs, page)
	}
	tokenFile := filepath.Join(home, "oauth", "work.json")
	data, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		RefreshToken string                       `json:"refresh_token"`
		Access       map[string]map[string]string `json:"access"`
	}
	json.Unmarshal(data, &g)
	if g.RefreshToken == "" {
		t.Fatal("no refresh token stored")
	}
	if fi, _ := os.Stat(tokenFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", fi.Mode().Perm())
	}

	r := run(t, home, nil, "accounts", "list")
	if r.code != 0 || !regexp.MustCompile(`(?m)^work\s+custom\s+ok\s+\d{4}-\d\d-\d\d \d\d:\d\d\s+mail calendar$`).MatchString(r.stdout) {
		t.Errorf("list: %+v", r)
	}
	rj := run(t, home, nil, "accounts", "list", "--json")
	var list struct {
		Accounts []struct{ Account, State string } `json:"accounts"`
	}
	if err := json.Unmarshal([]byte(rj.stdout), &list); err != nil || len(list.Accounts) != 2 || list.Accounts[1].State != "ok" {
		t.Errorf("list --json: %v %+v", err, rj)
	}
	for _, o := range []string{out, errs, r.stdout, rj.stdout} {
		if strings.Contains(o, g.RefreshToken) {
			t.Error("a command printed the refresh token")
		}
		for _, a := range g.Access {
			if strings.Contains(o, a["token"]) {
				t.Error("a command printed the access token")
			}
		}
	}

	if r := run(t, home, nil, "accounts", "disconnect", "work"); r.code != 0 || !strings.Contains(r.stdout, "the provider revoked Hestia's access") {
		t.Errorf("disconnect: %+v", r)
	}
	if _, err := os.Stat(tokenFile); !os.IsNotExist(err) {
		t.Errorf("token file still there: %v", err)
	}
	if r := run(t, home, nil, "accounts", "disconnect", "work"); r.code != 1 || !strings.Contains(r.stderr, "not connected") {
		t.Errorf("second disconnect: %+v", r)
	}
}

// --device shows the code and waits for the user's approval elsewhere.
func TestAccountsConnectDevice(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{DeviceInterval: 1})
	defer srv.Close()
	home := accountsHome(t, srv)
	code, out, errs := runHooked(t, home, func(string) { srv.ApproveDevice() }, "accounts", "connect", "work", "--device", "--timeout", "20s")
	if code != 0 || !strings.Contains(out, "enter the code:") || !strings.Contains(out, "Connected work") {
		t.Fatalf("device connect: %d %q %q", code, out, errs)
	}
}

// A dead grant: doctor fails naming the command to run.
func TestAccountsDoctorReconnect(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{AccessTTL: time.Minute})
	defer srv.Close()
	home := accountsHome(t, srv)
	code, out, errs := runHooked(t, home, func(u string) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
		}
	}, "accounts", "connect", "work", "--no-browser", "--timeout", "20s")
	if code != 0 {
		t.Fatalf("connect: %q %q", out, errs)
	}
	srv.RevokeAll()
	// The one-minute token is within the refresh margin at once.
	r := run(t, home, nil, "doctor")
	if r.code != 1 || !regexp.MustCompile(`(?m)^FAIL\s+oauth\.work\s+reconnect with hestia accounts connect work`).MatchString(r.stdout) {
		t.Errorf("doctor: %+v", r)
	}
	if !regexp.MustCompile(`(?m)^WARN\s+oauth\.gmail\s+not connected yet`).MatchString(r.stdout) {
		t.Errorf("doctor (gmail): %s", r.stdout)
	}
	if r := run(t, home, nil, "accounts", "list"); !strings.Contains(r.stdout, "reconnect needed") || !strings.Contains(r.stdout, "invalid_grant") {
		t.Errorf("list: %+v", r)
	}
}

func TestAccountsUsage(t *testing.T) {
	t.Parallel()
	srv := oauthtest.New(oauthtest.Options{})
	defer srv.Close()
	home := accountsHome(t, srv)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"accounts"}, 2, "usage: hestia accounts"},
		{[]string{"accounts", "frob"}, 2, `unknown accounts command "frob"`},
		{[]string{"accounts", "connect"}, 2, "usage: hestia accounts connect NAME"},
		{[]string{"accounts", "connect", "a", "b"}, 2, `unexpected argument "b"`},
		{[]string{"accounts", "connect", "work", "--port", "70000"}, 2, "not a port"},
		{[]string{"accounts", "connect", "nope"}, 1, `no OAuth account named "nope"`},
		{[]string{"accounts", "disconnect"}, 2, "usage: hestia accounts disconnect NAME"},
	} {
		r := run(t, home, nil, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %+v", c.args, r)
		}
	}
	empty := t.TempDir()
	if r := run(t, empty, nil, "accounts", "list"); r.code != 0 || !strings.Contains(r.stdout, "No OAuth accounts are configured") {
		t.Errorf("no accounts: %+v", r)
	}
}
