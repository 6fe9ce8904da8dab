package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
)

func newTestServer(t *testing.T) (*Server, authtoken.Token) {
	t.Helper()
	tok, err := authtoken.New()
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Server
	cfg.Addr = "127.0.0.1:0"
	s := New(Options{Config: cfg, Token: tok, Version: "test-1"})
	s.API().HandleFunc("GET /api/ping", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong") })
	return s, tok
}

func do(t *testing.T, h http.Handler, method, path string, hdr map[string]string, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "http://127.0.0.1:4317"+path, strings.NewReader(body))
	r.RemoteAddr = "127.0.0.1:50000"
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestHealthNeedsNoAuth(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t)
	rec := do(t, s.Handler(), "GET", "/health", nil, "")
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	var body map[string]string
	json.Unmarshal(rec.Body.Bytes(), &body)
	if body["status"] != "ok" || body["version"] != "test-1" {
		t.Fatalf("body %s", rec.Body)
	}
}

func TestAuth(t *testing.T) {
	t.Parallel()
	s, tok := newTestServer(t)
	h := s.Handler()
	cases := []struct {
		name, header string
		want         int
	}{
		{"missing", "", 401},
		{"wrong", "Bearer " + strings.Repeat("0", 64), 401},
		{"prefix of right", "Bearer " + tok.Value()[:40], 401},
		{"no scheme", tok.Value(), 401},
		{"basic scheme", "Basic " + tok.Value(), 401},
		{"right", "Bearer " + tok.Value(), 200},
		{"right lowercase scheme", "bearer " + tok.Value(), 200},
	}
	var first string
	for _, tc := range cases {
		hdr := map[string]string{}
		if tc.header != "" {
			hdr["Authorization"] = tc.header
		}
		rec := do(t, h, "GET", "/api/ping", hdr, "")
		if rec.Code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, rec.Code, tc.want)
		}
		if tc.want == 401 {
			// Every rejection is byte-identical: nothing distinguishes
			// missing from wrong.
			if first == "" {
				first = rec.Body.String()
			} else if rec.Body.String() != first {
				t.Errorf("%s: 401 body differs: %s vs %s", tc.name, rec.Body, first)
			}
			if !strings.Contains(rec.Header().Get("Content-Type"), "json") {
				t.Errorf("%s: 401 not JSON", tc.name)
			}
		}
	}
	// /v1 is protected too, and unknown API paths do not leak a route list.
	if rec := do(t, h, "GET", "/v1/models", nil, ""); rec.Code != 401 {
		t.Errorf("/v1 without token: %d", rec.Code)
	}
	if rec := do(t, h, "GET", "/api/nope", nil, ""); rec.Code != 401 {
		t.Errorf("unknown api path without token: %d", rec.Code)
	}
	if rec := do(t, h, "GET", "/api/nope", map[string]string{"Authorization": "Bearer " + tok.Value()}, ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), "not_found") {
		t.Errorf("unknown api path with token: %d %s", rec.Code, rec.Body)
	}
}

func TestHostGuard(t *testing.T) {
	t.Parallel()
	s, _ := newTestServer(t)
	r := httptest.NewRequest("GET", "http://evil.example:4317/health", nil)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, r)
	if rec.Code != 403 {
		t.Fatalf("rebinding host accepted: %d", rec.Code)
	}
	for _, host := range []string{"localhost:4317", "[::1]:4317", "127.0.0.1"} {
		r := httptest.NewRequest("GET", "/health", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, r)
		if rec.Code != 200 {
			t.Errorf("host %s refused: %d", host, rec.Code)
		}
	}
}

