package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/server"
)

func TestPairDevicesListRevoke(t *testing.T) {
	t.Parallel()
	home, env, _ := daemonEnv(t)
	base := "http://" + env["HESTIA_SERVER_ADDR"]

	if r := run(t, home, env, "pair", "--scopes", "chat,root"); r.code != 2 || !strings.Contains(r.stderr, `"root"`) {
		t.Fatalf("bad scope: %+v", r)
	}
	r := run(t, home, env, "pair", "--name", "Test phone", "--scopes", "read,chat")
	if r.code != 0 || !strings.Contains(r.stdout, "/pair#code=") || !strings.Contains(r.stdout, "█") || !strings.Contains(r.stdout, "chat,read") {
		t.Fatalf("pair: %+v", r)
	}
	r = run(t, home, env, "pair", "--name", "Test phone", "--scopes", "read,chat", "--json")
	var p struct{ Code, Link string }
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil || p.Code == "" || !strings.HasSuffix(p.Link, "#code="+p.Code) {
		t.Fatalf("pair json: %v %+v", err, r)
	}
	resp, err := http.Post(base+"/api/pair/exchange", "application/json", strings.NewReader(`{"code":"`+p.Code+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Token string }
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	get := func() int {
		req, _ := http.NewRequest("GET", base+"/api/chats", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := get(); c != 200 {
		t.Fatalf("paired device: %d", c)
	}

	r = run(t, home, env, "devices", "list", "--json")
	var list struct {
		Devices []deviceJSON `json:"devices"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Devices) != 1 || list.Devices[0].Name != "Test phone" || list.Devices[0].LastSeenAt == nil {
		t.Fatalf("list json: %v %+v", err, r)
	}
	id := list.Devices[0].ID
	r = run(t, home, env, "devices", "list")
	if r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "chat,read") || !strings.Contains(r.stdout, "active") {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, home, env, "devices", "revoke"); r.code != 2 {
		t.Fatalf("revoke without id: %+v", r)
	}
	if r := run(t, home, env, "devices", "revoke", "d_unknown"); r.code != 1 || !strings.Contains(r.stderr, "does not exist") {
		t.Fatalf("revoke unknown: %+v", r)
	}
	r = run(t, home, env, "devices", "revoke", id, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "revoked_at") {
		t.Fatalf("revoke: %+v", r)
	}
	if c := get(); c != 401 {
		t.Fatalf("revoked device: %d", c)
	}
	if r := run(t, home, env, "devices", "frobnicate"); r.code != 2 {
		t.Fatalf("unknown subcommand: %+v", r)
	}
}

// A browser on this machine asks to pair; `hestia pair --local`, which
// proves it can read the home by using its token, shows the code, and the
// code pairs that browser's request.
func TestPairLocalShowsCode(t *testing.T) {
	t.Parallel()
	home, env, _ := daemonEnv(t)
	base := "http://" + env["HESTIA_SERVER_ADDR"]
	if r := run(t, home, env, "pair", "--local"); r.code != 0 || !strings.Contains(r.stdout, "No browser on this machine is waiting") {
		t.Fatalf("nothing pending: %+v", r)
	}
	if r := run(t, home, env, "pair", "--local", "--scopes", "read"); r.code != 2 || !strings.Contains(r.stderr, "--scopes") {
		t.Fatalf("--local with --scopes: %+v", r)
	}
	post := func(path, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Origin", base)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	c, started := post("/api/pair/local/start", "")
	if c != 202 {
		t.Fatalf("start: %d %v", c, started)
	}
	r := run(t, home, env, "pair", "--local", "--json")
	var pending struct {
		Requests []struct{ Code, Origin string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &pending); err != nil || len(pending.Requests) != 1 || pending.Requests[0].Origin != base {
		t.Fatalf("pair --local --json: %v %+v", err, r)
	}
	code := pending.Requests[0].Code
	if r := run(t, home, env, "pair", "--local"); r.code != 0 || !strings.Contains(r.stdout, code[:4]+"-"+code[4:]) {
		t.Fatalf("pair --local: %+v", r)
	}
	c, paired := post("/api/pair/local", `{"request":"`+started["request"].(string)+`","code":"`+code+`"}`)
	tok, err := os.ReadFile(filepath.Join(home, "auth-token"))
	if err != nil {
		t.Fatal(err)
	}
	if c != 200 || paired["token"] != strings.TrimSpace(string(tok)) {
		t.Fatalf("pairing with the code: %d %v", c, paired)
	}
}

func TestPrintLocalPairCode(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	printLocalPairCode(&b, server.LocalPairCode{Code: "ABCDEFGH", Origin: "http://127.0.0.1:4317", UserAgent: "Firefox", CreatedAt: at, ExpiresAt: at.Add(2 * time.Minute)})
	want := "Pairing code for the browser at http://127.0.0.1:4317 (Firefox): ABCD-EFGH. Type it on that page within 2 minutes; `hestia pair --local` shows it too.\n"
	if b.String() != want {
		t.Fatalf("got %q\nwant %q", b.String(), want)
	}
}
