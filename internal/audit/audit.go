// Package audit is the append-only ledger of what the assistant did: user
// and assistant messages, policy decisions, approval requests and outcomes,
// tool runs and errors. Everything is redacted before it is stored (see
// Redact). Rows form a hash chain: each row's hash covers the previous hash
// and the row's redacted content, so Verify can tell whether rows were
// edited, removed or reordered after the fact.
//
// Recording never fails a turn: errors are logged and counted, not returned
// to the agent.
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the audit database.
var Schema = store.Schema{Name: "audit", Migrations: []string{`
CREATE TABLE events (
	id INTEGER PRIMARY KEY AUTOINCREMENT,
	ts TEXT NOT NULL,
	type TEXT NOT NULL,
	chat_id TEXT NOT NULL DEFAULT '',
	turn_id TEXT NOT NULL DEFAULT '',
	tool TEXT NOT NULL DEFAULT '',
	summary TEXT NOT NULL DEFAULT '',
	data TEXT NOT NULL DEFAULT '{}',
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL
);
CREATE INDEX events_ts ON events(ts);
CREATE INDEX events_chat ON events(chat_id, id);
CREATE INDEX events_type ON events(type, id);`}}

// Event types.
const (
	TypeUserMessage      = "message.user"
	TypeAssistantMessage = "message.assistant"
	TypePolicyDecision   = "policy.decision"
	TypeApprovalRequest  = "approval.requested"
	TypeApprovalResolved = "approval.resolved"
	TypeToolRun          = "tool.run"
	// TypeToolStarted is written just before a tool runs; a start with no
	// tool.run of the same call_key is a call the daemon died during.
	TypeToolStarted = "tool.started"
	TypeTurnError   = "turn.error"
)

