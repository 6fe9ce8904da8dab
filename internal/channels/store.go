package channels

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the channels' shared database (channels.db): every row is
// keyed by the channel's name, so several channels share one file.
var Schema = store.Schema{Name: "channels", Migrations: []string{`
CREATE TABLE chats (
	channel TEXT NOT NULL,
	conv TEXT NOT NULL,
	sender TEXT NOT NULL,
	chat_id TEXT NOT NULL UNIQUE,
	created_at TEXT NOT NULL,
	PRIMARY KEY (channel, conv)
);
-- Inbound updates already handled; only the newest keepSeen per channel stay.
CREATE TABLE seen (
	seq INTEGER PRIMARY KEY,
	channel TEXT NOT NULL,
	update_id TEXT NOT NULL,
	at TEXT NOT NULL,
	UNIQUE (channel, update_id)
);
-- The durable outbox: written before sending, confirmed after.
-- state: pending (due at next_at), sending (tried; in doubt after a crash),
-- sent (confirmed, ref known), failed (permanent error or out of attempts).
CREATE TABLE outbox (
	id INTEGER PRIMARY KEY,
	channel TEXT NOT NULL,
	conv TEXT NOT NULL,
	key TEXT NOT NULL UNIQUE,
	text TEXT NOT NULL,
	prompt TEXT NOT NULL DEFAULT '',
	reply_to TEXT NOT NULL DEFAULT '',
	edit_ref TEXT NOT NULL DEFAULT '',
	state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','sending','sent','failed')),
	attempts INTEGER NOT NULL DEFAULT 0,
	next_at TEXT NOT NULL,
	last_error TEXT NOT NULL DEFAULT '',
	ref TEXT NOT NULL DEFAULT '',
	created_at TEXT NOT NULL,
	done_at TEXT NOT NULL DEFAULT ''
);
CREATE INDEX outbox_due ON outbox (channel, state, id);
-- Approval prompts sent: the request code, and the platform message once sent.
CREATE TABLE cards (
	approval_id TEXT NOT NULL,
	channel TEXT NOT NULL,
	conv TEXT NOT NULL,
	code TEXT NOT NULL,
	outbox_key TEXT NOT NULL,
	ref TEXT NOT NULL DEFAULT '',
	text TEXT NOT NULL,
	question INTEGER NOT NULL DEFAULT 0,
	state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open','pressed','closed')),
	created_at TEXT NOT NULL,
	PRIMARY KEY (channel, approval_id)
);
CREATE UNIQUE INDEX cards_open_code ON cards (channel, code) WHERE state = 'open';
CREATE INDEX cards_ref ON cards (channel, ref);
CREATE TABLE refused (
	channel TEXT NOT NULL,
	sender TEXT NOT NULL,
	first_at TEXT NOT NULL,
	count INTEGER NOT NULL,
	PRIMARY KEY (channel, sender)
);
CREATE TABLE users (
	channel TEXT NOT NULL,
	sender TEXT NOT NULL,
	name TEXT NOT NULL DEFAULT '',
	first_seen_at TEXT NOT NULL,
	last_seen_at TEXT NOT NULL,
	PRIMARY KEY (channel, sender)
);`, `
-- How far a platform that catches up after a restart (Slack, Discord; see
-- CatchUpper) got in each conversation: the last message it delivered, in
-- the platform's own terms (a Slack ts, a Discord message id).
CREATE TABLE cursors (
	channel TEXT NOT NULL,
	conv TEXT NOT NULL,
	value TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	PRIMARY KEY (channel, conv)
);`}}

// keepSeen bounds the dedupe table per channel: platforms redeliver within
// minutes, not after thousands of newer updates.
const keepSeen = 5000

// Store is the channels' state on disk.
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

func (s *Store) now() string { return fmtTime(s.clock()) }

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Mapping ties a platform conversation to a Hestia chat.
type Mapping struct {
	Channel string
	Conv    string
	Sender  string
	ChatID  string
}

// ChatFor returns the mapping of a conversation (store.ErrNotFound if none).
func (s *Store) ChatFor(ctx context.Context, channel, conv string) (Mapping, error) {
	m := Mapping{Channel: channel, Conv: conv}
	err := s.db.QueryRowContext(ctx, `SELECT sender, chat_id FROM chats WHERE channel = ? AND conv = ?`, channel, conv).Scan(&m.Sender, &m.ChatID)
	if errors.Is(err, sql.ErrNoRows) {
		return Mapping{}, store.ErrNotFound
	}
	if err != nil {
		return Mapping{}, fmt.Errorf("reading the chat of %s conversation %s: %w", channel, conv, err)
	}
	return m, nil
}

