package telegram

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the channel's own database: the polling offset, which Hestia
// chat each Telegram chat maps to, the approval cards sent, and who was
// already refused.
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

// Store is the channel's state on disk.
type Store struct {
	db    *store.DB
	clock func() time.Time
}

// NewStore wraps db (opened with Schema).
func NewStore(db *store.DB, clock func() time.Time) *Store {
	if clock == nil {
		clock = time.Now
	}
	return &Store{db: db, clock: clock}
}

func (s *Store) now() string { return s.clock().UTC().Format(time.RFC3339Nano) }

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

// ChatFor returns the Hestia chat of a Telegram chat, or store.ErrNotFound.
func (s *Store) ChatFor(ctx context.Context, tgChat int64) (Mapping, error) {
	m := Mapping{TGChatID: tgChat}
	err := s.db.QueryRowContext(ctx, `SELECT user_id, chat_id FROM chats WHERE tg_chat_id = ?`, tgChat).Scan(&m.UserID, &m.ChatID)
	if errors.Is(err, sql.ErrNoRows) {
		return Mapping{}, store.ErrNotFound
	}
	if err != nil {
		return Mapping{}, fmt.Errorf("reading telegram chat mapping: %w", err)
	}
	return m, nil
}

// SetChat maps a Telegram chat to a Hestia chat (replacing an old one).
func (s *Store) SetChat(ctx context.Context, m Mapping) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO chats (tg_chat_id, user_id, chat_id, created_at) VALUES (?,?,?,?)
		ON CONFLICT(tg_chat_id) DO UPDATE SET chat_id = excluded.chat_id, user_id = excluded.user_id, created_at = excluded.created_at`,
		m.TGChatID, m.UserID, m.ChatID, s.now())
	if err != nil {
		return fmt.Errorf("storing telegram chat mapping: %w", err)
	}
	return nil
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

// Card is an approval card sent to a Telegram chat.
type Card struct {
	ApprovalID string
	TGChatID   int64
	MessageID  int64
	Text       string
	State      string
}

// AddCard records a sent approval card.
func (s *Store) AddCard(ctx context.Context, c Card) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO cards (approval_id, tg_chat_id, message_id, text, created_at) VALUES (?,?,?,?,?)`,
		c.ApprovalID, c.TGChatID, c.MessageID, c.Text, s.now())
	if err != nil {
		return fmt.Errorf("storing approval card: %w", err)
	}
	return nil
}

// Card returns the card of an approval, or store.ErrNotFound.
func (s *Store) Card(ctx context.Context, approvalID string) (Card, error) {
	c := Card{ApprovalID: approvalID}
	err := s.db.QueryRowContext(ctx, `SELECT tg_chat_id, message_id, text, state FROM cards WHERE approval_id = ?`, approvalID).Scan(&c.TGChatID, &c.MessageID, &c.Text, &c.State)
	if errors.Is(err, sql.ErrNoRows) {
		return Card{}, store.ErrNotFound
	}
	if err != nil {
		return Card{}, fmt.Errorf("reading approval card: %w", err)
	}
	return c, nil
}

// Press moves an open card to pressed. It reports false when the card was
// not open: a second press (or a replayed one) loses here, before any
// decision is attempted.
func (s *Store) Press(ctx context.Context, approvalID string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE cards SET state = 'pressed' WHERE approval_id = ? AND state = 'open'`, approvalID)
	if err != nil {
		return false, fmt.Errorf("recording button press: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Close marks a card closed; it reports whether it was not closed before.
func (s *Store) Close(ctx context.Context, approvalID string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE cards SET state = 'closed' WHERE approval_id = ? AND state != 'closed'`, approvalID)
	if err != nil {
		return false, fmt.Errorf("closing approval card: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Refused counts a message from a user who is not allowed; it reports
// whether this was the first, which alone gets an answer.
func (s *Store) Refused(ctx context.Context, userID int64) (first bool, err error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO refused (user_id, first_at, count) VALUES (?,?,1) ON CONFLICT(user_id) DO NOTHING`, userID, s.now())
	if err != nil {
		return false, fmt.Errorf("recording refused user: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return true, nil
	}
	_, err = s.db.ExecContext(ctx, `UPDATE refused SET count = count + 1 WHERE user_id = ?`, userID)
	if err != nil {
		return false, fmt.Errorf("recording refused user: %w", err)
	}
	return false, nil
}

// keepSeen is how many handled update ids are remembered. Telegram
// redelivers within minutes, far fewer updates than this.
const keepSeen = 5000

// Seen reports whether an update was already handled.
func (s *Store) Seen(ctx context.Context, updateID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM seen WHERE update_id = ?`, updateID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("reading handled telegram updates: %w", err)
	}
	return n > 0, nil
}

// MarkSeen records an update as handled; it reports false when it already
// was. Old entries beyond keepSeen are dropped.
func (s *Store) MarkSeen(ctx context.Context, updateID int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO seen (update_id, at) VALUES (?, ?) ON CONFLICT(update_id) DO NOTHING`, updateID, s.now())
	if err != nil {
		return false, fmt.Errorf("recording handled telegram update: %w", err)
	}
	n, _ := res.RowsAffected()
	if n == 1 && updateID%100 == 0 {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM seen WHERE rowid <= (SELECT max(rowid) FROM seen) - ?`, keepSeen); err != nil {
			return true, fmt.Errorf("pruning handled telegram updates: %w", err)
		}
	}
	return n == 1, nil
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

// SeenUser is an allowed user's record for the devices list.
type SeenUser struct {
	UserID    int64
	Username  string
	FirstSeen time.Time
	LastSeen  time.Time
}

// TouchUser records that an allowed user just wrote or pressed a button.
func (s *Store) TouchUser(ctx context.Context, userID int64, username string) error {
	now := s.now()
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (user_id, username, first_seen_at, last_seen_at) VALUES (?,?,?,?)
		ON CONFLICT(user_id) DO UPDATE SET last_seen_at = excluded.last_seen_at, username = CASE WHEN excluded.username != '' THEN excluded.username ELSE users.username END`,
		userID, username, now, now)
	if err != nil {
		return fmt.Errorf("recording telegram user: %w", err)
	}
	return nil
}

// Users returns the recorded allowed users by id.
func (s *Store) Users(ctx context.Context) (map[int64]SeenUser, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT user_id, username, first_seen_at, last_seen_at FROM users`)
	if err != nil {
		return nil, fmt.Errorf("listing telegram users: %w", err)
	}
	defer rows.Close()
	out := map[int64]SeenUser{}
	for rows.Next() {
		var u SeenUser
		var first, last string
		if err := rows.Scan(&u.UserID, &u.Username, &first, &last); err != nil {
			return nil, fmt.Errorf("listing telegram users: %w", err)
		}
		u.FirstSeen, _ = time.Parse(time.RFC3339Nano, first)
		u.LastSeen, _ = time.Parse(time.RFC3339Nano, last)
		out[u.UserID] = u
	}
	return out, rows.Err()
}
