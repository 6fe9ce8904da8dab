package telegram

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the bot's own database. The relay (channels.db) keeps
// conversations, prompts and handled updates, so only the polling offset
// and receive mode are used here; the chats table of earlier versions is
// read once to carry old mappings over, and migrations stay as written.
var Schema = store.Schema{Name: "telegram", Migrations: []string{`
CREATE TABLE state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chats (
	tg_chat_id INTEGER PRIMARY KEY,
	user_id INTEGER NOT NULL,
	chat_id TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL
);
CREATE TABLE cards (
	approval_id TEXT PRIMARY KEY,
	tg_chat_id INTEGER NOT NULL,
	message_id INTEGER NOT NULL,
	text TEXT NOT NULL,
	state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open','pressed','closed')),
	created_at TEXT NOT NULL
);
CREATE TABLE refused (
	user_id INTEGER PRIMARY KEY,
	first_at TEXT NOT NULL,
	count INTEGER NOT NULL
);`, `
-- Update ids already handled, in either mode: a webhook delivery Telegram
-- retries, or an update polled again after switching modes, is skipped.
-- The rowid orders them by arrival; only the newest keepSeen are kept.
CREATE TABLE seen (update_id INTEGER NOT NULL UNIQUE, at TEXT NOT NULL);`, `
-- Allowed users as the devices list shows them: name and when last seen.
CREATE TABLE users (
	user_id INTEGER PRIMARY KEY,
	username TEXT NOT NULL DEFAULT '',
	first_seen_at TEXT NOT NULL,
	last_seen_at TEXT NOT NULL
);`}}

// Store is the bot's state on disk.
type Store struct{ db *store.DB }

// NewStore wraps db (opened with Schema).
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Offset is the next update id to ask for (0 before the first).
func (s *Store) Offset(ctx context.Context) (int64, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM state WHERE key = 'offset'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading telegram offset: %w", err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// SetOffset records the next update id, so a restart neither repeats nor
// skips updates.
func (s *Store) SetOffset(ctx context.Context, off int64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO state (key, value) VALUES ('offset', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, strconv.FormatInt(off, 10))
	if err != nil {
		return fmt.Errorf("storing telegram offset: %w", err)
	}
	return nil
}

// Mapping is one Telegram chat's Hestia chat.
type Mapping struct {
	TGChatID int64
	UserID   int64
	ChatID   string
}

// Mappings lists every mapped chat.
func (s *Store) Mappings(ctx context.Context) ([]Mapping, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT tg_chat_id, user_id, chat_id FROM chats ORDER BY tg_chat_id`)
	if err != nil {
		return nil, fmt.Errorf("listing telegram chats: %w", err)
	}
	defer rows.Close()
	var out []Mapping
	for rows.Next() {
		var m Mapping
		if err := rows.Scan(&m.TGChatID, &m.UserID, &m.ChatID); err != nil {
			return nil, fmt.Errorf("listing telegram chats: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Mode is how updates were last received: "polling", "webhook" or "".
func (s *Store) Mode(ctx context.Context) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM state WHERE key = 'mode'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading telegram mode: %w", err)
	}
	return v, nil
}

// SetMode records how updates are received now.
func (s *Store) SetMode(ctx context.Context, mode string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO state (key, value) VALUES ('mode', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, mode)
	if err != nil {
		return fmt.Errorf("storing telegram mode: %w", err)
	}
	return nil
}