// SetChat maps a conversation to a chat, replacing an earlier mapping.
func (s *Store) SetChat(ctx context.Context, m Mapping) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO chats (channel, conv, sender, chat_id, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (channel, conv) DO UPDATE SET sender = excluded.sender, chat_id = excluded.chat_id, created_at = excluded.created_at`,
		m.Channel, m.Conv, m.Sender, m.ChatID, s.now())
	if err != nil {
		return fmt.Errorf("mapping %s conversation %s: %w", m.Channel, m.Conv, err)
	}
	return nil
}

// Mappings lists a channel's conversations.
func (s *Store) Mappings(ctx context.Context, channel string) ([]Mapping, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT conv, sender, chat_id FROM chats WHERE channel = ? ORDER BY created_at`, channel)
	if err != nil {
		return nil, fmt.Errorf("listing %s conversations: %w", channel, err)
	}
	defer rows.Close()
	var out []Mapping
	for rows.Next() {
		m := Mapping{Channel: channel}
		if err := rows.Scan(&m.Conv, &m.Sender, &m.ChatID); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Cursor returns a conversation's catch-up cursor ("" when none was set).
func (s *Store) Cursor(ctx context.Context, channel, conv string) (string, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM cursors WHERE channel = ? AND conv = ?`, channel, conv).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the %s cursor of %s: %w", channel, conv, err)
	}
	return v, nil
}

// SetCursor records a conversation's catch-up cursor, replacing the last.
func (s *Store) SetCursor(ctx context.Context, channel, conv, value string) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO cursors (channel, conv, value, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (channel, conv) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, channel, conv, value, s.now())
	if err != nil {
		return fmt.Errorf("recording the %s cursor of %s: %w", channel, conv, err)
	}
	return nil
}

// activeConversations lists a channel's conversations that have a chat,
// the most recently active first: by the later of the mapping's creation
// and the conversation's cursor (moved on by every message delivered).
func (s *Store) activeConversations(ctx context.Context, channel string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.conv, c.created_at, COALESCE(k.updated_at, '') FROM chats c
		LEFT JOIN cursors k ON k.channel = c.channel AND k.conv = c.conv WHERE c.channel = ?`, channel)
	if err != nil {
		return nil, fmt.Errorf("listing %s conversations: %w", channel, err)
	}
	defer rows.Close()
	type conv struct {
		id string
		at time.Time
	}
	var convs []conv
	for rows.Next() {
		var c conv
		var created, updated string
		if err := rows.Scan(&c.id, &created, &updated); err != nil {
			return nil, err
		}
		// Parsed, not compared as text: RFC 3339 with trimmed fractions
		// does not sort as text.
		c.at, _ = time.Parse(time.RFC3339Nano, created)
		if u, err := time.Parse(time.RFC3339Nano, updated); err == nil && u.After(c.at) {
			c.at = u
		}
		convs = append(convs, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(convs, func(a, b conv) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, len(convs))
	for i, c := range convs {
		out[i] = c.id
	}
	return out, nil
}

// MarkSeen records an update id and reports whether it was new.
func (s *Store) MarkSeen(ctx context.Context, channel, id string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `INSERT INTO seen (channel, update_id, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING`, channel, id, s.now())
	if err != nil {
		return false, fmt.Errorf("recording %s update %s: %w", channel, id, err)
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return false, nil
	}
	// Trimming scans the channel's rows, so it runs on every 100th update,
	// not each one: the table holds at most keepSeen+100 per channel.
	if seq, err := res.LastInsertId(); err != nil || seq%100 != 0 {
		return true, nil
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM seen WHERE channel = ? AND seq <= (SELECT seq FROM seen WHERE channel = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
		channel, channel, keepSeen); err != nil {
		return true, fmt.Errorf("trimming %s seen updates: %w", channel, err)
	}
	return true, nil
}

// Refused counts a refused sender and reports whether it was the first time.
func (s *Store) Refused(ctx context.Context, channel, sender string) (bool, error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO refused (channel, sender, first_at, count) VALUES (?, ?, ?, 1)
		ON CONFLICT (channel, sender) DO UPDATE SET count = count + 1`, channel, sender, s.now()); err != nil {
		return false, fmt.Errorf("recording refused %s sender: %w", channel, err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count FROM refused WHERE channel = ? AND sender = ?`, channel, sender).Scan(&n); err != nil {
		return false, err
	}
	return n == 1, nil
}

// TouchUser records that an allowed sender wrote.
func (s *Store) TouchUser(ctx context.Context, channel, sender, name string) error {
	now := s.now()
	_, err := s.db.ExecContext(ctx, `INSERT INTO users (channel, sender, name, first_seen_at, last_seen_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (channel, sender) DO UPDATE SET name = CASE WHEN excluded.name = '' THEN name ELSE excluded.name END, last_seen_at = excluded.last_seen_at`,
		channel, sender, name, now, now)
	if err != nil {
		return fmt.Errorf("recording %s user: %w", channel, err)
	}
	return nil
}

// User is an allowed sender as last seen.
type User struct {
	Name      string
	FirstSeen time.Time
	LastSeen  time.Time
}

// Users returns the allowed senders seen on a channel.
func (s *Store) Users(ctx context.Context, channel string) (map[string]User, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT sender, name, first_seen_at, last_seen_at FROM users WHERE channel = ?`, channel)
	if err != nil {
		return nil, fmt.Errorf("listing %s users: %w", channel, err)
	}
	defer rows.Close()
	out := map[string]User{}
	for rows.Next() {
		var id, name, first, last string
		if err := rows.Scan(&id, &name, &first, &last); err != nil {
			return nil, err
		}
		u := User{Name: name}
		u.FirstSeen, _ = time.Parse(time.RFC3339Nano, first)
		u.LastSeen, _ = time.Parse(time.RFC3339Nano, last)
		out[id] = u
	}
	return out, rows.Err()
}

// Item is one outbox row.
type Item struct {
	ID       int64
	Channel  string
	Conv     string
	Key      string
	Text     string
	Prompt   *Prompt
	ReplyTo  string
	EditRef  string
	State    string
	Attempts int
	NextAt   time.Time
	Error    string
	Ref      string
}

func (it Item) outgoing() Outgoing {
	return Outgoing{Key: it.Key, Text: it.Text, Prompt: it.Prompt, ReplyTo: it.ReplyTo}
}

// Enqueue writes an outbound message; the outbox sends it. A key already
// queued is kept as it is (the same message enqueued twice posts once).
func (s *Store) Enqueue(ctx context.Context, it Item) error {
	prompt := ""
	if it.Prompt != nil {
		b, err := json.Marshal(it.Prompt)
		if err != nil {
			return err
		}
		prompt = string(b)
	}
	now := s.now()
	_, err := s.db.ExecContext(ctx, `INSERT INTO outbox (channel, conv, key, text, prompt, reply_to, edit_ref, next_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		it.Channel, it.Conv, it.Key, it.Text, prompt, it.ReplyTo, it.EditRef, now, now)
	if err != nil {
		return fmt.Errorf("queueing a %s message: %w", it.Channel, err)
	}
	return nil
}

// Unsent lists a channel's pending and in-doubt items in order.
func (s *Store) Unsent(ctx context.Context, channel string) ([]Item, error) {
	return s.items(ctx, `WHERE channel = ? AND state IN ('pending','sending') ORDER BY id`, channel)
}

// Outbox lists a channel's newest items (tests, doctor).
func (s *Store) Outbox(ctx context.Context, channel string, limit int) ([]Item, error) {
	return s.items(ctx, `WHERE channel = ? ORDER BY id DESC LIMIT ?`, channel, limit)
}

func (s *Store) items(ctx context.Context, where string, args ...any) ([]Item, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, channel, conv, key, text, prompt, reply_to, edit_ref, state, attempts, next_at, last_error, ref FROM outbox `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	defer rows.Close()
	var out []Item
	for rows.Next() {
		var it Item
		var prompt, next string
		if err := rows.Scan(&it.ID, &it.Channel, &it.Conv, &it.Key, &it.Text, &prompt, &it.ReplyTo, &it.EditRef, &it.State, &it.Attempts, &next, &it.Error, &it.Ref); err != nil {
			return nil, err
		}
		if prompt != "" {
			var p Prompt
			if err := json.Unmarshal([]byte(prompt), &p); err == nil {
				it.Prompt = &p
			}
		}
		it.NextAt, _ = time.Parse(time.RFC3339Nano, next)
		out = append(out, it)
	}
	return out, rows.Err()
}

// Attempt marks an item as being sent: from here until Sent or Retry, a
// crash leaves it in doubt.
func (s *Store) Attempt(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE outbox SET state = 'sending', attempts = attempts + 1 WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("marking outbox item %d: %w", id, err)
	}
	return nil
}

// Sent confirms an item with the platform's reference.
func (s *Store) Sent(ctx context.Context, id int64, ref string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE outbox SET state = 'sent', ref = ?, last_error = '', done_at = ? WHERE id = ?`, ref, s.now(), id)
	if err != nil {
		return fmt.Errorf("confirming outbox item %d: %w", id, err)
	}
	return nil
}

