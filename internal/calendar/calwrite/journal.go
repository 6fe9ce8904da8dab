// Package calwrite makes the calendar writes the agent may propose:
// calendar_create, calendar_update and calendar_delete. Each is gated by
// policy (not read-only) and journaled in calendarops.db like mail sends:
// the event's UID is assigned and the operation recorded as started before
// anything is written; the write is conditional (never overwrites an object
// that changed); the result is confirmed by reading the object back by UID
// and ETag; and the same call is never executed twice.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// gated `calendar_create`/`calendar_update`/`calendar_delete`, journaled in `calendarops.db`
// (started → done/failed/unknown): UID assigned before the write, conditional writes (create never
// replaces, update/delete compare the ETag), confirmation by reading the object back, the same
// call never run twice, one-occurrence changes as RECURRENCE-ID overrides and EXDATEs; the card
// previews the time and any conflicts. A delete reaches every file of the calendar holding a
// version of the event (older ones hidden by the index included, `Op.Copies`), hidden copies
// first and the shown one last; deleting one occurrence also removes its overrides from the
// other files, and the card counts the copies. Task writes (`tasks.go`: task_create, task_complete;
// `taskedit.go`: task_update, task_delete; for package tasks' tools) use the same journal, targets
// and backends; a recurring task's occurrence is completed by a RECURRENCE-ID override.
package calwrite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hestia-dev/hestia/internal/calendar"
	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is calendarops.db's schema.
var Schema = store.Schema{Name: "calendarops", Migrations: []string{`
CREATE TABLE ops (
	id         INTEGER PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE,
	kind       TEXT NOT NULL,
	calendar   TEXT NOT NULL,
	uid        TEXT NOT NULL,
	href       TEXT NOT NULL DEFAULT '',
	instance   TEXT NOT NULL DEFAULT '',
	summary    TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL,
	etag       TEXT NOT NULL DEFAULT '',
	error      TEXT NOT NULL DEFAULT '',
	checks     INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX ops_state ON ops(state);
`,
	// The other files a delete reached (a JSON list of hrefs, '' when
	// none): a collection may hold older versions of an event in other
	// files, and a delete removes them all.
	`ALTER TABLE ops ADD COLUMN copies TEXT NOT NULL DEFAULT '';`,
}}

// Operation kinds and states.
const (
	KindCreate = "create"
	KindUpdate = "update"
	KindDelete = "delete"

	StateStarted = "started"
	StateDone    = "done"
	StateFailed  = "failed"
	// StateUnknown: the write may or may not have happened (the store
	// did not answer); confirmation reads the object back to decide, and
	// the write is never repeated blindly.
	StateUnknown = "unknown"
)

// Op is one journaled write.
type Op struct {
	ID       int64  `json:"id"`
	Kind     string `json:"kind"`
	Calendar string `json:"calendar"`
	UID      string `json:"uid"`
	Href     string `json:"href,omitempty"`
	Instance string `json:"instance,omitempty"`
	Summary  string `json:"summary,omitempty"`
	// Copies are the other files of the calendar holding versions of the
	// event that a delete removed too (for one occurrence: removed or
	// rewrote without that occurrence's override), so that no older
	// version hidden behind the one shown comes back.
	Copies    []string  `json:"copies,omitempty"`
	State     string    `json:"state"`
	ETag      string    `json:"etag,omitempty"`
	Error     string    `json:"error,omitempty"`
	Checks    int       `json:"checks,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Target is one writable calendar.
type Target struct {
	Name     string
	ReadOnly bool
	Backend  Backend
	// Resync refreshes the calendar's index after a write (optional).
	Resync func(ctx context.Context) error
}

// Writer journals and performs calendar writes.
type Writer struct {
	db      *store.DB
	cal     *calendar.Store
	targets func(ctx context.Context) (map[string]Target, error)
	loc     *time.Location
	now     func() time.Time
	log     *slog.Logger
}

// Options configure a Writer.
type Options struct {
	DBPath  string
	Index   *calendar.Store
	Targets func(ctx context.Context) (map[string]Target, error)
	// Loc is the zone new events are written in (its IANA name as TZID).
	Loc    *time.Location
	Now    func() time.Time
	Logger *slog.Logger
}

// Open opens the journal.
func Open(ctx context.Context, o Options) (*Writer, error) {
	db, err := store.Open(ctx, o.DBPath, Schema)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Loc == nil {
		o.Loc = o.Index.Floating()
	}
	return &Writer{db: db, cal: o.Index, targets: o.Targets, loc: o.Loc, now: o.Now, log: o.Logger}, nil
}

// Close closes the journal.
func (w *Writer) Close() error { return w.db.Close() }

const opCols = `id, kind, calendar, uid, href, instance, summary, copies, state, etag, error, checks, created_at, updated_at`

func scanOp(row interface{ Scan(...any) error }) (Op, error) {
	var o Op
	var c, u int64
	var copies string
	err := row.Scan(&o.ID, &o.Kind, &o.Calendar, &o.UID, &o.Href, &o.Instance, &o.Summary, &copies, &o.State, &o.ETag, &o.Error, &o.Checks, &c, &u)
	o.CreatedAt, o.UpdatedAt = time.Unix(c, 0).UTC(), time.Unix(u, 0).UTC()
	if err == nil && copies != "" {
		if jerr := json.Unmarshal([]byte(copies), &o.Copies); jerr != nil {
			err = fmt.Errorf("reading the copies of calendar op %d: %w", o.ID, jerr)
		}
	}
	return o, err
}

// byKey returns the op recorded under key, if any.
func (w *Writer) byKey(ctx context.Context, key string) (Op, bool, error) {
	o, err := scanOp(w.db.QueryRowContext(ctx, `SELECT `+opCols+` FROM ops WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return Op{}, false, nil
	}
	if err != nil {
		return Op{}, false, fmt.Errorf("reading calendar journal: %w", err)
	}
	return o, true, nil
}

