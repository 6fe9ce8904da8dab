package devices

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/store"
)

func openRegistry(t *testing.T, dir string) (*Registry, authtoken.Token) {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(dir, "devices.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tok, err := authtoken.FromString(strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(context.Background(), Options{DB: db, Local: tok})
	if err != nil {
		t.Fatal(err)
	}
	return r, tok
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   []string
		want []Scope
		err  string
	}{
		{nil, DefaultScopes, ""},
		{[]string{"read", "chat", "read"}, []Scope{Chat, Read}, ""},
		{[]string{" Admin "}, []Scope{Admin}, ""},
		{[]string{"root"}, nil, `unknown scope "root"`},
		{[]string{"", " "}, nil, "no scope given"},
	}
	for _, c := range cases {
		got, err := ParseScopes(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%v: %v %v, want %v", c.in, got, err, c.want)
		}
	}
}

func TestRequiredScope(t *testing.T) {
	t.Parallel()
	cases := []struct {
		method, path string
		want         Scope
	}{
		{"GET", "/api/chats", Read},
		{"GET", "/api/events", Read},
		{"POST", "/api/chats/c_1/messages", Chat},
		{"POST", "/v1/chat/completions", Chat},
		{"POST", "/api/approvals/a_1", Approve},
		{"PUT", "/api/chats/c_1/mode", Approve},
		{"GET", "/api/devices", Admin},
		{"GET", "/api/devices/self", Read},
		{"DELETE", "/api/devices/d_1", Admin},
		{"POST", "/api/pair/codes", Admin},
		{"POST", "/api/policy/rules", Admin},
		{"GET", "/api/policy", Read},
		{"GET", "/api/budget", Read},
		{"POST", "/api/policy/test", Read},
		{"PUT", "/api/budget", Admin},
	}
	for _, c := range cases {
		if got := RequiredScope(c.method, c.path); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.path, got, c.want)
		}
	}
}

func TestCreateListRevokePersist(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r, _ := openRegistry(t, dir)
	ctx := context.Background()
	if _, _, err := r.Create(ctx, "  ", KindBrowser, DefaultScopes); err == nil {
		t.Fatal("empty name accepted")
	}
	if _, _, err := r.Create(ctx, "x\x01y", KindBrowser, DefaultScopes); err == nil {
		t.Fatal("control character accepted")
	}
	if _, _, err := r.Create(ctx, strings.Repeat("n", MaxName+1), KindBrowser, DefaultScopes); err == nil {
		t.Fatal("long name accepted")
	}
	if _, _, err := r.Create(ctx, "phone", "toaster", DefaultScopes); err == nil {
		t.Fatal("unknown kind accepted")
	}
	d, tok, err := r.Create(ctx, "  my   phone ", KindBrowser, []Scope{Chat, Read})
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "my phone" || !strings.HasPrefix(tok, TokenPrefix) || len(tok) != len(TokenPrefix)+64 {
		t.Fatalf("device %+v token %q", d, tok)
	}
	// Only the hash is stored.
	var stored string
	if err := r.db.QueryRow(`SELECT token_hash FROM devices WHERE id = ?`, d.ID).Scan(&stored); err != nil || stored == tok || stored != hashToken(tok) {
		t.Fatalf("stored %q err %v", stored, err)
	}
	if got, ok := r.Lookup(tok); !ok || got.ID != d.ID {
		t.Fatalf("lookup %v %v", got, ok)
	}

	// A second registry on the same file sees the device (restart).
	r2, _ := openRegistry(t, dir)
	if _, ok := r2.Lookup(tok); !ok {
		t.Fatal("device lost on reopen")
	}
	if _, err := r2.Revoke(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.Revoke(ctx, "d_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke missing: %v", err)
	}
	r3, _ := openRegistry(t, dir)
	if _, ok := r3.Lookup(tok); ok {
		t.Fatal("revoked device authenticates after reopen")
	}
	list, err := r3.List(ctx)
	if err != nil || len(list) != 1 || list[0].RevokedAt == nil || !slices.Equal(list[0].Scopes, []Scope{Chat, Read}) {
		t.Fatalf("list %+v %v", list, err)
	}
}

