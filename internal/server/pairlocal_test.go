package server

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/authtoken"
	"github.com/hestia-dev/hestia/internal/config"
)

// A caller that proves nothing gets no token from local pairing: not a
// program without browser headers (another Unix user, a sandboxed
// shell_exec), not one forging a same-origin browser's headers, not a page
// on another site. Each gets a 403 naming what is missing.
func TestPairLocalNeedsProof(t *testing.T) {
	t.Parallel()
	s, tok := newTestServer(t)
	h := s.Handler()
	same := map[string]string{"Origin": "http://127.0.0.1:4317", "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}
	cases := []struct {
		name     string
		hdr      map[string]string
		body     string
		wantCode string
	}{
		{"no headers", nil, "", "browser_required"},
		{"no headers, json body", map[string]string{"Content-Type": "application/json"}, `{}`, "browser_required"},
		{"fetch metadata without origin", map[string]string{"Sec-Fetch-Site": "same-origin"}, "", "browser_required"},
		{"cross-site", map[string]string{"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"}, "", "cross_origin"},
		{"other loopback origin", map[string]string{"Origin": "http://localhost:9999"}, "", "cross_origin"},
		{"same-site, not same-origin", map[string]string{"Origin": "http://127.0.0.1:4317", "Sec-Fetch-Site": "same-site"}, "", "cross_origin"},
		{"forged same-origin, no code", same, "", "pairing_code_required"},
		{"forged same-origin, empty object", same, `{}`, "pairing_code_required"},
		{"forged same-origin, made-up request", same, `{"request":"` + strings.Repeat("a", 32) + `","code":"ABCD-EFGH"}`, "pairing_request_unknown"},
	}
	for _, tc := range cases {
		rec := do(t, h, "POST", "/api/pair/local", tc.hdr, tc.body)
		if rec.Code != 403 || strings.Contains(rec.Body.String(), tok.Value()) {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
			continue
		}
		var e struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tc.wantCode || e.Error.Message == "" {
			t.Errorf("%s: error %+v (%v), want code %s", tc.name, e.Error, err, tc.wantCode)
		}
	}
	r := httptest.NewRequest("POST", "http://127.0.0.1:4317/api/pair/local", nil)
	r.RemoteAddr = "192.168.1.20:5555"
	for k, v := range same {
		r.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 403 || strings.Contains(rec.Body.String(), tok.Value()) {
		t.Errorf("remote peer: %d %s", rec.Code, rec.Body)
	}
}

// A flood of wrong codes from rotating loopback addresses neither escapes
// the per-client limit nor locks out the device that holds a valid code.
func TestPairingFloodKeepsValidCodeWorking(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, _ := authtoken.New()
	s := New(Options{Config: config.Default().Server, Token: tok, Now: func() time.Time { return now }})
	h := s.Handler()
	rec := do(t, h, "POST", "/api/pair/codes", map[string]string{"Authorization": "Bearer " + tok.Value()}, "")
	var created struct{ Code string }
	json.Unmarshal(rec.Body.Bytes(), &created)
	exchange := func(peer, code string) int {
		r := httptest.NewRequest("POST", "http://127.0.0.1:4317/api/pair/exchange", strings.NewReader(`{"code":"`+code+`"}`))
		r.RemoteAddr = peer
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Code
	}
	compared := 0
	for i := 0; i < 1000; i++ {
		peer := "127.0." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1) + ":40000"
		switch c := exchange(peer, "WRONGWRONG"); c {
		case 401:
			compared++
		case 429:
		default:
			t.Fatalf("wrong code %d: %d", i, c)
		}
	}
	if compared > pairMaxFailures {
		t.Errorf("%d wrong codes from rotating loopback addresses were compared; want at most %d (one client)", compared, pairMaxFailures)
	}
	for i := 0; i < 400; i++ {
		exchange("10.9."+strconv.Itoa(i/250)+"."+strconv.Itoa(i%250+1)+":1", "WRONGWRONG")
	}
	if c := exchange("192.168.1.20:51000", created.Code); c != 200 {
		t.Fatalf("phone with a valid code during the flood: %d, want 200", c)
	}
}

// localServer is a server whose local pairing codes are sent to codes, as
// the daemon prints them on its terminal.
func localServer(t *testing.T, now *time.Time) (*Server, authtoken.Token, chan LocalPairCode) {
	t.Helper()
	tok, err := authtoken.New()
	if err != nil {
		t.Fatal(err)
	}
	codes := make(chan LocalPairCode, 64)
	s := New(Options{Config: config.Default().Server, Token: tok, Now: func() time.Time { return *now },
		LocalPairCode: func(c LocalPairCode) { codes <- c }})
	return s, tok, codes
}

type startAnswer struct {
	Request    string `json:"request"`
	TTLSeconds int    `json:"ttl_seconds"`
	CodeLength int    `json:"code_length"`
	Token      string `json:"token"`
}

// A browser on the daemon's own page asks to pair, gets only a request id,
// and pairs by sending the code the daemon printed; the code is single-use,
// bound to its request and origin, voided after three wrong tries and
// expires.
func TestPairLocalWithCode(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, tok, codes := localServer(t, &now)
	h := s.Handler()
	same := map[string]string{"Origin": "http://127.0.0.1:4317", "Sec-Fetch-Site": "same-origin", "User-Agent": "Firefox\x1b[2J", "Content-Type": "application/json"}
	start := func() startAnswer {
		t.Helper()
		rec := do(t, h, "POST", "/api/pair/local/start", same, "")
		var a startAnswer
		json.Unmarshal(rec.Body.Bytes(), &a)
		if rec.Code != 202 || len(a.Request) != 32 || a.CodeLength != localCodeLen || a.TTLSeconds != 120 || strings.Contains(rec.Body.String(), tok.Value()) {
			t.Fatalf("start: %d %s", rec.Code, rec.Body)
		}
		return a
	}
	pair := func(hdr map[string]string, req, code string) (int, string) {
		rec := do(t, h, "POST", "/api/pair/local", hdr, `{"request":"`+req+`","code":"`+code+`"}`)
		return rec.Code, rec.Body.String()
	}

	a := start()
	shown := <-codes
	if len(shown.Code) != localCodeLen || shown.Origin != "http://127.0.0.1:4317" || strings.ContainsRune(shown.UserAgent, '\x1b') {
		t.Fatalf("code shown: %+v", shown)
	}
	// The pending list (behind the token) shows the same code.
	rec := do(t, h, "GET", "/api/pair/local/pending", map[string]string{"Authorization": "Bearer " + tok.Value()}, "")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), shown.Code) {
		t.Fatalf("pending: %d %s", rec.Code, rec.Body)
	}
	if rec := do(t, h, "GET", "/api/pair/local/pending", nil, ""); rec.Code != 401 {
		t.Fatalf("pending without token: %d", rec.Code)
	}
	// Another origin cannot use the request, and the right code typed the
	// way people type it pairs once.
	other := map[string]string{"Origin": "http://localhost:4317"}
	if c, body := pair(other, a.Request, shown.Code); c != 403 || strings.Contains(body, tok.Value()) {
		t.Fatalf("other origin: %d %s", c, body)
	}
	if c, body := pair(same, a.Request, "wrongcod"); c != 403 || !strings.Contains(body, "invalid_code") || !strings.Contains(body, "2 attempts left") {
		t.Fatalf("wrong code: %d %s", c, body)
	}
	typed := strings.ToLower(FormatLocalCode(shown.Code))
	if c, body := pair(same, a.Request, typed); c != 200 || !strings.Contains(body, tok.Value()) {
		t.Fatalf("right code %q: %d %s", typed, c, body)
	}
	if c, body := pair(same, a.Request, shown.Code); c != 403 || strings.Contains(body, tok.Value()) {
		t.Fatalf("code reused: %d %s", c, body)
	}

	// Three wrong codes void the request: the right one no longer works.
	a = start()
	shown = <-codes
	for i := 0; i < localMaxWrong; i++ {
		pair(same, a.Request, "AAAAAAAA")
	}
	if c, body := pair(same, a.Request, shown.Code); c != 403 || !strings.Contains(body, "pairing_request_unknown") {
		t.Fatalf("after %d wrong codes: %d %s", localMaxWrong, c, body)
	}
	// A code bought with another request's id does not work either.
	_, a2 := start(), start()
	c1 := <-codes
	<-codes
	if c, _ := pair(same, a2.Request, c1.Code); c != 403 {
		t.Fatalf("code of another request: %d", c)
	}
	// Starts are rate limited: four so far this minute.
	for i := 4; i < localStartsPerMinute; i++ {
		start()
		<-codes
	}
	if rec := do(t, h, "POST", "/api/pair/local/start", same, ""); rec.Code != 429 {
		t.Fatalf("start %d in a minute: %d", localStartsPerMinute+1, rec.Code)
	}
	// Expiry.
	now = now.Add(time.Minute)
	a = start()
	shown = <-codes
	now = now.Add(localCodeTTL)
	if c, body := pair(same, a.Request, shown.Code); c != 403 || !strings.Contains(body, "pairing_request_unknown") {
		t.Fatalf("expired: %d %s", c, body)
	}
	// Starting needs the same browser checks as pairing.
	for name, hdr := range map[string]map[string]string{
		"no headers": nil,
		"cross-site": {"Origin": "http://attacker.example", "Sec-Fetch-Site": "cross-site"},
	} {
		if rec := do(t, h, "POST", "/api/pair/local/start", hdr, ""); rec.Code != 403 {
			t.Errorf("start, %s: %d %s", name, rec.Code, rec.Body)
		}
	}
}

// A daemon that accepts remote connections refuses local pairing outright.
func TestPairLocalOffWhenRemote(t *testing.T) {
	t.Parallel()
	tok, _ := authtoken.New()
	cfg := config.Default().Server
	cfg.AllowRemote = true
	s := New(Options{Config: cfg, Token: tok})
	rec := do(t, s.Handler(), "POST", "/api/pair/local/start", map[string]string{"Origin": "http://127.0.0.1:4317"}, "")
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), "local_pairing_off") {
		t.Fatalf("remote daemon: %d %s", rec.Code, rec.Body)
	}
}

func TestClientKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:1":              "127.0.0.0/8",
		"127.3.4.5:1":              "127.0.0.0/8",
		"[::ffff:127.0.0.9]:1":     "127.0.0.0/8",
		"[::1]:1":                  "::/64",
		"192.168.1.20:5":           "192.168.1.20",
		"[::ffff:192.168.1.20]:5":  "192.168.1.20",
		"[2001:db8:1:2:3:4:5:6]:9": "2001:db8:1:2::/64",
	} {
		if got := clientKey(in); got != want {
			t.Errorf("clientKey(%s) = %s, want %s", in, got, want)
		}
	}
}