// begin records a started op; if key was used before it returns that op
// and dup, and the caller must not write again.
func (w *Writer) begin(ctx context.Context, key string, o Op) (Op, bool, error) {
	if prev, ok, err := w.byKey(ctx, key); err != nil || ok {
		return prev, ok, err
	}
	now := w.now().Unix()
	copies := ""
	if len(o.Copies) > 0 {
		b, _ := json.Marshal(o.Copies)
		copies = string(b)
	}
	err := w.db.QueryRowContext(ctx, `INSERT INTO ops(key, kind, calendar, uid, href, instance, summary, copies, state, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`, key, o.Kind, o.Calendar, o.UID, o.Href, o.Instance, o.Summary, copies, StateStarted, now, now).Scan(&o.ID)
	if err != nil {
		return Op{}, false, fmt.Errorf("journaling calendar %s: %w", o.Kind, err)
	}
	o.State = StateStarted
	o.CreatedAt, o.UpdatedAt = time.Unix(now, 0).UTC(), time.Unix(now, 0).UTC()
	return o, false, nil
}

func (w *Writer) finish(ctx context.Context, o *Op, state, etag string, cause error) {
	o.State, o.ETag = state, etag
	if cause != nil {
		o.Error = cause.Error()
	}
	o.UpdatedAt = w.now().UTC()
	if _, err := w.db.ExecContext(ctx, `UPDATE ops SET state = ?, etag = ?, error = ?, checks = ?, updated_at = ? WHERE id = ?`,
		o.State, o.ETag, o.Error, o.Checks, o.UpdatedAt.Unix(), o.ID); err != nil {
		// The write itself happened (or not) regardless; the journal row
		// stays "started" and confirmation will settle it.
		w.log.Error("calendarJournalUpdate", "op", o.ID, "err", err)
	}
}

// List returns recent ops, newest first, optionally of one state.
func (w *Writer) List(ctx context.Context, state string, limit int) ([]Op, error) {
	if limit <= 0 || limit > 500 {
		limit = 100
	}
	q := `SELECT ` + opCols + ` FROM ops`
	args := []any{}
	if state != "" {
		q += ` WHERE state = ?`
		args = append(args, state)
	}
	rows, err := w.db.QueryContext(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("listing calendar journal: %w", err)
	}
	defer rows.Close()
	out := []Op{}
	for rows.Next() {
		o, err := scanOp(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// classify maps a write error to the journal state: a refusal before
// anything was stored is failed, anything else unknown.
func classify(err error) string {
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrRefused) {
		return StateFailed
	}
	return StateUnknown
}

// ErrRefused wraps errors that mean the store refused the write outright
// (nothing was stored).
var ErrRefused = errors.New("refused")