// Retry puts an item back as pending until next.
func (s *Store) Retry(ctx context.Context, id int64, next time.Time, cause string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE outbox SET state = 'pending', next_at = ?, last_error = ? WHERE id = ?`, fmtTime(next), cause, id)
	if err != nil {
		return fmt.Errorf("rescheduling outbox item %d: %w", id, err)
	}
	return nil
}

// Fail gives an item up.
func (s *Store) Fail(ctx context.Context, id int64, cause string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE outbox SET state = 'failed', last_error = ?, done_at = ? WHERE id = ?`, cause, s.now(), id)
	if err != nil {
		return fmt.Errorf("failing outbox item %d: %w", id, err)
	}
	return nil
}

// Card is an approval prompt sent to a conversation.
type Card struct {
	ApprovalID string
	Channel    string
	Conv       string
	Code       string
	OutboxKey  string
	Ref        string
	Text       string
	Question   bool
	State      string
}

// AddCard records a prompt; it fails when the code is taken by another
// open card of the channel (the caller draws another).
func (s *Store) AddCard(ctx context.Context, c Card) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO cards (approval_id, channel, conv, code, outbox_key, text, question, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ApprovalID, c.Channel, c.Conv, c.Code, c.OutboxKey, c.Text, c.Question, s.now())
	if err != nil {
		return fmt.Errorf("recording %s approval card: %w", c.Channel, err)
	}
	return nil
}

