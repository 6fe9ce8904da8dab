package audit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
	in := map[string]any{
		"password":      "hunter2",
		"api_key":       "abc",
		"Authorization": "Bearer abcdefghijklmnop",
		"token_count":   float64(12),
		"session_id":    "",
		"note":          "call with sk-proj-ABCDEFGH12345678 and Bearer eyJabc.defghijkl.mnopqrstu",
		"url":           "https://alice:s3cret@mail.example.com/inbox",
		"key":           pem,
		"free":          "login with password=hunter2; token: xyz123",
		"gh":            "ghp_abcdefghijklmnopqrstuvwxyz0123",
		"aws":           "AKIAABCDEFGHIJKLMNOP",
		"body":          strings.Repeat("b", 3000),
		"long":          strings.Repeat("l", 5000),
		"list":          make([]any, 80),
		"nested":        nest(20),
		"headers":       map[string]any{"Cookie": "sid=1", "X-Api-Key": "k"},
	}
	out := Redact(in).(map[string]any)
	enc, _ := json.Marshal(out)
	s := string(enc)
	for _, leak := range []string{"hunter2", "sk-proj-ABCDEFGH12345678", "abcdefghijklmnop", "s3cret", "MIIEow", "xyz123", "ghp_abcdef", "AKIAABCDEFGHIJKLMNOP", "eyJabc", "sid=1"} {
		if strings.Contains(s, leak) {
			t.Errorf("leaked %q in %s", leak, s)
		}
	}
	if out["token_count"] != float64(12) || out["session_id"] != "" {
		t.Errorf("harmless values masked: %v %v", out["token_count"], out["session_id"])
	}
	if u := out["url"].(string); u != "https://[redacted]@mail.example.com/inbox" {
		t.Errorf("url %q", u)
	}
	if b := out["body"].(string); !strings.Contains(b, "characters cut") || len(b) > SnippetLen+50 {
		t.Errorf("body not cut to a snippet: %d", len(b))
	}
	if l := out["long"].(string); len([]rune(l)) > MaxString+50 {
		t.Errorf("long string kept %d", len(l))
	}
	if l := out["list"].([]any); len(l) != MaxItems+1 {
		t.Errorf("list kept %d items", len(l))
	}
	if !strings.Contains(s, `"[nested]"`) {
		t.Error("deep nesting not bounded")
	}
}

func nest(n int) any {
	if n == 0 {
		return "leaf"
	}
	return map[string]any{"n": nest(n - 1)}
}

func TestListFiltersAndHTTP(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "audit.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	l := New(db, func() time.Time { now = now.Add(time.Minute); return now }, nil)
	l.Record(ctx, Entry{Type: TypeUserMessage, ChatID: "c1", Summary: "hello there"})
	l.Record(ctx, Entry{Type: TypeToolRun, ChatID: "c1", Tool: "read_file", Summary: "read_file ok", Data: map[string]any{"path": "/x/notes.md"}})
	l.Record(ctx, Entry{Type: TypeToolRun, ChatID: "c2", Tool: "write_file", Summary: "write_file ok"})
	l.Record(ctx, Entry{Type: TypePolicyDecision, ChatID: "c2", Tool: "write_file", Summary: "write_file → gate (threshold)"})
	if l.Failures() != 0 {
		t.Fatal("record failed")
	}
	cases := []struct {
		f    Filter
		want int
	}{
		{Filter{}, 4}, {Filter{Type: TypeToolRun}, 2}, {Filter{Type: "policy.*"}, 1}, {Filter{ChatID: "c1"}, 2},
		{Filter{Tool: "write_file"}, 2}, {Filter{Text: "notes.md"}, 1}, {Filter{Text: "100%"}, 0},
		{Filter{Since: time.Date(2026, 3, 1, 10, 2, 30, 0, time.UTC)}, 2}, {Filter{Until: time.Date(2026, 3, 1, 10, 1, 30, 0, time.UTC)}, 1},
		{Filter{Before: 3}, 2}, {Filter{Limit: 1}, 1},
	}
	for _, c := range cases {
		evs, err := l.List(ctx, c.f)
		if err != nil || len(evs) != c.want {
			t.Errorf("%+v: %d events (%v), want %d", c.f, len(evs), err, c.want)
		}
	}
	mux := http.NewServeMux()
	l.Routes(mux)
	get := func(q string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "/api/audit"+q, nil))
		return w
	}
	if w := get("?type=tool.run&chat=c2"); w.Code != 200 || strings.Count(w.Body.String(), `"hash"`) != 1 {
		t.Errorf("filtered: %d %s", w.Code, w.Body)
	}
	if w := get("?limit=2"); !strings.Contains(w.Body.String(), `"next_before":3`) {
		t.Errorf("paging: %s", w.Body)
	}
	for _, bad := range []string{"?since=yesterday", "?limit=9999", "?before=x"} {
		if w := get(bad); w.Code != 400 {
			t.Errorf("%s: %d", bad, w.Code)
		}
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/api/audit/verify", nil))
	if !strings.Contains(w.Body.String(), `"ok":true`) {
		t.Errorf("verify: %s", w.Body)
	}
}
