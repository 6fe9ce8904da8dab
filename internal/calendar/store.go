// Package calendar mirrors the user's calendars into a local SQLite index
// (calendar.db) and answers agenda, search, availability and conflict
// queries over it.
//
// Sources are vdir collections: a folder of .ics files, one calendar object
// per file, as vdirsyncer and khal keep them. Each event is indexed once;
// recurring events are stored as their master (RRULE/RDATE/EXDATE) and
// expanded lazily for the query window, bounded by a cap on instances, so
// an RRULE that never ends costs only what the window holds. Overrides of
// single instances (RECURRENCE-ID) are separate rows that replace, move or
// cancel the instance they name.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `calendar/caltools` too:
//
// the calendar index (`calendar.db`) over vdir collections of `.ics` files: iCalendar parsing
// (go-ical) with TZID resolution (IANA, Windows names, vendor prefixes; a custom VTIMEZONE's
// yearly STANDARD/DAYLIGHT rules become a POSIX TZ rule stored as the event zone `posix:<rule>`,
// other custom zones a fixed offset with a warning), lazy bounded recurrence expansion (rrule-go,
// plus EXDATE/RDATE/RECURRENCE-ID overrides), FTS5 search, agenda, free slots and conflicts (files
// parsed and indexed through `ingest`'s pipeline); the agent's read tools `calendar_agenda`,
// `calendar_search`, `calendar_free_slots`. Recurring instances inside a horizon around today (12
// months back, 25 ahead, moved once a month by the next sync) are materialized in an `instances`
// table at index time; a long-lived store (the daemon) also holds that horizon in memory as
// start-sorted records, invalidated by a change counter that triggers bump on every events/horizon
// write from any process (a stale snapshot is never answered from: SQL answers while it rebuilds
// in the background). Windows outside the horizon, instances longer than a week and series with
// more than 5,000 instances in it expand lazily as before. DESIGN.md's "expansion is lazy" is kept
// outside the horizon only: per-query expansion of every open-ended series cost ~60–80 ms a month
// at 50k events. WEEKLY rules with BYSETPOS are generated in-package (rrule-go ordered the week
// from DTSTART, not WKST). Files are parsed leniently (ParseICSLenient): a bad VEVENT is
// skipped or repaired and named per file and component (`files.warnings`, sync output, doctor,
// the agenda API); several RRULEs are kept newline-joined and expanded as their union;
// X-WR-TIMEZONE anchors floating times; the highest SEQUENCE (then DTSTAMP) of a UID and
// RECURRENCE-ID wins, within a file at parse time and across the files of a collection at index
// time (versions.go: ties go to the file modified last; the losers stay indexed, marked
// superseded and left out of every query, named among their files' warnings while hidden, and
// come back when the winning file goes). Known
// departure: a RANGE=THISANDFUTURE override changes its own instance only (splitting the series
// needs a per-series time shift in the schema). To-dos (VTODO) are read from the same files in the
// same pass (ParseObjects, todo.go) into the `todos` table with FTS5 over summary, description and
// categories; a recurring to-do is answered at one occurrence (the latest due by today's end if
// undone, else the next undone one; RECURRENCE-ID overrides mark occurrences done); queries are in
// todoquery.go. When go-ical refuses a whole stream for one mangled content line, that line is
// dropped and named (linerepair.go) and the rest read.
package calendar

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is calendar.db's schema.
var Schema = store.Schema{Name: "calendar", Migrations: []string{`
CREATE TABLE calendars (
	id        INTEGER PRIMARY KEY,
	name      TEXT NOT NULL UNIQUE,
	path      TEXT NOT NULL,
	read_only INTEGER NOT NULL DEFAULT 0,
	color     TEXT NOT NULL DEFAULT ''
);
CREATE TABLE files (
	id          INTEGER PRIMARY KEY,
	calendar_id INTEGER NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,
	name        TEXT NOT NULL,
	mtime       INTEGER NOT NULL,
	size        INTEGER NOT NULL,
	error       TEXT NOT NULL DEFAULT '',
	UNIQUE (calendar_id, name)
);
CREATE TABLE events (
	id            INTEGER PRIMARY KEY,
	file_id       INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
	calendar_id   INTEGER NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,
	uid           TEXT NOT NULL,
	recurrence_id INTEGER,
	summary       TEXT NOT NULL DEFAULT '',
	description   TEXT NOT NULL DEFAULT '',
	location      TEXT NOT NULL DEFAULT '',
	attendees     TEXT NOT NULL DEFAULT '',
	attendee_json TEXT NOT NULL DEFAULT '[]',
	organizer     TEXT NOT NULL DEFAULT '',
	start         INTEGER NOT NULL,
	end           INTEGER NOT NULL,
	all_day       INTEGER NOT NULL DEFAULT 0,
	zone          TEXT NOT NULL DEFAULT '',
	status        TEXT NOT NULL DEFAULT '',
	transp        TEXT NOT NULL DEFAULT '',
	rrule         TEXT NOT NULL DEFAULT '',
	rdates        TEXT NOT NULL DEFAULT '[]',
	exdates       TEXT NOT NULL DEFAULT '[]',
	recurring     INTEGER NOT NULL DEFAULT 0,
	range_end     INTEGER,
	warnings      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_single ON events(start, end) WHERE recurring = 0 AND recurrence_id IS NULL;
CREATE INDEX events_series ON events(start) WHERE recurring = 1;
CREATE INDEX events_overrides ON events(recurrence_id) WHERE recurrence_id IS NOT NULL;
CREATE INDEX events_uid ON events(calendar_id, uid);
CREATE INDEX events_file ON events(file_id);
CREATE VIRTUAL TABLE events_fts USING fts5(
	summary, description, location, attendees,
	content='events', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER events_ai AFTER INSERT ON events BEGIN
	INSERT INTO events_fts(rowid, summary, description, location, attendees) VALUES (new.id, new.summary, new.description, new.location, new.attendees);
END;
CREATE TRIGGER events_ad AFTER DELETE ON events BEGIN
	INSERT INTO events_fts(events_fts, rowid, summary, description, location, attendees) VALUES ('delete', old.id, old.summary, old.description, old.location, old.attendees);
END;
`,
	// Events longer than a week are found by their end, so an agenda does
	// not scan every earlier event for them.
	`CREATE INDEX events_long ON events(end) WHERE recurring = 0 AND recurrence_id IS NULL AND end - start > 604800;`,
	// Recurring instances inside the horizon, materialized at index time
	// (see horizon.go); materialized marks the series whose instances there
	// are all stored.
	`CREATE TABLE horizon (
	id      INTEGER PRIMARY KEY CHECK (id = 1),
	from_ts INTEGER NOT NULL,
	to_ts   INTEGER NOT NULL
);
CREATE TABLE instances (
	event_id INTEGER NOT NULL REFERENCES events(id) ON DELETE CASCADE,
	start    INTEGER NOT NULL,
	end      INTEGER NOT NULL,
	PRIMARY KEY (event_id, start)
) WITHOUT ROWID;
CREATE INDEX instances_span ON instances(start, end);
ALTER TABLE events ADD COLUMN materialized INTEGER NOT NULL DEFAULT 0;
-- gen counts changes to events and the horizon, by any process, so an
-- in-memory snapshot knows when it is stale.
CREATE TABLE gen (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT INTO gen(id, n) VALUES (1, 0);
CREATE TRIGGER events_gen_i AFTER INSERT ON events BEGIN UPDATE gen SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER events_gen_u AFTER UPDATE ON events BEGIN UPDATE gen SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER events_gen_d AFTER DELETE ON events BEGIN UPDATE gen SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER horizon_gen_i AFTER INSERT ON horizon BEGIN UPDATE gen SET n = n + 1 WHERE id = 1; END;
CREATE TRIGGER horizon_gen_u AFTER UPDATE ON horizon BEGIN UPDATE gen SET n = n + 1 WHERE id = 1; END;`,
	// The components of an indexed file that were skipped or repaired, as
	// a JSON list of Problem ('' when none).
	`ALTER TABLE files ADD COLUMN warnings TEXT NOT NULL DEFAULT '';`,
	// Versions of one event (UID and RECURRENCE-ID) in different files of
	// a collection: SEQUENCE and DTSTAMP (Unix seconds, 0 when absent)
	// order them, and superseded marks the versions a newer one in another
	// file hides (see versions.go). Rows indexed before this migration
	// carry no sequence, so the files sharing a UID with another file are
	// given an mtime no file has, and the next sync reads them again.
	`ALTER TABLE events ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN dtstamp INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
UPDATE files SET mtime = -1 WHERE id IN (SELECT DISTINCT e.file_id FROM events e
	JOIN events o ON o.calendar_id = e.calendar_id AND o.uid = e.uid AND o.file_id != e.file_id);`,
	// To-dos (VTODO), indexed from the same files as events (todo.go,
	// todoquery.go). Times are Unix seconds (NULL when absent); done is
	// the to-do's own state (completed or cancelled), so open ones are
	// found by index. A vdir file holds one object, so only the files
	// indexed without any event can hold a to-do the earlier parser left
	// out: they are given an mtime no file has and read again.
	`CREATE TABLE todos (
	id            INTEGER PRIMARY KEY,
	file_id       INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
	calendar_id   INTEGER NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,
	uid           TEXT NOT NULL,
	recurrence_id INTEGER,
	summary       TEXT NOT NULL DEFAULT '',
	description   TEXT NOT NULL DEFAULT '',
	status        TEXT NOT NULL DEFAULT '',
	done          INTEGER NOT NULL DEFAULT 0,
	priority      INTEGER NOT NULL DEFAULT 0,
	percent       INTEGER NOT NULL DEFAULT 0,
	due           INTEGER,
	due_all_day   INTEGER NOT NULL DEFAULT 0,
	due_zone      TEXT NOT NULL DEFAULT '',
	start         INTEGER,
	start_all_day INTEGER NOT NULL DEFAULT 0,
	start_zone    TEXT NOT NULL DEFAULT '',
	completed     INTEGER,
	categories    TEXT NOT NULL DEFAULT '',
	parent        TEXT NOT NULL DEFAULT '',
	rrule         TEXT NOT NULL DEFAULT '',
	rdates        TEXT NOT NULL DEFAULT '[]',
	exdates       TEXT NOT NULL DEFAULT '[]',
	sequence      INTEGER NOT NULL DEFAULT 0,
	dtstamp       INTEGER NOT NULL DEFAULT 0,
	warnings      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX todos_open ON todos(due) WHERE done = 0;
CREATE INDEX todos_uid ON todos(calendar_id, uid);
CREATE INDEX todos_file ON todos(file_id);
CREATE VIRTUAL TABLE todos_fts USING fts5(
	summary, description, categories,
	content='todos', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER todos_ai AFTER INSERT ON todos BEGIN
	INSERT INTO todos_fts(rowid, summary, description, categories) VALUES (new.id, new.summary, new.description, new.categories);
END;
CREATE TRIGGER todos_ad AFTER DELETE ON todos BEGIN
	INSERT INTO todos_fts(todos_fts, rowid, summary, description, categories) VALUES ('delete', old.id, old.summary, old.description, old.categories);
END;
UPDATE files SET mtime = -1 WHERE id NOT IN (SELECT DISTINCT file_id FROM events);`,
	// The hidden versions are warnings of their files (Store.Warnings,
	// read from the superseded mark each time, so they go when it does):
	// found by index, not by a scan of every event per agenda.
	`CREATE INDEX events_superseded ON events(file_id) WHERE superseded = 1;`,
}}