// SetCardRef records the platform message a card was sent as.
func (s *Store) SetCardRef(ctx context.Context, channel, outboxKey, ref string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE cards SET ref = ? WHERE channel = ? AND outbox_key = ?`, ref, channel, outboxKey)
	if err != nil {
		return fmt.Errorf("recording %s card message: %w", channel, err)
	}
	return nil
}

const cardCols = `approval_id, channel, conv, code, outbox_key, ref, text, question, state`

func scanCard(row interface{ Scan(...any) error }) (Card, error) {
	var c Card
	err := row.Scan(&c.ApprovalID, &c.Channel, &c.Conv, &c.Code, &c.OutboxKey, &c.Ref, &c.Text, &c.Question, &c.State)
	if errors.Is(err, sql.ErrNoRows) {
		return Card{}, store.ErrNotFound
	}
	return c, err
}

// Card returns the card of an approval.
func (s *Store) Card(ctx context.Context, channel, approvalID string) (Card, error) {
	return scanCard(s.db.QueryRowContext(ctx, `SELECT `+cardCols+` FROM cards WHERE channel = ? AND approval_id = ?`, channel, approvalID))
}

// CardByRef returns the card sent as a platform message.
func (s *Store) CardByRef(ctx context.Context, channel, ref string) (Card, error) {
	if ref == "" {
		return Card{}, store.ErrNotFound
	}
	return scanCard(s.db.QueryRowContext(ctx, `SELECT `+cardCols+` FROM cards WHERE channel = ? AND ref = ?`, channel, ref))
}

// CardByCode returns the open card with a request code in a conversation.
func (s *Store) CardByCode(ctx context.Context, channel, conv, code string) (Card, error) {
	return scanCard(s.db.QueryRowContext(ctx, `SELECT `+cardCols+` FROM cards WHERE channel = ? AND conv = ? AND code = ? AND state = 'open'`, channel, conv, code))
}

// Press moves an open card to pressed; false if it was not open (a replay).
func (s *Store) Press(ctx context.Context, channel, approvalID string) (bool, error) {
	return s.move(ctx, channel, approvalID, `'open'`, "pressed")
}

// Close closes a card; false if it was already closed.
func (s *Store) Close(ctx context.Context, channel, approvalID string) (bool, error) {
	return s.move(ctx, channel, approvalID, `'open','pressed'`, "closed")
}

func (s *Store) move(ctx context.Context, channel, approvalID, from, to string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE cards SET state = ? WHERE channel = ? AND approval_id = ? AND state IN (`+from+`)`, to, channel, approvalID)
	if err != nil {
		return false, fmt.Errorf("updating %s card: %w", channel, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// RefOf returns the platform reference and state of an outbox item.
func (s *Store) RefOf(ctx context.Context, key string) (string, string, error) {
	var ref, state string
	err := s.db.QueryRowContext(ctx, `SELECT ref, state FROM outbox WHERE key = ?`, key).Scan(&ref, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", errNoRef
	}
	if err != nil {
		return "", "", fmt.Errorf("reading outbox item %s: %w", key, err)
	}
	return ref, state, nil
}

// ReplyToOf returns the ReplyTo an outbox item was queued with ("" when
// there is no such item), so a follow-up to it stays in its thread.
func (s *Store) ReplyToOf(ctx context.Context, key string) string {
	var r string
	_ = s.db.QueryRowContext(ctx, `SELECT reply_to FROM outbox WHERE key = ?`, key).Scan(&r)
	return r
}
