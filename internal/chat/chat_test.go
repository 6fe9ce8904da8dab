package chat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "chats.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return New(db, nil)
}

func TestTranscriptRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	c, err := s.Create(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []*Message{
		{Role: RoleUser, Content: "  find   my invoice  "},
		{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{{ID: "c1", Name: "mail_search", Arguments: json.RawMessage(`{"q":"invoice"}`)}}},
		{Role: RoleTool, ToolCallID: "c1", ToolName: "mail_search", Content: "2 results", Tool: &ToolRun{Input: json.RawMessage(`{"q":"invoice"}`), EffectiveInput: json.RawMessage(`{"q":"bill"}`), Decision: "edited", Status: "ok", DurationMS: 12}},
	}
	if err := s.Append(ctx, c.ID, msgs...); err != nil {
		t.Fatal(err)
	}
	got, err := s.Messages(ctx, c.ID, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("messages %v %v", got, err)
	}
	if got[1].ToolCalls[0].Name != "mail_search" || got[2].Tool.Decision != "edited" || string(got[2].Tool.EffectiveInput) != `{"q":"bill"}` || got[2].Seq != 3 {
		t.Errorf("round trip lost data: %+v", got)
	}
	c2, _ := s.Get(ctx, c.ID)
	if c2.Title != "find my invoice" || c2.MessageCount != 3 {
		t.Errorf("auto title / count: %+v", c2)
	}
	if last, _ := s.Messages(ctx, c.ID, 1); len(last) != 1 || last[0].Seq != 3 {
		t.Errorf("limit: %+v", last)
	}
	if err := s.Append(ctx, c.ID, &Message{Role: "system"}); err == nil {
		t.Error("bad role accepted")
	}
	if err := s.Append(ctx, "c_missing", &Message{Role: RoleUser}); err == nil {
		t.Error("append to missing chat")
	}
}

func TestHTTP(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	var created, deleted []string
	mux := http.NewServeMux()
	(&API{Store: s, Hooks: Hooks{Created: func(c Chat) { created = append(created, c.ID) }, Deleted: func(id string) { deleted = append(deleted, id) }}}).Routes(mux)
	do := func(method, path, body string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		var r *http.Request
		if body == "" {
			r = httptest.NewRequest(method, path, nil)
		} else {
			r = httptest.NewRequest(method, path, strings.NewReader(body))
		}
		mux.ServeHTTP(w, r)
		return w
	}
	w := do("POST", "/api/chats", `{"title":"Trip"}`)
	if w.Code != 201 {
		t.Fatalf("create %d %s", w.Code, w.Body)
	}
	var c Chat
	json.Unmarshal(w.Body.Bytes(), &c)
	if w := do("POST", "/api/chats", ""); w.Code != 201 {
		t.Errorf("create without body: %d %s", w.Code, w.Body)
	}
	if w := do("POST", "/api/chats", `{"title":"`+strings.Repeat("x", 300)+`"}`); w.Code != 400 || !strings.Contains(w.Body.String(), "at most 200") {
		t.Errorf("long title: %d %s", w.Code, w.Body)
	}
	if w := do("PATCH", "/api/chats/"+c.ID, `{"title":"Trip 2"}`); w.Code != 200 || !strings.Contains(w.Body.String(), "Trip 2") {
		t.Errorf("rename %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/api/chats?limit=1", ""); w.Code != 200 || strings.Count(w.Body.String(), `"id"`) != 1 {
		t.Errorf("list %d %s", w.Code, w.Body)
	}
	if w := do("GET", "/api/chats?limit=0", ""); w.Code != 400 {
		t.Errorf("bad limit %d", w.Code)
	}
	w = do("GET", "/api/chats/"+c.ID+"/export", "")
	if w.Code != 200 || !strings.Contains(w.Body.String(), ExportFormat) || !strings.Contains(w.Header().Get("Content-Disposition"), "attachment") {
		t.Errorf("export %d %s", w.Code, w.Body)
	}
	if w := do("DELETE", "/api/chats/"+c.ID, ""); w.Code != 204 {
		t.Errorf("delete %d", w.Code)
	}
	for _, p := range []string{"/api/chats/" + c.ID, "/api/chats/" + c.ID + "/export"} {
		if w := do("GET", p, ""); w.Code != 404 || !strings.Contains(w.Body.String(), "not_found") {
			t.Errorf("after delete %s: %d", p, w.Code)
		}
	}
	if len(created) != 2 || len(deleted) != 1 {
		t.Errorf("hooks: %v %v", created, deleted)
	}
}

// A secret pasted into the first message is masked in the title derived
// from it, as it is in the audit trail; the transcript keeps the user's text.
func TestAutoTitleRedactsSecrets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	for _, tc := range []struct{ msg, secret string }{
		{"use key sk-proj-AbCdEf0123456789xyz for openai", "sk-proj-AbCdEf0123456789xyz"},
		{"password=hunter2hunter2 is my mail login", "hunter2hunter2"},
		{"Bearer abcdefghijklmnop0123 works?", "abcdefghijklmnop0123"},
	} {
		c, err := s.Create(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, c.ID, &Message{Role: RoleUser, Content: tc.msg}); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Get(ctx, c.ID)
		if strings.Contains(got.Title, tc.secret) || !strings.Contains(got.Title, "[redacted]") {
			t.Errorf("title of %q = %q; want the secret masked", tc.msg, got.Title)
		}
		msgs, _ := s.Messages(ctx, c.ID, 0)
		if len(msgs) != 1 || msgs[0].Content != tc.msg {
			t.Errorf("transcript changed: %+v", msgs)
		}
	}
}