// Options configure a Store.
type Options struct {
	DBPath string
	// Floating is the zone of times without a zone and of all-day events
	// (the user's zone). Changing it needs a re-import.
	Floating *time.Location
	Logger   *slog.Logger
	Now      func() time.Time
}

// Store is the calendar index.
type Store struct {
	db       *store.DB
	floating *time.Location
	log      *slog.Logger
	now      func() time.Time

	// zmu guards zones, a cache of loaded locations: time.LoadLocation
	// reads the zoneinfo file on every call, which dominated agenda time.
	zmu   sync.Mutex
	zones map[string]*time.Location

	snap snapState
}

// zone returns the location of an event's Zone, cached.
func (s *Store) zone(name string) *time.Location {
	if name == "" || name == "floating" {
		return s.floating
	}
	s.zmu.Lock()
	defer s.zmu.Unlock()
	if loc, ok := s.zones[name]; ok {
		return loc
	}
	loc := LoadZone(name, s.floating)
	if len(s.zones) < 1000 {
		s.zones[name] = loc
	}
	return loc
}

// Open opens (creating and migrating) calendar.db.
func Open(ctx context.Context, o Options) (*Store, error) {
	db, err := store.Open(ctx, o.DBPath, Schema)
	if err != nil {
		return nil, err
	}
	if o.Floating == nil {
		o.Floating = time.Local
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{db: db, floating: o.Floating, log: o.Logger, now: o.Now, zones: map[string]*time.Location{}}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	s.stopSnapshot()
	return s.db.Close()
}

// Floating is the zone used for floating times and all-day events.
func (s *Store) Floating() *time.Location { return s.floating }

// ErrReadOnly is returned for writes to a calendar marked read-only.
var ErrReadOnly = errors.New("calendar is read-only")

// Calendar is one configured collection.
type Calendar struct {
	ID       int64  `json:"-"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only"`
	Color    string `json:"color,omitempty"`
	Events   int    `json:"events"`
	// Todos counts the to-dos (masters), so a task list shows as one.
	Todos   int `json:"todos"`
	Skipped int `json:"skipped"`
}

// Calendars lists the known calendars with their event counts.
func (s *Store) Calendars(ctx context.Context) ([]Calendar, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.id, c.name, c.path, c.read_only, c.color,
		(SELECT count(*) FROM events e WHERE e.calendar_id = c.id AND e.superseded = 0),
		(SELECT count(DISTINCT t.uid) FROM todos t WHERE t.calendar_id = c.id AND t.recurrence_id IS NULL),
		(SELECT count(*) FROM files f WHERE f.calendar_id = c.id AND f.error != '')
		FROM calendars c ORDER BY c.name`)
	if err != nil {
		return nil, fmt.Errorf("listing calendars: %w", err)
	}
	defer rows.Close()
	var out []Calendar
	for rows.Next() {
		var c Calendar
		if err := rows.Scan(&c.ID, &c.Name, &c.Path, &c.ReadOnly, &c.Color, &c.Events, &c.Todos, &c.Skipped); err != nil {
			return nil, fmt.Errorf("listing calendars: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CalendarByName returns one calendar or store.ErrNotFound.
func (s *Store) CalendarByName(ctx context.Context, name string) (Calendar, error) {
	var c Calendar
	err := s.db.QueryRowContext(ctx, `SELECT id, name, path, read_only, color FROM calendars WHERE name = ?`, name).
		Scan(&c.ID, &c.Name, &c.Path, &c.ReadOnly, &c.Color)
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("calendar %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return c, fmt.Errorf("reading calendar %q: %w", name, err)
	}
	return c, nil
}

func (s *Store) ensureCalendar(ctx context.Context, name, path string, readOnly bool, color string) (int64, error) {
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO calendars(name, path, read_only, color) VALUES (?, ?, ?, ?)
		ON CONFLICT(name) DO UPDATE SET path = excluded.path, read_only = excluded.read_only, color = excluded.color
		RETURNING id`, name, path, readOnly, color).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("registering calendar %q: %w", name, err)
	}
	return id, nil
}