// testServer is the real server with a registry and the real event bus.
func testServer(t *testing.T) (*httptest.Server, *Registry, authtoken.Token) {
	t.Helper()
	r, local := openRegistry(t, t.TempDir())
	cfg := config.Default().Server
	cfg.Addr = "127.0.0.1:0"
	s := server.New(server.Options{Config: cfg, Token: local})
	s.SetAuthenticator(r)
	r.Routes(s.API())
	bus := events.NewBus(nil, 0, 0)
	bus.Routes(s.API())
	s.API().HandleFunc("POST /api/chats/{id}/messages", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(202) })
	s.API().HandleFunc("POST /api/approvals/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { bus.Close(); ts.Close() })
	return ts, r, local
}

func call(t *testing.T, ts *httptest.Server, method, path, tok, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func TestScopesEnforced(t *testing.T) {
	t.Parallel()
	ts, r, local := testServer(t)
	ctx := context.Background()
	_, readOnly, _ := r.Create(ctx, "tablet", KindBrowser, []Scope{Read})
	_, chatter, _ := r.Create(ctx, "phone", KindBrowser, []Scope{Chat, Read})
	_, approver, _ := r.Create(ctx, "watch", KindBrowser, []Scope{Approve})

	cases := []struct {
		tok, method, path, body string
		want                    int
	}{
		{local.Value(), "GET", "/api/devices", "", 200},
		{readOnly, "GET", "/api/devices", "", 403},
		{readOnly, "GET", "/api/devices/self", "", 200},
		{readOnly, "POST", "/api/chats/c_1/messages", `{}`, 403},
		{chatter, "POST", "/api/chats/c_1/messages", `{}`, 202},
		{chatter, "POST", "/api/approvals/a_1", `{}`, 403},
		{approver, "POST", "/api/approvals/a_1", `{}`, 200},
		{approver, "POST", "/api/pair/codes", "", 403},
		{"hd_" + strings.Repeat("0", 64), "GET", "/api/devices/self", "", 401},
		{"", "GET", "/api/devices/self", "", 401},
	}
	for _, c := range cases {
		resp, body := call(t, ts, c.method, c.path, c.tok, c.body)
		if resp.StatusCode != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.method, c.path, resp.StatusCode, body, c.want)
		}
		if c.want == 403 && !strings.Contains(body, "scope") {
			t.Errorf("403 body does not name the scope: %s", body)
		}
	}
	_, body := call(t, ts, "GET", "/api/devices/self", chatter, "")
	var self struct {
		Name   string  `json:"name"`
		Local  bool    `json:"local"`
		Scopes []Scope `json:"scopes"`
	}
	json.Unmarshal([]byte(body), &self)
	if self.Name != "phone" || self.Local || !slices.Equal(self.Scopes, []Scope{Chat, Read}) {
		t.Fatalf("self %s", body)
	}
}

