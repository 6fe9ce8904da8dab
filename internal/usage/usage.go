// Package usage is the token, cost and tool-timing ledger. It owns the
// "usage" database: one row per terminal model request (written by the llm
// router through RecordCall, whoever called: agent, gateway, indexers) and
// one row per tool call (written by the agent through RecordTool).
//
// Cost is an estimate computed at read time from recorded tokens and the
// code-configured rates table (Rates), so editing a rate changes displayed
// history without touching recorded tokens. It is not a provider invoice.
package usage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the usage database schema.
var Schema = store.Schema{Name: "usage", Migrations: []string{`
CREATE TABLE llm_calls (
	id                 INTEGER PRIMARY KEY,
	at_ms              INTEGER NOT NULL,
	service            TEXT NOT NULL,
	action             TEXT NOT NULL,
	kind               TEXT NOT NULL,
	stream             INTEGER NOT NULL,
	tier               TEXT NOT NULL,
	provider           TEXT NOT NULL,
	model              TEXT NOT NULL,
	input_tokens       INTEGER NOT NULL,
	output_tokens      INTEGER NOT NULL,
	cache_read_tokens  INTEGER NOT NULL,
	cache_write_tokens INTEGER NOT NULL,
	reasoning_tokens   INTEGER NOT NULL,
	duration_ms        INTEGER NOT NULL,
	outcome            TEXT NOT NULL,
	attempts           INTEGER NOT NULL
);
CREATE INDEX llm_calls_at ON llm_calls(at_ms);
CREATE TABLE tool_calls (
	id          INTEGER PRIMARY KEY,
	at_ms       INTEGER NOT NULL,
	service     TEXT NOT NULL,
	tool        TEXT NOT NULL,
	duration_ms INTEGER NOT NULL,
	outcome     TEXT NOT NULL,
	error       TEXT NOT NULL,
	chat_id     TEXT NOT NULL
);
CREATE INDEX tool_calls_at ON tool_calls(at_ms);
`}}

// Ledger records and summarises usage.
type Ledger struct {
	db    *store.DB
	log   *slog.Logger
	now   func() time.Time
	rates []Rate

	// queue holds rows of the local provider while Run writes them; nil
	// while Run is not running. qmu guards queue.
	qmu   sync.RWMutex
	queue chan llm.CallRecord
}

// localQueue bounds the rows waiting for Run; past it a row is written by
// its caller.
const localQueue = 1024

// New returns a ledger over an opened usage database (see Schema). rates
// nil uses DefaultRates(); now nil uses time.Now.
func New(db *store.DB, log *slog.Logger, now func() time.Time, rates []Rate) *Ledger {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	if rates == nil {
		rates = DefaultRates()
	}
	return &Ledger{db: db, log: log, now: now, rates: rates}
}

// Open opens (creating and migrating) the usage database at path.
func Open(ctx context.Context, path string, log *slog.Logger, now func() time.Time) (*Ledger, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	return New(db, log, now, nil), nil
}

// Close closes the database.
func (l *Ledger) Close() error { return l.db.Close() }

// Rates returns the rates table in use.
func (l *Ledger) Rates() []Rate { return append([]Rate(nil), l.rates...) }

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// MaxLabel bounds a stored service or action label (bytes).
const MaxLabel = 100

