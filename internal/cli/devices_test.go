package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
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