// Event is one audit row.
type Event struct {
	ID       int64           `json:"id"`
	TS       time.Time       `json:"ts"`
	Type     string          `json:"type"`
	ChatID   string          `json:"chat_id,omitempty"`
	TurnID   string          `json:"turn_id,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	Summary  string          `json:"summary"`
	Data     json.RawMessage `json:"data"`
	PrevHash string          `json:"prev_hash"`
	Hash     string          `json:"hash"`
}

// Entry is what callers record.
type Entry struct {
	Type    string
	ChatID  string
	TurnID  string
	Tool    string
	Summary string
	Data    any // any JSON-encodable value; redacted before insert
}

// genesis is the prev_hash of the first row.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Log is the audit ledger.
type Log struct {
	db    *store.DB
	clock func() time.Time
	log   *slog.Logger

	mu sync.Mutex // serialises appends so the chain has one order
	// last is the newest row's hash when known (guarded by mu); the daemon
	// is the only writer, so it saves reading it back on every append.
	last     string
	failures atomic.Int64
}

// New returns the ledger over db (opened with Schema).
func New(db *store.DB, clock func() time.Time, log *slog.Logger) *Log {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Log{db: db, clock: clock, log: log}
}

// Failures counts records that could not be written.
func (l *Log) Failures() int64 { return l.failures.Load() }

// Record redacts and appends e. It never returns an error: the audit trail
// must not block the turn. Failures are logged and counted.
func (l *Log) Record(ctx context.Context, e Entry) {
	if l == nil {
		return
	}
	if _, err := l.Append(ctx, e); err != nil {
		l.failures.Add(1)
		l.log.Warn("audit record failed", "type", e.Type, "err", err)
	}
}

// Append redacts and stores e, returning the stored row.
func (l *Log) Append(ctx context.Context, e Entry) (Event, error) {
	data, err := redactData(e.Data)
	if err != nil {
		return Event{}, err
	}
	ev := Event{
		TS: l.clock().UTC(), Type: e.Type, ChatID: e.ChatID, TurnID: e.TurnID, Tool: e.Tool,
		Summary: RedactString(e.Summary, 300), Data: data,
	}
	// Appends must not be cancelled half-way by a turn ending; the write is
	// small and bounded by the busy timeout.
	ctx = context.WithoutCancel(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	err = l.db.Tx(ctx, func(tx *sql.Tx) error {
		prev := l.last
		if prev == "" {
			prev = genesis
			err := tx.QueryRowContext(ctx, `SELECT hash FROM events ORDER BY id DESC LIMIT 1`).Scan(&prev)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("reading last audit hash: %w", err)
			}
		}
		ev.PrevHash = prev
		ev.Hash = chainHash(ev)
		res, err := tx.ExecContext(ctx, `INSERT INTO events (ts, type, chat_id, turn_id, tool, summary, data, prev_hash, hash) VALUES (?,?,?,?,?,?,?,?,?)`,
			ev.TS.Format(time.RFC3339Nano), ev.Type, ev.ChatID, ev.TurnID, ev.Tool, ev.Summary, string(ev.Data), ev.PrevHash, ev.Hash)
		if err != nil {
			return fmt.Errorf("inserting audit event: %w", err)
		}
		ev.ID, _ = res.LastInsertId()
		return nil
	})
	if err != nil {
		l.last = "" // unknown again: re-read on the next append
	} else {
		l.last = ev.Hash
	}
	return ev, err
}

func redactData(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage("{}"), nil
	}
	// Round-trip through JSON so structs, RawMessage and maps all become
	// the generic form Redact walks.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding audit data: %w", err)
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("decoding audit data: %w", err)
	}
	out, err := json.Marshal(Redact(generic))
	if err != nil {
		return nil, fmt.Errorf("encoding redacted audit data: %w", err)
	}
	return out, nil
}

// chainHash is SHA-256 over the previous hash and the row's fields, each
// length-prefixed so that no two different rows encode the same way.
func chainHash(e Event) string {
	h := sha256.New()
	for _, f := range []string{e.PrevHash, e.TS.Format(time.RFC3339Nano), e.Type, e.ChatID, e.TurnID, e.Tool, e.Summary, string(e.Data)} {
		fmt.Fprintf(h, "%d:%s;", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// VerifyResult reports a chain walk.
type VerifyResult struct {
	OK       bool   `json:"ok"`
	Count    int64  `json:"count"`
	FirstBad int64  `json:"first_bad,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// Verify walks the chain from the first row and reports the first row whose
// hash or link does not match.
func (l *Log) Verify(ctx context.Context) (VerifyResult, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT id, ts, type, chat_id, turn_id, tool, summary, data, prev_hash, hash FROM events ORDER BY id`)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("reading audit events: %w", err)
	}
	defer rows.Close()
	res := VerifyResult{OK: true}
	prev := genesis
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return VerifyResult{}, err
		}
		res.Count++
		if !res.OK {
			continue
		}
		switch {
		case e.PrevHash != prev:
			res.OK, res.FirstBad, res.Problem = false, e.ID, fmt.Sprintf("event %d does not link to the event before it (a row was removed or reordered)", e.ID)
		case chainHash(e) != e.Hash:
			res.OK, res.FirstBad, res.Problem = false, e.ID, fmt.Sprintf("event %d was changed after it was written", e.ID)
		}
		prev = e.Hash
	}
	if err := rows.Err(); err != nil {
		return VerifyResult{}, fmt.Errorf("reading audit events: %w", err)
	}
	return res, nil
}

type scanner interface{ Scan(...any) error }

func scanEvent(sc scanner) (Event, error) {
	var e Event
	var ts, data string
	if err := sc.Scan(&e.ID, &ts, &e.Type, &e.ChatID, &e.TurnID, &e.Tool, &e.Summary, &data, &e.PrevHash, &e.Hash); err != nil {
		return Event{}, fmt.Errorf("reading audit event: %w", err)
	}
	// Keep the stored text: re-formatting could change the hash input.
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return Event{}, fmt.Errorf("audit event %d has a bad time %q: %w", e.ID, ts, err)
	}
	e.TS = t
	e.Data = json.RawMessage(data)
	return e, nil
}

// Filter selects audit events.
type Filter struct {
	Type   string
	ChatID string
	Tool   string
	Since  time.Time
	Until  time.Time
	Text   string
	Before int64 // id, exclusive; 0 for newest
	Limit  int
}

// MaxList bounds one page.
const MaxList = 500

// List returns matching events, newest first.
func (l *Log) List(ctx context.Context, f Filter) ([]Event, error) {
	if f.Limit <= 0 || f.Limit > MaxList {
		f.Limit = 100
	}
	var where []string
	var args []any
	add := func(cond string, v any) { where = append(where, cond); args = append(args, v) }
	if f.Type != "" {
		if strings.HasSuffix(f.Type, "*") {
			add("type LIKE ? ESCAPE '\\'", likeEscape(strings.TrimSuffix(f.Type, "*"))+"%")
		} else {
			add("type = ?", f.Type)
		}
	}
	if f.ChatID != "" {
		add("chat_id = ?", f.ChatID)
	}
	if f.Tool != "" {
		add("tool = ?", f.Tool)
	}
	if !f.Since.IsZero() {
		add("ts >= ?", f.Since.UTC().Format(time.RFC3339Nano))
	}
	if !f.Until.IsZero() {
		add("ts < ?", f.Until.UTC().Format(time.RFC3339Nano))
	}
	if f.Text != "" {
		where = append(where, "(summary LIKE ? ESCAPE '\\' OR data LIKE ? ESCAPE '\\')")
		p := "%" + likeEscape(f.Text) + "%"
		args = append(args, p, p)
	}
	if f.Before > 0 {
		add("id < ?", f.Before)
	}
	q := `SELECT id, ts, type, chat_id, turn_id, tool, summary, data, prev_hash, hash FROM events`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := l.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("listing audit events: %w", err)
	}
	defer rows.Close()
	out := []Event{}
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// UnresolvedApprovals returns the approval.requested events, oldest first,
// that no approval.resolved event answers (matched by the request id in
// data). A pending request lives only in the daemon's memory, so after a
// crash these are the requests that were waiting when it died. One pass over
// each type (index events_type), linear in the number of approvals.
func (l *Log) UnresolvedApprovals(ctx context.Context) ([]Event, error) {
	return l.unmatched(ctx, TypeApprovalRequest, TypeApprovalResolved, "id")
}

// UnfinishedCalls returns the tool.started events, oldest first, that no
// tool.run event closes (matched by call_key in data): calls that were
// running when the daemon stopped.
func (l *Log) UnfinishedCalls(ctx context.Context) ([]Event, error) {
	return l.unmatched(ctx, TypeToolStarted, TypeToolRun, "call_key")
}

// unmatched returns the events of type open, oldest first, whose data
// field key no event of type closed carries: one pass over each type
// (index events_type).
func (l *Log) unmatched(ctx context.Context, open, closed, key string) ([]Event, error) {
	done := map[string]bool{}
	rows, err := l.db.QueryContext(ctx, `SELECT json_extract(data, '$.' || ?) FROM events WHERE type = ? AND json_valid(data)`, key, closed)
	if err != nil {
		return nil, fmt.Errorf("listing %s events: %w", closed, err)
	}
	for rows.Next() {
		var k sql.NullString
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing %s events: %w", closed, err)
		}
		if k.Valid {
			done[k.String] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing %s events: %w", closed, err)
	}
	rows, err = l.db.QueryContext(ctx, `SELECT id, ts, type, chat_id, turn_id, tool, summary, data, prev_hash, hash FROM events WHERE type = ? ORDER BY id`, open)
	if err != nil {
		return nil, fmt.Errorf("listing %s events: %w", open, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return nil, err
		}
		var d map[string]any
		if json.Unmarshal(e.Data, &d) != nil {
			continue
		}
		if k, _ := d[key].(string); k == "" || done[k] {
			continue
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
