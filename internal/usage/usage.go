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
	"fmt"
	"log/slog"
	"strings"
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
}

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
func (l *Ledger) RecordCall(ctx context.Context, rec llm.CallRecord) {
	if err := l.AddCall(ctx, rec); err != nil {
		l.log.Error("recording model usage", "err", err, "service", rec.Service, "model", rec.Model)
	}
}

// AddCall is RecordCall returning the error.
func (l *Ledger) AddCall(ctx context.Context, rec llm.CallRecord) error {
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
	_, err := l.db.ExecContext(ctx, `INSERT INTO llm_calls (at_ms, service, action, kind, stream, tier, provider, model,
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
