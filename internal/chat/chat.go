// Package chat stores conversations and their transcripts: user and
// assistant messages, the tool calls an assistant message made, and one tool
// message per call carrying the input the model asked for, the input that
// actually ran, the output, the duration, the error and the authorization
// decision. It owns the "chats" database.
package chat

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hestia-dev/hestia/internal/taint"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/audit"
	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the chats database.
var Schema = store.Schema{Name: "chats", Migrations: []string{`
CREATE TABLE chats (
	id TEXT PRIMARY KEY,
	title TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	message_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX chats_updated ON chats(updated_at DESC);
CREATE TABLE messages (
	id TEXT PRIMARY KEY,
	chat_id TEXT NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
	seq INTEGER NOT NULL,
	turn_id TEXT NOT NULL DEFAULT '',
	role TEXT NOT NULL CHECK (role IN ('user','assistant','tool')),
	content TEXT NOT NULL DEFAULT '',
	tool_calls TEXT NOT NULL DEFAULT '',
	tool_call_id TEXT NOT NULL DEFAULT '',
	tool_name TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	UNIQUE (chat_id, seq)
);`,
	// Chat recall (recall.go): user and assistant text in FTS5, kept by
	// triggers, so deleting a chat (cascading to its messages) removes it
	// from the index too.
	`CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages', content_rowid='rowid', tokenize='unicode61 remove_diacritics 2');
INSERT INTO messages_fts(rowid, content) SELECT rowid, content FROM messages WHERE role IN ('user','assistant');
CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages WHEN new.role IN ('user','assistant') BEGIN
	INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages WHEN old.role IN ('user','assistant') BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages WHEN old.role IN ('user','assistant') BEGIN
	INSERT INTO messages_fts(messages_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
	INSERT INTO messages_fts(rowid, content) VALUES (new.rowid, new.content);
END;`,
	// Edit-and-resend and regenerate (Rewind) keep the replaced messages:
	// superseded_by names the turn that replaced them, the transcript and the
	// model's history leave them out, the export keeps them.
	`ALTER TABLE messages ADD COLUMN superseded_by TEXT NOT NULL DEFAULT '';`,
	// provenance lists the outside sources a message was composed from (a
	// watch message quoting a mail); a turn whose history holds it starts
	// tainted by them.
	`ALTER TABLE messages ADD COLUMN provenance TEXT NOT NULL DEFAULT '';`,
	// reasoning is the model's thinking for an assistant message's step,
	// shown collapsed under it; reasoning_ms is how long it streamed. Both
	// are NULL for earlier messages and replies without reasoning. Neither
	// is indexed for recall (the triggers above read content only) nor sent
	// back to the model (agent.toLLM reads content and calls).
	`ALTER TABLE messages ADD COLUMN reasoning TEXT;
ALTER TABLE messages ADD COLUMN reasoning_ms INTEGER;`}}

// Chat is a conversation.
type Chat struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
	MessageCount int       `json:"message_count"`
}

// Roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is a call an assistant message made.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolRun is the record of one call's execution.
type ToolRun struct {
	Input          json.RawMessage `json:"input"`
	EffectiveInput json.RawMessage `json:"effective_input,omitempty"`
	Decision       string          `json:"decision"`
	DecisionSource string          `json:"decision_source,omitempty"`
	Policy         string          `json:"policy,omitempty"`
	PolicyRule     string          `json:"policy_rule,omitempty"`
	Status         string          `json:"status"`
	Error          string          `json:"error,omitempty"`
	DurationMS     int64           `json:"duration_ms"`
	Note           string          `json:"note,omitempty"`
}