func TestPairExchange(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, _ := authtoken.New()
	cfg := config.Default().Server
	s := New(Options{Config: cfg, Token: tok, Now: func() time.Time { return now }})
	h := s.Handler()
	auth := map[string]string{"Authorization": "Bearer " + tok.Value()}
	rec := do(t, h, "POST", "/api/pair/codes", auth, "")
	var created struct{ Code string }
	json.Unmarshal(rec.Body.Bytes(), &created)
	if rec.Code != 200 || len(created.Code) != pairCodeLen {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/api/pair/codes", nil, ""); rec.Code != 401 {
		t.Fatalf("code created without auth: %d", rec.Code)
	}
	rec = do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"`+strings.ToLower(created.Code)+`"}`)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), tok.Value()) {
		t.Fatalf("exchange: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"`+created.Code+`"}`); rec.Code != 401 {
		t.Fatalf("code reused: %d", rec.Code)
	}
	for _, bad := range []string{``, `{"code":1}`, `{"code":"x","extra":true}`, `nonsense`} {
		if rec := do(t, h, "POST", "/api/pair/exchange", nil, bad); rec.Code != 400 {
			t.Errorf("body %q: %d", bad, rec.Code)
		}
	}
	// Expiry.
	rec = do(t, h, "POST", "/api/pair/codes", auth, "")
	json.Unmarshal(rec.Body.Bytes(), &created)
	now = now.Add(pairCodeTTL + time.Second)
	if rec := do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"`+created.Code+`"}`); rec.Code != 401 {
		t.Fatalf("expired code accepted: %d", rec.Code)
	}
	// Guessing is rate limited, and then even a right code waits.
	rec = do(t, h, "POST", "/api/pair/codes", auth, "")
	json.Unmarshal(rec.Body.Bytes(), &created)
	for i := 0; i < pairMaxFailures; i++ {
		do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"WRONGWRONG"}`)
	}
	if rec := do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"`+created.Code+`"}`); rec.Code != 429 {
		t.Fatalf("after %d failures: %d", pairMaxFailures, rec.Code)
	}
	now = now.Add(time.Minute)
	if rec := do(t, h, "POST", "/api/pair/exchange", nil, `{"code":"`+created.Code+`"}`); rec.Code != 200 {
		t.Fatalf("after cool-down: %d", rec.Code)
	}
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	t.Parallel()
	s, tok := newTestServer(t)
	started := make(chan struct{})
	s.API().HandleFunc("GET /api/slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		io.WriteString(w, "finished")
	})
	ln, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/slow", nil)
		req.Header.Set("Authorization", "Bearer "+tok.Value())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res <- result{body: string(b)}
	}()
	<-started
	cancel()
	r := <-res
	if r.err != nil || r.body != "finished" {
		t.Fatalf("in-flight request: %q %v", r.body, r.err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/health"); err == nil {
		t.Fatal("server still accepting after shutdown")
	}
}

// Wrong pairing codes lock out the client that sent them, not everybody: a
// valid code from another client still pairs. A global ceiling, well above
// one client's allowance, still bounds guessing from many addresses.
func TestPairingLockoutIsPerClient(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, _ := authtoken.New()
	cfg := config.Default().Server
	s := New(Options{Config: cfg, Token: tok, Now: func() time.Time { return now }})
	h := s.Handler()
	auth := map[string]string{"Authorization": "Bearer " + tok.Value()}
	newCode := func() string {
		rec := do(t, h, "POST", "/api/pair/codes", auth, "")
		var created struct{ Code string }
		json.Unmarshal(rec.Body.Bytes(), &created)
		return created.Code
	}
	exchange := func(peer, code string) int {
		r := httptest.NewRequest("POST", "http://127.0.0.1:4317/api/pair/exchange", strings.NewReader(`{"code":"`+code+`"}`))
		r.RemoteAddr = peer
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	attacker, phone := "192.168.1.66:40000", "192.168.1.20:51000"
	for i := 0; i < pairMaxFailures; i++ {
		if c := exchange(attacker, "WRONGWRONG"); c != 401 {
			t.Fatalf("wrong code %d: %d", i, c)
		}
	}
	code := newCode()
	if c := exchange(attacker, code); c != 429 {
		t.Fatalf("locked-out client: %d, want 429", c)
	}
	// Another port of the same address is the same client.
	if c := exchange("192.168.1.66:40001", code); c != 429 {
		t.Fatalf("same client, other port: %d, want 429", c)
	}
	if c := exchange(phone, code); c != 200 {
		t.Fatalf("valid code from a client that is not locked out: %d, want 200", c)
	}
	// Many clients together hit the global ceiling, which still leaves
	// room for more than one client's allowance.
	if pairGlobalFailures < 5*pairMaxFailures {
		t.Fatalf("global ceiling %d is too close to the per-client limit %d", pairGlobalFailures, pairMaxFailures)
	}
	for i := 0; exchange("10.0.0."+strconv.Itoa(i%250+1)+":1", "WRONGWRONG") != 429; i++ {
		if i > 2*pairGlobalFailures {
			t.Fatal("no global ceiling on wrong codes")
		}
	}
	now = now.Add(time.Minute)
	if c := exchange(phone, newCode()); c != 200 {
		t.Fatalf("after cool-down: %d", c)
	}
}
