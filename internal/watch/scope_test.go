package watch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/server"
	"github.com/hestia-dev/hestia/internal/store"
)

// scopeServer is the real server with the real device registry in front
// of the watch routes, as the daemon wires them.
func scopeServer(t *testing.T, h *harness) (*httptest.Server, *devices.Registry, string) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "devices.db"), devices.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	local, err := authtoken.FromString(strings.Repeat("b", 64))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := devices.Open(ctx, devices.Options{DB: db, Local: local})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Server
	cfg.Addr = "127.0.0.1:0"
	s := server.New(server.Options{Config: cfg, Token: local})
	s.SetAuthenticator(reg)
	h.e.Routes(s.API())
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts, reg, local.Value()
}

// TestGrantsNeedApproveScope: a grant is an approval given in advance, so
// a device that may chat but not approve cannot create a watch with
// grants, nor resume one (pausing, stopping and deleting only take
// authority away and stay with chat). The created watch shows exactly
// what each grant allows.
func TestGrantsNeedApproveScope(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ts, reg, local := scopeServer(t, h)
	ctx := context.Background()
	_, chatter, _ := reg.Create(ctx, "phone", devices.KindBrowser, []devices.Scope{devices.Chat, devices.Read})
	_, approver, _ := reg.Create(ctx, "laptop", devices.KindBrowser, []devices.Scope{devices.Chat, devices.Approve, devices.Read})

	call := func(tok, method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, b)
		}
		return resp.StatusCode, out
	}
	errMsg := func(out map[string]any) string {
		e, _ := out["error"].(map[string]any)
		m, _ := e["message"].(string)
		return m
	}

	p := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(p, []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	exp := h.c.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	spec := func(rules string) string {
		b, _ := json.Marshal(p)
		return `{"source":"file","ref":` + string(b) + `,"instruction":"tell Ann","expires_at":"` + exp + `","rules":` + rules + `}`
	}
	const grantRules = `[{"id":"chg","event":"file.changed","grants":[{"tool":"fake_send","args":{` +
		`"to":{"exact":["ann@example.org"]},"subject":{"template":"{{watch.ref}} changed"},"body":{"set":["changed","changed again"]}}}]}]`
	const plainRules = `[{"id":"chg","event":"file.changed"}]`
	count := func() int {
		ws, err := h.e.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return len(ws)
	}

	// chat alone: refused, naming the scope, and nothing is stored.
	code, out := call(chatter, "POST", "/api/watches", spec(grantRules))
	if code != http.StatusForbidden || !strings.Contains(errMsg(out), "approve scope") || !strings.Contains(errMsg(out), `"phone"`) {
		t.Fatalf("chat-scope device creating a watch with grants: %d %v", code, out)
	}
	if n := count(); n != 0 {
		t.Fatalf("a refused watch was stored (%d watches)", n)
	}
	// chat alone, no grants: it only notifies, so chat suffices.
	if code, out = call(chatter, "POST", "/api/watches", spec(plainRules)); code != http.StatusCreated {
		t.Fatalf("chat-scope device creating a watch without grants: %d %v", code, out)
	}
	// Bad input still gets its own error, not a scope error.
	if code, out = call(chatter, "POST", "/api/watches", `[1]`); code != http.StatusBadRequest {
		t.Fatalf("a non-object body: %d %v", code, out)
	}

	// approve: created, and the answer states the grant in full,
	// including the default limit of one call.
	code, out = call(approver, "POST", "/api/watches", spec(grantRules))
	if code != http.StatusCreated {
		t.Fatalf("approve-scope device creating a watch with grants: %d %v", code, out)
	}
	want := `[{"args":{"body":{"set":["changed","changed again"]},"subject":{"template":"{{watch.ref}} changed"},"to":{"exact":["ann@example.org"]}},"max":1,"tool":"fake_send"}]`
	grantsOf := func(w map[string]any) string {
		rules, _ := w["rules"].([]any)
		if len(rules) != 1 {
			return ""
		}
		b, _ := json.Marshal(rules[0].(map[string]any)["grants"])
		return string(b)
	}
	if got := grantsOf(out); got != want {
		t.Fatalf("create response grants\n got %s\nwant %s", got, want)
	}
	id, _ := out["id"].(string)
	code, list := call(chatter, "GET", "/api/watches", "")
	found := false
	for _, w := range list["watches"].([]any) {
		if m := w.(map[string]any); m["id"] == id {
			found = true
			if got := grantsOf(m); got != want {
				t.Fatalf("listed grants\n got %s\nwant %s", got, want)
			}
		}
	}
	if code != 200 || !found {
		t.Fatalf("list: %d %v", code, list)
	}

	// Pausing takes authority away: chat may. Resuming re-arms the grants:
	// only approve may.
	if code, out = call(chatter, "POST", "/api/watches/"+id+"/pause", ""); code != 200 || out["state"] != StatePaused {
		t.Fatalf("chat-scope pause: %d %v", code, out)
	}
	if code, out = call(chatter, "POST", "/api/watches/"+id+"/resume", ""); code != http.StatusForbidden || !strings.Contains(errMsg(out), "approve scope") {
		t.Fatalf("chat-scope device resuming a watch with grants: %d %v", code, out)
	}
	if w, _ := h.e.Get(ctx, id); w.State != StatePaused {
		t.Fatalf("a refused resume left the watch %s", w.State)
	}
	if code, out = call(approver, "POST", "/api/watches/"+id+"/resume", ""); code != 200 || out["state"] != StateActive {
		t.Fatalf("approve-scope resume: %d %v", code, out)
	}
	// The local token is the user: admin holds every scope.
	if code, out = call(local, "POST", "/api/watches", spec(grantRules)); code != http.StatusCreated {
		t.Fatalf("local token creating a watch with grants: %d %v", code, out)
	}
}

// TestRequireFailsClosed: the handler-side scope check refuses a request
// that carries no identity rather than treating it as the user.
func TestRequireFailsClosed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mux := http.NewServeMux()
	h.e.Routes(mux)
	p := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(p, []byte("a"), 0o600)
	b, _ := json.Marshal(p)
	body := `{"source":"file","ref":` + string(b) + `,"instruction":"x","expires_at":"` + h.c.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","rules":[{"event":"file.changed","grants":[{"tool":"fake_send","args":{"to":{"exact":["a@b.c"]},"subject":{"exact":"s"},"body":{"exact":"b"}}}]}]}`
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("POST", "/api/watches", strings.NewReader(body)))
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "no device identity") {
		t.Fatalf("no identity: %d %s", rec.Code, rec.Body)
	}
}
