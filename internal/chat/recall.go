package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// RecallHit is one past message matching a recall search.
type RecallHit struct {
	ChatID    string `json:"chat_id"`
	ChatTitle string `json:"chat_title"`
	Seq       int    `json:"seq"`
	Role      string `json:"role"`
	Snippet   string `json:"snippet"`
	At        string `json:"at"`
	// Untrusted is set when the chat had read outside content (mail, web,
	// documents): its text may carry that content's instructions.
	Untrusted bool `json:"untrusted,omitempty"`
}

// untrustedChat is true when a chat holds a tool result that was wrapped as
// untrusted content.
const untrustedChat = `EXISTS (SELECT 1 FROM messages t WHERE t.chat_id = c.id AND t.role = 'tool' AND instr(t.content, '<untrusted_content') > 0)`

// Recall searches the user and assistant messages of every chat except
// exclude (the current one), best match first, one hit per chat at most
// per (chat, message).
func (s *Store) Recall(ctx context.Context, query, exclude string, limit int) ([]RecallHit, error) {
	expr := search.MatchAll(query)
	if expr == "" {
		return nil, errors.New("recall query has no words")
	}
	if limit <= 0 || limit > 20 {
		limit = 8
	}
	q := `SELECT m.chat_id, c.title, m.seq, m.role, snippet(messages_fts, 0, '[', ']', '…', 24), m.created_at, ` + untrustedChat + `
		FROM messages_fts JOIN messages m ON m.rowid = messages_fts.rowid JOIN chats c ON c.id = m.chat_id
		WHERE messages_fts MATCH ? AND m.chat_id != ? AND m.superseded_by = '' ORDER BY messages_fts.rank LIMIT ?`
	hits, err := s.recallRows(ctx, q, expr, exclude, limit)
	if err == nil && len(hits) == 0 && len(search.Terms(query)) > 1 {
		hits, err = s.recallRows(ctx, q, search.MatchAny(query), exclude, limit)
	}
	return hits, err
}

func (s *Store) recallRows(ctx context.Context, q string, args ...any) ([]RecallHit, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("searching past chats: %w", err)
	}
	defer rows.Close()
	out := []RecallHit{}
	for rows.Next() {
		var h RecallHit
		if err := rows.Scan(&h.ChatID, &h.ChatTitle, &h.Seq, &h.Role, &h.Snippet, &h.At, &h.Untrusted); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// RecallWindow is a window of one past chat around a message.
type RecallWindow struct {
	ChatID    string        `json:"chat_id"`
	ChatTitle string        `json:"chat_title"`
	Untrusted bool          `json:"untrusted,omitempty"`
	Messages  []RecallEntry `json:"messages"`
}

// RecallEntry is one message of a window, its text bounded.
type RecallEntry struct {
	Seq     int    `json:"seq"`
	Role    string `json:"role"`
	Content string `json:"content"`
	At      string `json:"at"`
}

// maxRecallChars bounds one message's text in a window.
const maxRecallChars = 2000

// RecallRead returns the user and assistant messages of chatID within
// radius messages of seq (tool calls and results are left out).
func (s *Store) RecallRead(ctx context.Context, chatID string, seq, radius int) (RecallWindow, error) {
	if radius <= 0 || radius > 10 {
		radius = 4
	}
	var w RecallWindow
	err := s.db.QueryRowContext(ctx, `SELECT c.id, c.title, `+untrustedChat+` FROM chats c WHERE c.id = ?`, chatID).Scan(&w.ChatID, &w.ChatTitle, &w.Untrusted)
	if err != nil {
		if strings.Contains(err.Error(), "no rows") {
			return w, fmt.Errorf("%w: no chat %q", store.ErrNotFound, chatID)
		}
		return w, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT seq, role, content, created_at FROM messages WHERE chat_id = ? AND role IN ('user','assistant') AND superseded_by = ''
		AND seq BETWEEN ? AND ? ORDER BY seq`, chatID, seq-radius*3, seq+radius*3)
	if err != nil {
		return w, err
	}
	defer rows.Close()
	var all []RecallEntry
	for rows.Next() {
		var e RecallEntry
		if err := rows.Scan(&e.Seq, &e.Role, &e.Content, &e.At); err != nil {
			return w, err
		}
		if utf8.RuneCountInString(e.Content) > maxRecallChars {
			e.Content = string([]rune(e.Content)[:maxRecallChars]) + "…"
		}
		all = append(all, e)
	}
	if err := rows.Err(); err != nil {
		return w, err
	}
	// Keep radius user/assistant messages on each side of the closest one.
	at := 0
	for i, e := range all {
		if e.Seq <= seq {
			at = i
		}
	}
	w.Messages = all[max(0, at-radius):min(len(all), at+radius+1)]
	if w.Messages == nil {
		w.Messages = []RecallEntry{}
	}
	return w, nil
}
