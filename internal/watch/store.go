package watch

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the watches database.
var Schema = store.Schema{
	Name: "watches",
	Migrations: []string{`
CREATE TABLE watches (
	id          TEXT PRIMARY KEY,
	source      TEXT NOT NULL,
	ref         TEXT NOT NULL,
	instruction TEXT NOT NULL,
	chat_id     TEXT NOT NULL DEFAULT '',
	rules       TEXT NOT NULL,
	state       TEXT NOT NULL,
	expires_at  INTEGER NOT NULL,
	created_at  INTEGER NOT NULL,
	ended_at    INTEGER,
	snapshot    TEXT,
	last_poll   INTEGER,
	last_error  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX watches_state ON watches(state, created_at);
CREATE TABLE events (
	id           INTEGER PRIMARY KEY,
	watch_id     TEXT NOT NULL REFERENCES watches(id) ON DELETE CASCADE,
	key          TEXT NOT NULL,
	type         TEXT NOT NULL,
	data         TEXT NOT NULL,
	text         TEXT NOT NULL,
	state        TEXT NOT NULL DEFAULT 'pending',
	attempts     INTEGER NOT NULL DEFAULT 0,
	message      TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	delivered_at INTEGER,
	UNIQUE (watch_id, key)
);
CREATE INDEX events_state ON events(state, id);
CREATE TABLE event_rules (
	event_id INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
	watch_id TEXT NOT NULL,
	rule_id  TEXT NOT NULL,
	PRIMARY KEY (event_id, rule_id)
);
CREATE INDEX event_rules_rule ON event_rules(watch_id, rule_id);
CREATE TABLE claims (
	id         INTEGER PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE,
	watch_id   TEXT NOT NULL,
	event_id   INTEGER NOT NULL,
	rule_id    TEXT NOT NULL,
	tool       TEXT NOT NULL,
	args       TEXT NOT NULL,
	state      TEXT NOT NULL,
	result     TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	ended_at   INTEGER
);
CREATE INDEX claims_rule ON claims(watch_id, rule_id, tool);
`, `
ALTER TABLE watches ADD COLUMN deliver TEXT NOT NULL DEFAULT '';
`},
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := time.UnixMilli(v.Int64).UTC()
	return &t
}

func newID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "w_" + hex.EncodeToString(b)
}

const watchCols = `id, source, ref, instruction, chat_id, rules, state, expires_at, created_at, ended_at, snapshot, last_poll, last_error, deliver,
	(SELECT count(*) FROM events e WHERE e.watch_id = watches.id),
	(SELECT max(created_at) FROM events e WHERE e.watch_id = watches.id)`

func scanWatch(sc interface{ Scan(...any) error }) (Watch, error) {
	var w Watch
	var rules string
	var snap sql.NullString
	var exp, created int64
	var ended, last, lastEvent sql.NullInt64
	var deliver string
	if err := sc.Scan(&w.ID, &w.Source, &w.Ref, &w.Instruction, &w.ChatID, &rules, &w.State, &exp, &created, &ended, &snap, &last, &w.LastError, &deliver, &w.Events, &lastEvent); err != nil {
		return Watch{}, err
	}
	if deliver != "" {
		w.Deliver = strings.Split(deliver, ",")
	}
	if err := json.Unmarshal([]byte(rules), &w.Rules); err != nil {
		return Watch{}, fmt.Errorf("watch %s: stored rules: %w", w.ID, err)
	}
	w.ExpiresAt = time.UnixMilli(exp).UTC()
	w.CreatedAt = time.UnixMilli(created).UTC()
	w.EndedAt, w.LastPoll, w.LastEvent = fromMS(ended), fromMS(last), fromMS(lastEvent)
	if snap.Valid {
		w.Snapshot = json.RawMessage(snap.String)
	}
	return w, nil
}