// indexer holds one write transaction's prepared statements: a batch of
// files is indexed with each statement prepared once, not once per file.
type indexer struct {
	s                              *Store
	upsertFile, dropEvents, insert *sql.Stmt
	insertInstance, fileUIDs       *sql.Stmt
	dropTodos, insertTodo          *sql.Stmt
	horizon                        horizon
}

func (s *Store) newIndexer(ctx context.Context, tx *sql.Tx) (*indexer, error) {
	ix := &indexer{s: s}
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = tx.PrepareContext(ctx, q)
		return st
	}
	ix.upsertFile = prep(`INSERT INTO files(calendar_id, name, mtime, size, error, warnings) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(calendar_id, name) DO UPDATE SET mtime = excluded.mtime, size = excluded.size, error = excluded.error, warnings = excluded.warnings
		RETURNING id`)
	ix.dropEvents = prep(`DELETE FROM events WHERE file_id = ?`)
	ix.insert = prep(`INSERT INTO events(file_id, calendar_id, uid, recurrence_id, summary, description, location,
		attendees, attendee_json, organizer, start, end, all_day, zone, status, transp, rrule, rdates, exdates, recurring, range_end, warnings, materialized,
		sequence, dtstamp)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
	ix.fileUIDs = prep(`SELECT DISTINCT uid FROM events WHERE file_id = ?`)
	ix.insertInstance = prep(`INSERT OR IGNORE INTO instances(event_id, start, end) VALUES (?, ?, ?)`)
	ix.dropTodos = prep(`DELETE FROM todos WHERE file_id = ?`)
	ix.insertTodo = prep(insertTodoSQL)
	if err != nil {
		ix.close()
		return nil, fmt.Errorf("preparing calendar index statements: %w", err)
	}
	if ix.horizon, err = readHorizon(ctx, tx); err != nil {
		ix.close()
		return nil, err
	}
	return ix, nil
}

func (ix *indexer) close() {
	for _, st := range []*sql.Stmt{ix.upsertFile, ix.dropEvents, ix.insert, ix.insertInstance, ix.fileUIDs, ix.dropTodos, ix.insertTodo} {
		if st != nil {
			st.Close()
		}
	}
}

// insertEvents writes one file's events. Times are stored as Unix seconds;
// all-day and floating events use the store's floating zone. Recurring
// masters get their instances inside the horizon materialized.
func (ix *indexer) insertEvents(ctx context.Context, calID, fileID int64, evs []Event) error {
	for i := range evs {
		e := &evs[i]
		var recID any
		if !e.RecurrenceID.IsZero() {
			recID = e.RecurrenceID.Unix()
		}
		att, _ := json.Marshal(e.Attendees)
		attText := ""
		for _, a := range e.Attendees {
			attText += a.Name + " " + a.Email + " "
		}
		org := ""
		if e.Organizer != nil {
			org = e.Organizer.Email
			attText += e.Organizer.Name + " " + e.Organizer.Email
		}
		var rangeEnd any
		recurring := e.Recurring() && e.RecurrenceID.IsZero()
		if recurring {
			if t, ok := seriesEnd(e); ok {
				rangeEnd = t.Unix()
			}
		}
		warn, _ := json.Marshal(e.Warnings)
		if len(e.Warnings) == 0 {
			warn = nil
		}
		r := row{calID: calID, uid: e.UID, start: e.Start.Unix(), end: e.End.Unix(), allDay: e.AllDay, zone: e.Zone,
			rule: e.RRule, rdates: unixList(e.RDates), exdates: unixList(e.ExDates), recurring: recurring}
		var occ []Interval
		materialized := false
		if recurring {
			occ, materialized = ix.expand(&r)
		}
		if err := ix.insert.QueryRowContext(ctx, fileID, calID, e.UID, recID, e.Summary, e.Description, e.Location,
			attText, string(att), org, r.start, r.end, e.AllDay, e.Zone, e.Status, e.Transp,
			e.RRule, r.rdates, r.exdates, recurring, rangeEnd, string(warn), materialized,
			e.Sequence, stampSeconds(e.Stamp)).Scan(&r.id); err != nil {
			return fmt.Errorf("inserting event %s: %w", e.UID, err)
		}
		if err := ix.store(ctx, r.id, occ); err != nil {
			return err
		}
	}
	return nil
}

// seriesEnd is the end of the last occurrence of a finite series (COUNT,
// UNTIL or RDATEs only); ok is false for series that never end.
func seriesEnd(e *Event) (time.Time, bool) {
	dur := e.End.Sub(e.Start)
	last := e.Start
	for _, r := range e.RDates {
		if r.After(last) {
			last = r
		}
	}
	if e.RRule == "" {
		return last.Add(dur + 24*time.Hour), true
	}
	// Several rules (joined by newlines) end when the last one does.
	for _, rule := range strings.Split(e.RRule, "\n") {
		end, ok := ruleEnd(e, rule, dur)
		if !ok {
			return time.Time{}, false
		}
		if end.After(last) {
			last = end
		}
	}
	return last.Add(dur + 24*time.Hour), true
}

// ruleEnd is the start of the last occurrence of one finite rule.
func ruleEnd(e *Event, rule string, dur time.Duration) (time.Time, bool) {
	last := e.Start
	opt, err := buildRule(rule, e.Start)
	if err != nil {
		return time.Time{}, false
	}
	switch {
	case !opt.Until.IsZero():
		if opt.Until.After(last) {
			last = opt.Until
		}
		return last, true
	case opt.Count > 0:
		s := Series{Start: e.Start, Duration: dur, AllDay: e.AllDay, Rule: rule}
		occ, trunc, err := s.Expand(e.Start, e.Start.AddDate(1000, 0, 0), opt.Count)
		if err != nil || trunc || len(occ) == 0 {
			return time.Time{}, false
		}
		if t := occ[len(occ)-1].Start; t.After(last) {
			last = t
		}
		return last, true
	}
	return time.Time{}, false
}

func unixList(ts []time.Time) string {
	if len(ts) == 0 {
		return "[]"
	}
	u := make([]int64, len(ts))
	for i, t := range ts {
		u[i] = t.Unix()
	}
	b, _ := json.Marshal(u)
	return string(b)
}

func timeList(s string, loc *time.Location) []time.Time {
	var u []int64
	if json.Unmarshal([]byte(s), &u) != nil {
		return nil
	}
	out := make([]time.Time, len(u))
	for i, v := range u {
		out[i] = time.Unix(v, 0).In(loc)
	}
	return out
}

// FileOf returns the vdir file name holding the event uid in a calendar:
// the one with its shown master when several files hold versions of it.
func (s *Store) FileOf(ctx context.Context, calendarName, uid string) (string, error) {
	var name string
	err := s.db.QueryRowContext(ctx, `SELECT f.name FROM events e JOIN files f ON f.id = e.file_id JOIN calendars c ON c.id = e.calendar_id
		WHERE c.name = ? AND e.uid = ? ORDER BY e.superseded, e.recurrence_id IS NOT NULL LIMIT 1`, calendarName, uid).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("event %q in calendar %q: %w", uid, calendarName, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("finding event %q: %w", uid, err)
	}
	return name, nil
}

// CalendarsOf lists the calendars holding an event uid.
func (s *Store) CalendarsOf(ctx context.Context, uid string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT c.name FROM events e JOIN calendars c ON c.id = e.calendar_id WHERE e.uid = ? ORDER BY c.name`, uid)
	if err != nil {
		return nil, fmt.Errorf("finding event %q: %w", uid, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// SummaryOf returns the summary of an event's master (for approval cards).
func (s *Store) SummaryOf(ctx context.Context, uid string) (string, error) {
	var sum string
	err := s.db.QueryRowContext(ctx, `SELECT summary FROM events WHERE uid = ? ORDER BY superseded, recurrence_id IS NOT NULL LIMIT 1`, uid).Scan(&sum)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("event %q: %w", uid, store.ErrNotFound)
	}
	return sum, err
}