// label cleans an attribution label taken from a request header: control
// characters become spaces, surrounding space goes, the rest is cut to
// MaxLabel bytes on a character boundary; blank is "unknown".
func label(s string) string {
	s = strings.ToValidUTF8(s, "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > MaxLabel {
		cut := MaxLabel
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	return orUnknown(s)
}

// RecordCall implements llm.Recorder: one row per terminal model request.
// A write failure is logged, never returned: losing a usage row must not
// fail the user's request.
//
// While Run runs, a call of the local provider (the offline embedder,
// which every hybrid search calls for its query vector) is queued for Run
// instead: its row costs nothing, no budget reads it (SpendSince leaves the
// local provider out), and a search should not wait for a write. Every
// other row is written before RecordCall returns, so a budget sees it.
func (l *Ledger) RecordCall(ctx context.Context, rec llm.CallRecord) {
	if rec.Provider == llm.LocalProvider && l.enqueue(rec) {
		return
	}
	if err := l.AddCall(ctx, rec); err != nil {
		l.log.Error("recording model usage", "err", err, "service", rec.Service, "model", rec.Model)
	}
}

// enqueue hands rec to Run; false when Run is not running or its queue is
// full.
func (l *Ledger) enqueue(rec llm.CallRecord) bool {
	l.qmu.RLock()
	defer l.qmu.RUnlock()
	if l.queue == nil {
		return false
	}
	select {
	case l.queue <- rec:
		return true
	default:
		return false
	}
}

// Run writes the queued rows of the local provider (see RecordCall), all
// that are waiting in one transaction, until ctx is done; then it writes
// what is left and returns. Rows recorded after it returned are written by
// their callers again.
func (l *Ledger) Run(ctx context.Context) error {
	q := make(chan llm.CallRecord, localQueue)
	l.qmu.Lock()
	if l.queue != nil {
		l.qmu.Unlock()
		return errors.New("the usage ledger's writer is already running")
	}
	l.queue = q
	l.qmu.Unlock()
	// Rows taken from the queue are written even while ctx ends: their
	// callers were told they are recorded.
	write := context.WithoutCancel(ctx)
	defer func() { // also after a panic, so that a restarted Run can begin
		l.qmu.Lock()
		l.queue = nil // no sender holds qmu now: q only drains
		l.qmu.Unlock()
		l.writeQueued(write, q, nil)
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case rec := <-q:
			l.writeQueued(write, q, []llm.CallRecord{rec})
		}
	}
}

// writeQueued writes batch and every row waiting in q in one transaction.
func (l *Ledger) writeQueued(ctx context.Context, q chan llm.CallRecord, batch []llm.CallRecord) {
	for more := true; more; {
		select {
		case rec := <-q:
			batch = append(batch, rec)
		default:
			more = false
		}
	}
	if len(batch) == 0 {
		return
	}
	err := l.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, rec := range batch {
			if err := l.insertCall(ctx, tx, rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		l.log.Error("recording model usage", "err", err, "rows", len(batch))
	}
}

// AddCall is RecordCall returning the error, always written before it
// returns.
func (l *Ledger) AddCall(ctx context.Context, rec llm.CallRecord) error {
	return l.insertCall(ctx, l.db, rec)
}

// execer is the database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (l *Ledger) insertCall(ctx context.Context, db execer, rec llm.CallRecord) error {
	at := rec.Start
	if at.IsZero() {
		at = l.now()
	}
	stream := 0
	if rec.Stream {
		stream = 1
	}
	kind := rec.Kind
	if kind == "" {
		kind = "chat"
	}
	u := rec.Usage
	_, err := db.ExecContext(ctx, `INSERT INTO llm_calls (at_ms, service, action, kind, stream, tier, provider, model,
		input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, duration_ms, outcome, attempts)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		at.UnixMilli(), label(rec.Service), label(rec.Action), kind, stream, string(rec.Tier), rec.Provider, rec.Model,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens,
		rec.Duration.Milliseconds(), orUnknown(rec.Outcome), rec.Attempts)
	if err != nil {
		return fmt.Errorf("inserting usage row: %w", err)
	}
	return nil
}

// ToolCall is one tool invocation as the agent reports it.
type ToolCall struct {
	At       time.Time // zero means now
	Service  string    // who ran the turn, e.g. "agent" or "watch"; empty → "unknown"
	Tool     string    // fully qualified tool name
	Duration time.Duration
	// Outcome is "ok", "denied", "error" or a short stable error code.
	Outcome string
	// Error is a short, already-redacted error message (bounded to 500 bytes).
	Error  string
	ChatID string
}

// RecordTool stores one tool call's timing and outcome.
func (l *Ledger) RecordTool(ctx context.Context, tc ToolCall) error {
	if tc.Tool == "" {
		return fmt.Errorf("recording tool usage: tool name is empty")
	}
	at := tc.At
	if at.IsZero() {
		at = l.now()
	}
	msg := tc.Error
	if len(msg) > 500 {
		msg = msg[:500]
	}
	outcome := tc.Outcome
	if outcome == "" {
		outcome = "ok"
		if tc.Error != "" {
			outcome = "error"
		}
	}
	_, err := l.db.ExecContext(ctx, `INSERT INTO tool_calls (at_ms, service, tool, duration_ms, outcome, error, chat_id) VALUES (?,?,?,?,?,?,?)`,
		at.UnixMilli(), label(tc.Service), tc.Tool, tc.Duration.Milliseconds(), outcome, msg, tc.ChatID)
	if err != nil {
		return fmt.Errorf("inserting tool usage row: %w", err)
	}
	return nil
}