// Message is one transcript entry.
type Message struct {
	ID         string     `json:"id"`
	ChatID     string     `json:"chat_id"`
	Seq        int        `json:"seq"`
	TurnID     string     `json:"turn_id,omitempty"`
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolName   string     `json:"tool_name,omitempty"`
	Tool       *ToolRun   `json:"tool,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	// SupersededBy is the turn that replaced this message (edit-and-resend
	// or regenerate); only exports show superseded messages.
	SupersededBy string `json:"superseded_by,omitempty"`
	// Provenance names the untrusted content the message was composed
	// from (internal/taint); empty for the user's and the agent's own.
	Provenance []taint.Source `json:"provenance,omitempty"`
	// Reasoning is the model's thinking before this assistant message
	// (empty for other roles and models that do not reason), bounded by
	// MaxReasoning. It is for the user to read back: never model history,
	// never searched.
	Reasoning string `json:"reasoning,omitempty"`
	// ReasoningMS is the time from the first to the last reasoning delta;
	// 0 when unknown.
	ReasoningMS int64 `json:"reasoning_ms,omitempty"`
}

// Limits.
const (
	MaxTitle    = 200
	MaxListChat = 200
	// MaxReasoning bounds the stored reasoning of one message in bytes: a
	// local model can think for tens of thousands of tokens, and every
	// reload of the chat carries it. The head is kept with a note.
	MaxReasoning = 64 << 10
)

// capReasoning keeps the head of s within MaxReasoning bytes, cut at a
// character boundary, and says how much was dropped.
func capReasoning(s string) string {
	if len(s) <= MaxReasoning {
		return s
	}
	note := fmt.Sprintf("\n[reasoning cut: it was %d bytes; only the beginning is kept]", len(s))
	n := MaxReasoning - len(note)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + note
}

// Store is the chats store.
type Store struct {
	db    *store.DB
	clock func() time.Time
}

// New returns a store over db (opened with Schema).
func New(db *store.DB, clock func() time.Time) *Store {
	if clock == nil {
		clock = time.Now
	}
	return &Store{db: db, clock: clock}
}

// ID prefixes.
func newID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewTurnID returns a fresh turn id.
func NewTurnID() string { return newID("t_") }

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func cleanTitle(t string) (string, error) {
	t = strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(t, "\n", " "), "\r", " "))
	if n := len([]rune(t)); n > MaxTitle {
		return "", fmt.Errorf("title is %d characters; at most %d allowed", n, MaxTitle)
	}
	return t, nil
}

// Create makes a new chat.
func (s *Store) Create(ctx context.Context, title string) (Chat, error) {
	title, err := cleanTitle(title)
	if err != nil {
		return Chat{}, err
	}
	now := s.clock().UTC()
	c := Chat{ID: newID("c_"), Title: title, CreatedAt: now, UpdatedAt: now}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO chats (id, title, created_at, updated_at) VALUES (?,?,?,?)`, c.ID, c.Title, ts(now), ts(now)); err != nil {
		return Chat{}, fmt.Errorf("creating chat: %w", err)
	}
	return c, nil
}

