package chat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/store"
)

// An assistant message keeps its reasoning and thinking time; the chat's
// GET and its export return them under "reasoning" / "reasoning_ms", and
// messages without reasoning omit both fields.
func TestReasoningIsStoredAndServed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	c, err := s.Create(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Append(ctx, c.ID,
		&Message{Role: RoleUser, Content: "is it going to rain?"},
		&Message{Role: RoleAssistant, Content: "Take an umbrella.", Reasoning: "The forecast says 80% rain.", ReasoningMS: 4200},
		&Message{Role: RoleAssistant, Content: "Anything else?"},
	)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Messages(ctx, c.ID, 0)
	if err != nil || len(got) != 3 {
		t.Fatalf("messages %+v %v", got, err)
	}
	if got[1].Reasoning != "The forecast says 80% rain." || got[1].ReasoningMS != 4200 {
		t.Errorf("reasoning not kept: %+v", got[1])
	}
	if got[0].Reasoning != "" || got[2].Reasoning != "" || got[2].ReasoningMS != 0 {
		t.Errorf("reasoning on messages without it: %+v", got)
	}
	// None stored as NULL, so old rows and rows without reasoning agree.
	var nulls int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE reasoning IS NULL AND reasoning_ms IS NULL`).Scan(&nulls); err != nil || nulls != 2 {
		t.Errorf("%d messages without reasoning stored as NULL (%v), want 2", nulls, err)
	}

	mux := http.NewServeMux()
	(&API{Store: s}).Routes(mux)
	get := func(path string) []map[string]any {
		t.Helper()
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 {
			t.Fatalf("GET %s: %d %s", path, w.Code, w.Body)
		}
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		return body.Messages
	}
	for _, path := range []string{"/api/chats/" + c.ID, "/api/chats/" + c.ID + "/export"} {
		ms := get(path)
		if len(ms) != 3 {
			t.Fatalf("GET %s: %d messages", path, len(ms))
		}
		if ms[1]["reasoning"] != "The forecast says 80% rain." || ms[1]["reasoning_ms"] != float64(4200) {
			t.Errorf("GET %s: assistant message %v", path, ms[1])
		}
		for _, i := range []int{0, 2} {
			if _, ok := ms[i]["reasoning"]; ok {
				t.Errorf("GET %s: message %d has a reasoning field: %v", path, i, ms[i])
			}
			if _, ok := ms[i]["reasoning_ms"]; ok {
				t.Errorf("GET %s: message %d has a reasoning_ms field: %v", path, i, ms[i])
			}
		}
	}
}

// Reasoning longer than MaxReasoning keeps its head, cut at a character
// boundary, with a note saying it was cut.
func TestReasoningIsCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	c, _ := s.Create(ctx, "")
	long := "START " + strings.Repeat("ünïcödé thinking ", MaxReasoning/8) // multi-byte runes straddle the cut
	m := &Message{Role: RoleAssistant, Content: "ok", Reasoning: long, ReasoningMS: 90_000}
	if err := s.Append(ctx, c.ID, m); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Messages(ctx, c.ID, 0)
	r := got[0].Reasoning
	if len(r) > MaxReasoning {
		t.Errorf("stored reasoning is %d bytes, cap %d", len(r), MaxReasoning)
	}
	if len(r) < MaxReasoning-200 {
		t.Errorf("stored reasoning is %d bytes: much less than the cap %d kept", len(r), MaxReasoning)
	}
	if !utf8.ValidString(r) {
		t.Error("the cut split a character")
	}
	head, note, ok := strings.Cut(r, "\n[reasoning cut")
	if !ok || !strings.HasPrefix(long, head) || !strings.HasPrefix(r, "START ") {
		t.Errorf("not the head of the reasoning with a note: …%q", r[len(r)-120:])
	}
	if !strings.Contains(note, "only the beginning is kept") || got[0].ReasoningMS != 90_000 || m.Reasoning != r {
		t.Errorf("note %q, ms %d", note, got[0].ReasoningMS)
	}
	// At the cap exactly nothing is cut.
	exact := strings.Repeat("x", MaxReasoning)
	if err := s.Append(ctx, c.ID, &Message{Role: RoleAssistant, Reasoning: exact}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Messages(ctx, c.ID, 0)
	if got[1].Reasoning != exact {
		t.Errorf("reasoning of exactly %d bytes changed to %d bytes", MaxReasoning, len(got[1].Reasoning))
	}
}

func TestReasoningOnlyOnAssistantMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	c, _ := s.Create(ctx, "")
	for _, m := range []*Message{
		{Role: RoleUser, Content: "hi", Reasoning: "x"},
		{Role: RoleTool, ToolCallID: "c1", Content: "out", ReasoningMS: 5},
	} {
		if err := s.Append(ctx, c.ID, m); err == nil || !strings.Contains(err.Error(), "only assistant messages carry reasoning") {
			t.Errorf("%s message with reasoning: err %v", m.Role, err)
		}
	}
	if err := s.Append(ctx, c.ID, &Message{Role: RoleAssistant, Reasoning: "x", ReasoningMS: -1}); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative duration: err %v", err)
	}
	// A duration without reasoning text means nothing and is not kept.
	m := &Message{Role: RoleAssistant, Content: "hi", ReasoningMS: 300}
	if err := s.Append(ctx, c.ID, m); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Messages(ctx, c.ID, 0); len(got) != 1 || got[0].ReasoningMS != 0 || m.ReasoningMS != 0 {
		t.Errorf("duration without reasoning kept: %+v", got)
	}
}

// Recall searches what was said, not what the model thought.
func TestReasoningIsNotSearchable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	c, _ := s.Create(ctx, "")
	if err := s.Append(ctx, c.ID, &Message{Role: RoleUser, Content: "plan the harbour walk"},
		&Message{Role: RoleAssistant, Content: "The harbour walk takes two hours.", Reasoning: "maybe mention the zeppelin museum"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := s.Recall(ctx, "zeppelin", "", 5); err != nil || len(hits) != 0 {
		t.Errorf("recall found reasoning text: %+v %v", hits, err)
	}
	if hits, err := s.Recall(ctx, "harbour", "", 5); err != nil || len(hits) == 0 {
		t.Errorf("recall of the content: %+v %v", hits, err)
	}
	w, err := s.RecallRead(ctx, c.ID, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(w)
	if strings.Contains(string(b), "zeppelin") {
		t.Errorf("recall window carries reasoning: %s", b)
	}
}

// A chats.db written before the reasoning columns existed opens with this
// version: its messages, titles and recall index are intact, they read
// without reasoning, and new messages keep theirs.
func TestMigrationAddsReasoning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "chats.db")
	at := slices.IndexFunc(Schema.Migrations, func(m string) bool { return strings.Contains(m, "ADD COLUMN reasoning ") })
	if at < 0 {
		t.Fatal("no reasoning migration")
	}
	old, err := store.Open(ctx, path, store.Schema{Name: Schema.Name, Migrations: Schema.Migrations[:at]})
	if err != nil {
		t.Fatal(err)
	}
	// Rows as the previous version wrote them, through its own columns.
	for _, q := range []string{
		`INSERT INTO chats (id, title, created_at, updated_at, message_count) VALUES ('c_old', 'Old trip', '2026-01-02T10:00:00Z', '2026-01-02T10:00:05Z', 4)`,
		`INSERT INTO messages (id, chat_id, seq, turn_id, role, content, created_at) VALUES ('m_1', 'c_old', 1, 't_1', 'user', 'book the lighthouse tour', '2026-01-02T10:00:00Z')`,
		`INSERT INTO messages (id, chat_id, seq, turn_id, role, content, tool_calls, created_at) VALUES ('m_2', 'c_old', 2, 't_1', 'assistant', '', '[{"id":"c1","name":"web_search","arguments":{"q":"lighthouse"}}]', '2026-01-02T10:00:01Z')`,
		`INSERT INTO messages (id, chat_id, seq, turn_id, role, content, tool_call_id, tool_name, tool, created_at, provenance) VALUES ('m_3', 'c_old', 3, 't_1', 'tool', 'tours at 10 and 14', 'c1', 'web_search', '{"input":{"q":"lighthouse"},"decision":"allowed","status":"ok","duration_ms":3}', '2026-01-02T10:00:02Z', '')`,
		`INSERT INTO messages (id, chat_id, seq, turn_id, role, content, created_at, superseded_by) VALUES ('m_4', 'c_old', 4, 't_1', 'assistant', 'Booked the lighthouse tour at 10.', '2026-01-02T10:00:05Z', 't_2')`,
	} {
		if _, err := old.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if v, _ := db.Version(ctx); v != len(Schema.Migrations) {
		t.Errorf("migrated to version %d, want %d", v, len(Schema.Migrations))
	}
	s := New(db, nil)
	e, err := s.Export(ctx, "c_old")
	if err != nil {
		t.Fatal(err)
	}
	if e.Chat.Title != "Old trip" || len(e.Messages) != 4 {
		t.Fatalf("export after migration: %+v", e)
	}
	m := e.Messages
	if m[0].Content != "book the lighthouse tour" || m[1].ToolCalls[0].Name != "web_search" || m[2].Tool == nil || m[2].Tool.Status != "ok" || m[3].SupersededBy != "t_2" {
		t.Errorf("old rows changed: %+v", m)
	}
	for _, x := range m {
		if x.Reasoning != "" || x.ReasoningMS != 0 {
			t.Errorf("old message %s has reasoning %q %d", x.ID, x.Reasoning, x.ReasoningMS)
		}
	}
	if hits, err := s.Recall(ctx, "lighthouse", "", 5); err != nil || len(hits) == 0 {
		t.Errorf("recall over old messages: %+v %v", hits, err)
	}
	if err := s.Append(ctx, "c_old", &Message{Role: RoleAssistant, Content: "Done.", Reasoning: "check the time", ReasoningMS: 1500}); err != nil {
		t.Fatal(err)
	}
	live, err := s.Messages(ctx, "c_old", 0)
	if err != nil || len(live) != 4 || live[3].Reasoning != "check the time" || live[3].ReasoningMS != 1500 || live[3].Seq != 5 {
		t.Errorf("after migration: %+v %v", live, err)
	}
}