// Get returns one watch.
func (e *Engine) Get(ctx context.Context, id string) (Watch, error) {
	w, err := scanWatch(e.db.QueryRowContext(ctx, `SELECT `+watchCols+` FROM watches WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Watch{}, fmt.Errorf("watch %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return Watch{}, fmt.Errorf("reading watch %s: %w", id, err)
	}
	return w, nil
}

// List returns watches, newest first; state "" lists all (at most 200).
func (e *Engine) List(ctx context.Context, state string) ([]Watch, error) {
	q := `SELECT ` + watchCols + ` FROM watches`
	args := []any{}
	if state != "" {
		q += ` WHERE state = ?`
		args = append(args, state)
	}
	rows, err := e.db.QueryContext(ctx, q+` ORDER BY created_at DESC LIMIT 200`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing watches: %w", err)
	}
	defer rows.Close()
	out := []Watch{}
	for rows.Next() {
		w, err := scanWatch(rows)
		if err != nil {
			return nil, err
		}
		w.Snapshot = nil // lists stay compact
		out = append(out, w)
	}
	return out, rows.Err()
}

// StoredEvent is a fired event as stored.
type StoredEvent struct {
	ID          int64          `json:"id"`
	WatchID     string         `json:"watch_id"`
	Key         string         `json:"key"`
	Type        string         `json:"type"`
	Data        map[string]any `json:"data,omitempty"`
	Text        string         `json:"text"`
	State       string         `json:"state"`
	Rules       []string       `json:"rules,omitempty"`
	Message     string         `json:"message,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	DeliveredAt *time.Time     `json:"delivered_at,omitempty"`
}

// Events returns a watch's events, newest first (at most 100).
func (e *Engine) Events(ctx context.Context, watchID string) ([]StoredEvent, error) {
	rows, err := e.db.QueryContext(ctx, `SELECT id, watch_id, key, type, data, text, state, message, created_at, delivered_at,
		(SELECT group_concat(rule_id) FROM event_rules r WHERE r.event_id = events.id)
		FROM events WHERE watch_id = ? ORDER BY id DESC LIMIT 100`, watchID)
	if err != nil {
		return nil, fmt.Errorf("listing events: %w", err)
	}
	defer rows.Close()
	out := []StoredEvent{}
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

func scanEvent(sc interface{ Scan(...any) error }) (StoredEvent, error) {
	var ev StoredEvent
	var data string
	var created int64
	var delivered sql.NullInt64
	var rules sql.NullString
	if err := sc.Scan(&ev.ID, &ev.WatchID, &ev.Key, &ev.Type, &data, &ev.Text, &ev.State, &ev.Message, &created, &delivered, &rules); err != nil {
		return StoredEvent{}, err
	}
	json.Unmarshal([]byte(data), &ev.Data)
	ev.CreatedAt = time.UnixMilli(created).UTC()
	ev.DeliveredAt = fromMS(delivered)
	if rules.Valid && rules.String != "" {
		ev.Rules = splitComma(rules.String)
	}
	return ev, nil
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// Claim is a granted call's durable record.
type Claim struct {
	ID        int64           `json:"id"`
	WatchID   string          `json:"watch_id"`
	EventID   int64           `json:"event_id"`
	RuleID    string          `json:"rule_id"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	State     string          `json:"state"`
	Result    string          `json:"result,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
}

// Claims lists a watch's granted calls.
func (e *Engine) Claims(ctx context.Context, watchID string) ([]Claim, error) {
	rows, err := e.db.QueryContext(ctx, `SELECT id, watch_id, event_id, rule_id, tool, args, state, result, created_at FROM claims WHERE watch_id = ? ORDER BY id`, watchID)
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	defer rows.Close()
	out := []Claim{}
	for rows.Next() {
		var c Claim
		var args string
		var created int64
		if err := rows.Scan(&c.ID, &c.WatchID, &c.EventID, &c.RuleID, &c.Tool, &args, &c.State, &c.Result, &created); err != nil {
			return nil, err
		}
		c.Args = json.RawMessage(args)
		c.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, c)
	}
	return out, rows.Err()
}