// Get returns one chat.
func (s *Store) Get(ctx context.Context, id string) (Chat, error) {
	var c Chat
	var cr, up string
	err := s.db.QueryRowContext(ctx, `SELECT id, title, created_at, updated_at, message_count FROM chats WHERE id = ?`, id).Scan(&c.ID, &c.Title, &cr, &up, &c.MessageCount)
	if errors.Is(err, sql.ErrNoRows) {
		return Chat{}, fmt.Errorf("chat %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return Chat{}, fmt.Errorf("reading chat %s: %w", id, err)
	}
	c.CreatedAt, c.UpdatedAt = parseTS(cr), parseTS(up)
	return c, nil
}

// List returns chats by most recent activity; before (exclusive) pages.
func (s *Store) List(ctx context.Context, limit int, before time.Time) ([]Chat, error) {
	if limit <= 0 || limit > MaxListChat {
		limit = 50
	}
	q := `SELECT id, title, created_at, updated_at, message_count FROM chats`
	args := []any{}
	if !before.IsZero() {
		q += ` WHERE updated_at < ?`
		args = append(args, ts(before))
	}
	q += ` ORDER BY updated_at DESC, id LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing chats: %w", err)
	}
	defer rows.Close()
	out := []Chat{}
	for rows.Next() {
		var c Chat
		var cr, up string
		if err := rows.Scan(&c.ID, &c.Title, &cr, &up, &c.MessageCount); err != nil {
			return nil, fmt.Errorf("listing chats: %w", err)
		}
		c.CreatedAt, c.UpdatedAt = parseTS(cr), parseTS(up)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Rename sets a chat's title.
func (s *Store) Rename(ctx context.Context, id, title string) (Chat, error) {
	title, err := cleanTitle(title)
	if err != nil {
		return Chat{}, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE chats SET title = ?, updated_at = ? WHERE id = ?`, title, ts(s.clock()), id)
	if err != nil {
		return Chat{}, fmt.Errorf("renaming chat %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Chat{}, fmt.Errorf("chat %s: %w", id, store.ErrNotFound)
	}
	return s.Get(ctx, id)
}

// Delete removes a chat and its transcript.
func (s *Store) Delete(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM chats WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("deleting chat %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("chat %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Append stores messages at the end of the chat's transcript in one
// transaction, assigning ids, sequence numbers and times. The chat's title
// is set from the first user message when empty.
func (s *Store) Append(ctx context.Context, chatID string, msgs ...*Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		var seq int
		var title string
		err := tx.QueryRowContext(ctx, `SELECT message_count, title FROM chats WHERE id = ?`, chatID).Scan(&seq, &title)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("chat %s: %w", chatID, store.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("appending to chat %s: %w", chatID, err)
		}
		now := s.clock().UTC()
		for _, m := range msgs {
			switch m.Role {
			case RoleUser, RoleAssistant, RoleTool:
			default:
				return fmt.Errorf("appending to chat %s: role %q is not user, assistant or tool", chatID, m.Role)
			}
			if (m.Reasoning != "" || m.ReasoningMS != 0) && m.Role != RoleAssistant {
				return fmt.Errorf("appending to chat %s: only assistant messages carry reasoning, not %s", chatID, m.Role)
			}
			if m.ReasoningMS < 0 {
				return fmt.Errorf("appending to chat %s: reasoning duration %d ms is negative", chatID, m.ReasoningMS)
			}
			seq++
			m.ID, m.ChatID, m.Seq, m.CreatedAt = newID("m_"), chatID, seq, now
			m.Reasoning = capReasoning(m.Reasoning)
			// NULL, not '', when there is none: the column is nullable so
			// rows from before it and rows without reasoning read the same.
			var reasoning, reasoningMS any
			if m.Reasoning != "" {
				reasoning = m.Reasoning
				if m.ReasoningMS > 0 {
					reasoningMS = m.ReasoningMS
				}
			} else {
				m.ReasoningMS = 0
			}
			calls, tool, prov := "", "", ""
			if len(m.Provenance) > 0 {
				b, err := json.Marshal(m.Provenance)
				if err != nil {
					return fmt.Errorf("encoding provenance: %w", err)
				}
				prov = string(b)
			}
			if len(m.ToolCalls) > 0 {
				b, err := json.Marshal(m.ToolCalls)
				if err != nil {
					return fmt.Errorf("encoding tool calls: %w", err)
				}
				calls = string(b)
			}
			if m.Tool != nil {
				b, err := json.Marshal(m.Tool)
				if err != nil {
					return fmt.Errorf("encoding tool run: %w", err)
				}
				tool = string(b)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (id, chat_id, seq, turn_id, role, content, tool_calls, tool_call_id, tool_name, tool, created_at, provenance, reasoning, reasoning_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
				m.ID, chatID, m.Seq, m.TurnID, m.Role, m.Content, calls, m.ToolCallID, m.ToolName, tool, ts(now), prov, reasoning, reasoningMS); err != nil {
				return fmt.Errorf("appending to chat %s: %w", chatID, err)
			}
			if title == "" && m.Role == RoleUser {
				title = autoTitle(m.Content)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE chats SET message_count = ?, updated_at = ?, title = ? WHERE id = ?`, seq, ts(now), title, chatID); err != nil {
			return fmt.Errorf("appending to chat %s: %w", chatID, err)
		}
		return nil
	})
}

// autoTitle derives a title from the first user message. The title is shown
// in chat lists, notifications and exports, so secrets the user pasted are
// masked the same way the audit trail masks them.
func autoTitle(s string) string {
	s = audit.RedactString(s, 0)
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}

// Messages returns a chat's live transcript in order (superseded messages
// left out). limit 0 means all.
func (s *Store) Messages(ctx context.Context, chatID string, limit int) ([]Message, error) {
	return s.messages(ctx, chatID, limit, false)
}

func (s *Store) messages(ctx context.Context, chatID string, limit int, superseded bool) ([]Message, error) {
	if _, err := s.Get(ctx, chatID); err != nil {
		return nil, err
	}
	where := `chat_id = ? AND superseded_by = ''`
	if superseded {
		where = `chat_id = ?`
	}
	const cols = `id, seq, turn_id, role, content, tool_calls, tool_call_id, tool_name, tool, created_at, superseded_by, provenance, reasoning, reasoning_ms`
	q := `SELECT ` + cols + ` FROM messages WHERE ` + where + ` ORDER BY seq`
	args := []any{chatID}
	if limit > 0 {
		q = `SELECT * FROM (SELECT ` + cols + ` FROM messages WHERE ` + where + ` ORDER BY seq DESC LIMIT ?) ORDER BY seq`
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading chat %s: %w", chatID, err)
	}
	defer rows.Close()
	out := []Message{}
	for rows.Next() {
		m := Message{ChatID: chatID}
		var calls, tool, cr, prov string
		var reasoning sql.NullString
		var reasoningMS sql.NullInt64
		if err := rows.Scan(&m.ID, &m.Seq, &m.TurnID, &m.Role, &m.Content, &calls, &m.ToolCallID, &m.ToolName, &tool, &cr, &m.SupersededBy, &prov, &reasoning, &reasoningMS); err != nil {
			return nil, fmt.Errorf("reading chat %s: %w", chatID, err)
		}
		m.Reasoning, m.ReasoningMS = reasoning.String, reasoningMS.Int64
		if prov != "" {
			if err := json.Unmarshal([]byte(prov), &m.Provenance); err != nil {
				return nil, fmt.Errorf("decoding provenance of message %s: %w", m.ID, err)
			}
		}
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("decoding tool calls of message %s: %w", m.ID, err)
			}
		}
		if tool != "" {
			m.Tool = &ToolRun{}
			if err := json.Unmarshal([]byte(tool), m.Tool); err != nil {
				return nil, fmt.Errorf("decoding tool run of message %s: %w", m.ID, err)
			}
		}
		m.CreatedAt = parseTS(cr)
		out = append(out, m)
	}
	return out, rows.Err()
}

// ErrNotRewindable: the message given to Rewind cannot start a rewind
// (not a live user message of the chat).
var ErrNotRewindable = errors.New("only a user message still in the transcript can be edited")

// Rewind marks the live messages of a chat from seq fromSeq on as
// superseded by turn by, so the transcript and the model's history continue
// from before them while exports keep them. It returns the ids marked.
func (s *Store) Rewind(ctx context.Context, chatID string, fromSeq int, by string) ([]string, error) {
	if by == "" {
		return nil, errors.New("rewinding a chat needs the replacing turn's id")
	}
	var ids []string
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE messages SET superseded_by = ? WHERE chat_id = ? AND seq >= ? AND superseded_by = '' RETURNING id`, by, chatID, fromSeq)
		if err != nil {
			return fmt.Errorf("rewinding chat %s: %w", chatID, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return fmt.Errorf("rewinding chat %s: %w", chatID, err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("rewinding chat %s: %w", chatID, err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE chats SET updated_at = ? WHERE id = ?`, ts(s.clock().UTC()), chatID)
		return err
	})
	return ids, err
}

// Export is the JSON export of one chat.
type Export struct {
	Format     string    `json:"format"`
	ExportedAt time.Time `json:"exported_at"`
	Chat       Chat      `json:"chat"`
	Messages   []Message `json:"messages"`
}

// ExportFormat names the export layout version.
const ExportFormat = "hestia.chat.v1"

// Export returns the chat and its full transcript.
func (s *Store) Export(ctx context.Context, id string) (Export, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Export{}, err
	}
	// The export is the full record: messages replaced by an edit or a
	// regenerate stay, marked superseded_by.
	msgs, err := s.messages(ctx, id, 0, true)
	if err != nil {
		return Export{}, err
	}
	return Export{Format: ExportFormat, ExportedAt: s.clock().UTC(), Chat: c, Messages: msgs}, nil
}