func TestPairingCreatesScopedDevice(t *testing.T) {
	t.Parallel()
	ts, r, local := testServer(t)
	resp, body := call(t, ts, "POST", "/api/pair/codes", local.Value(), `{"name":"root phone","scopes":["superuser"]}`)
	if resp.StatusCode != 400 || !strings.Contains(body, "superuser") {
		t.Fatalf("bad scope: %d %s", resp.StatusCode, body)
	}
	resp, body = call(t, ts, "POST", "/api/pair/codes", local.Value(), `{"name":"Anna's phone","scopes":["chat","read"]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("create code: %d %s", resp.StatusCode, body)
	}
	var code struct{ Code string }
	json.Unmarshal([]byte(body), &code)
	resp, body = call(t, ts, "POST", "/api/pair/exchange", "", `{"code":"`+strings.ToLower(code.Code)+`"}`)
	if resp.StatusCode != 200 {
		t.Fatalf("exchange: %d %s", resp.StatusCode, body)
	}
	var got struct{ Token string }
	json.Unmarshal([]byte(body), &got)
	if got.Token == local.Value() || !strings.HasPrefix(got.Token, TokenPrefix) {
		t.Fatal("pairing handed out the local admin token")
	}
	d, ok := r.Lookup(got.Token)
	if !ok || d.Name != "Anna's phone" || !slices.Equal(d.Scopes, []Scope{Chat, Read}) || d.Kind != KindBrowser {
		t.Fatalf("paired device %+v %v", d, ok)
	}
	// The code is single use.
	resp, _ = call(t, ts, "POST", "/api/pair/exchange", "", `{"code":"`+code.Code+`"}`)
	if resp.StatusCode != 401 {
		t.Fatalf("second exchange: %d", resp.StatusCode)
	}
	// A code created without a body pairs a device with the default scopes.
	_, body = call(t, ts, "POST", "/api/pair/codes", local.Value(), "")
	json.Unmarshal([]byte(body), &code)
	_, body = call(t, ts, "POST", "/api/pair/exchange", "", `{"code":"`+code.Code+`"}`)
	json.Unmarshal([]byte(body), &got)
	if d, ok := r.Lookup(got.Token); !ok || !slices.Equal(d.Scopes, DefaultScopes) {
		t.Fatalf("default pairing %+v %v", d, ok)
	}
}

func TestRevokeEndsStreamAndNextRequest(t *testing.T) {
	t.Parallel()
	ts, r, local := testServer(t)
	ctx := context.Background()
	d, tok, err := r.Create(ctx, "phone", KindBrowser, DefaultScopes)
	if err != nil {
		t.Fatal(err)
	}
	_, other, _ := r.Create(ctx, "laptop", KindBrowser, DefaultScopes)

	open := func(tok string) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("GET", ts.URL+"/api/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("stream: %v %v", resp, err)
		}
		br := bufio.NewReader(resp.Body)
		line, _ := br.ReadString('\n')
		if !strings.HasPrefix(line, "event: ready") {
			t.Fatalf("first line %q", line)
		}
		return resp, br
	}
	resp, br := open(tok)
	defer resp.Body.Close()
	resp2, _ := open(other)
	defer resp2.Body.Close()
	if n := r.OpenRequests(d.ID); n != 1 {
		t.Fatalf("open requests %d", n)
	}

	res, body := call(t, ts, "DELETE", "/api/devices/"+d.ID, local.Value(), "")
	if res.StatusCode != 200 || !strings.Contains(body, "revoked_at") {
		t.Fatalf("revoke: %d %s", res.StatusCode, body)
	}
	// The stream ends: reading reaches EOF instead of waiting for the
	// next heartbeat (the test's deadline is the suite's).
	if _, err := io.Copy(io.Discard, br); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("stream read: %v", err)
	}
	if res, _ := call(t, ts, "GET", "/api/devices/self", tok, ""); res.StatusCode != 401 {
		t.Fatalf("revoked token: %d", res.StatusCode)
	}
	// Other devices are untouched.
	if res, _ := call(t, ts, "GET", "/api/devices/self", other, ""); res.StatusCode != 200 {
		t.Fatalf("other device: %d", res.StatusCode)
	}
	if r.OpenRequests(d.ID) != 0 {
		t.Fatal("revoked device still has open requests")
	}
	res, _ = call(t, ts, "DELETE", "/api/devices/d_nope", local.Value(), "")
	if res.StatusCode != 404 {
		t.Fatalf("revoke unknown: %d", res.StatusCode)
	}
}

func TestLastSeenRecorded(t *testing.T) {
	t.Parallel()
	ts, r, _ := testServer(t)
	d, tok, _ := r.Create(context.Background(), "phone", KindCLI, DefaultScopes)
	if d.LastSeenAt != nil {
		t.Fatal("new device already seen")
	}
	call(t, ts, "GET", "/api/devices/self", tok, "")
	got, err := r.Get(context.Background(), d.ID)
	if err != nil || got.LastSeenAt == nil {
		t.Fatalf("last seen not stored: %+v %v", got, err)
	}
}
