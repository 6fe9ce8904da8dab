package calendar

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Versions of one event across the files of a collection.
//
// A collection may hold the same event (UID and RECURRENCE-ID) in more than
// one file: an invitation saved twice as it was updated, an imported copy
// beside the synced one. As within one file (latestVersions), the version
// with the highest SEQUENCE wins, then the latest DTSTAMP (RFC 5545
// §3.8.7.4); when both tie, the file modified last, then the greater file
// name, so the choice never depends on the order files were read in. Every
// version stays indexed and the losers are marked superseded, which every
// query leaves out: removing or downgrading the winning file brings the
// next version back at the following sync without reading the other files
// again. Each key is decided alone, as the iCalendar rule reads: an
// override in another file replaces its one instance only when it is
// newer than that instance's other overrides, whatever the masters say.

// stampSeconds is DTSTAMP as stored: Unix seconds, 0 when absent (older
// than any real stamp).
func stampSeconds(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// version is one indexed version of an event, as reconcileVersions reads
// it.
type version struct {
	id         int64
	uid        string
	recID      sql.NullInt64
	sequence   int64
	stamp      int64
	superseded bool
	mtime      int64
	file       string
}

// newerThan reports whether v supersedes w (same UID and RECURRENCE-ID,
// different files).
func (v *version) newerThan(w *version) bool {
	return cmp.Or(cmp.Compare(v.sequence, w.sequence), cmp.Compare(v.stamp, w.stamp),
		cmp.Compare(v.mtime, w.mtime), cmp.Compare(v.file, w.file)) > 0
}

// hiddenVersion is a version that a commit newly marked superseded, and
// the file holding the one that wins.
type hiddenVersion struct {
	version
	winner string
}

// reconcileVersions marks, among the versions of the given UIDs in one
// calendar, every one that a newer version in another file supersedes, and
// clears the mark of those that win again. Only the UIDs held by more than
// one file, or already marked, are read. It returns the versions it newly
// hid.
func reconcileVersions(ctx context.Context, tx *sql.Tx, calID int64, uids map[string]bool) ([]hiddenVersion, error) {
	if len(uids) == 0 {
		return nil, nil
	}
	list := make([]string, 0, len(uids))
	for u := range uids {
		list = append(list, u)
	}
	js, err := json.Marshal(list)
	if err != nil {
		return nil, fmt.Errorf("listing changed event UIDs: %w", err)
	}
	// CROSS JOIN keeps the UID list outside: each UID is one events_uid
	// lookup, never a scan of the calendar per UID.
	rows, err := tx.QueryContext(ctx, `SELECT e.id, e.uid, e.recurrence_id, e.sequence, e.dtstamp, e.superseded, f.mtime, f.name
		FROM json_each(?) j CROSS JOIN events e ON e.calendar_id = ? AND e.uid = j.value JOIN files f ON f.id = e.file_id
		WHERE (SELECT min(x.file_id) != max(x.file_id) OR max(x.superseded) FROM events x WHERE x.calendar_id = e.calendar_id AND x.uid = e.uid)`,
		string(js), calID)
	if err != nil {
		return nil, fmt.Errorf("reading event versions: %w", err)
	}
	type key struct {
		uid   string
		recID sql.NullInt64
	}
	var vs []version
	best := map[key]int{}
	for rows.Next() {
		var v version
		if err := rows.Scan(&v.id, &v.uid, &v.recID, &v.sequence, &v.stamp, &v.superseded, &v.mtime, &v.file); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading event versions: %w", err)
		}
		vs = append(vs, v)
		k := key{v.uid, v.recID}
		if b, ok := best[k]; !ok || v.newerThan(&vs[b]) {
			best[k] = len(vs) - 1
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading event versions: %w", err)
	}
	var hidden []hiddenVersion
	for i := range vs {
		v := &vs[i]
		win := best[key{v.uid, v.recID}]
		lose := win != i
		if lose == v.superseded {
			continue // only changes are written: each bumps the generation
		}
		if _, err := tx.ExecContext(ctx, `UPDATE events SET superseded = ? WHERE id = ?`, lose, v.id); err != nil {
			return nil, fmt.Errorf("marking superseded version of %s: %w", v.uid, err)
		}
		if lose {
			hidden = append(hidden, hiddenVersion{version: *v, winner: vs[win].file})
		}
	}
	return hidden, nil
}

// supersededCount is how many versions in a calendar a newer one hides.
func supersededCount(ctx context.Context, q querier, calID int64) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM events WHERE calendar_id = ? AND superseded = 1`, calID).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting superseded event versions: %w", err)
	}
	return n, nil
}

// problem names a hidden version as a warning of its file: kept indexed,
// not skipped, as a within-file older version is named.
func (h *hiddenVersion) problem() Problem {
	comp := "VEVENT " + h.uid
	if h.recID.Valid {
		comp += " (RECURRENCE-ID " + time.Unix(h.recID.Int64, 0).UTC().Format(time.RFC3339) + ")"
	}
	if h.winner == "" { // a mark left without a shown version: never written so
		return Problem{Component: comp, Reason: fmt.Sprintf("older version (SEQUENCE %d) hidden", h.sequence)}
	}
	return Problem{Component: comp,
		Reason: fmt.Sprintf("older version (SEQUENCE %d) hidden for the newer one in %s", h.sequence, h.winner)}
}

// hiddenProblems names every superseded version as a problem of its file,
// by files row, with the file whose version is shown now. They are read
// from the mark each time rather than stored beside a file's parse
// warnings: the mark is the one record of which version hides which, so
// a warning can never outlive it or name a winner that has since changed.
func (s *Store) hiddenProblems(ctx context.Context) (map[int64][]Problem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT e.file_id, e.uid, e.recurrence_id, e.sequence,
		coalesce((SELECT f.name FROM events w JOIN files f ON f.id = w.file_id
			WHERE w.calendar_id = e.calendar_id AND w.uid = e.uid AND w.recurrence_id IS e.recurrence_id AND w.superseded = 0
			ORDER BY f.name LIMIT 1), '')
		FROM events e WHERE e.superseded = 1 ORDER BY e.file_id, e.uid, e.recurrence_id`)
	if err != nil {
		return nil, fmt.Errorf("listing hidden event versions: %w", err)
	}
	defer rows.Close()
	out := map[int64][]Problem{}
	for rows.Next() {
		var fileID int64
		var h hiddenVersion
		if err := rows.Scan(&fileID, &h.uid, &h.recID, &h.sequence, &h.winner); err != nil {
			return nil, fmt.Errorf("listing hidden event versions: %w", err)
		}
		out[fileID] = append(out[fileID], h.problem())
	}
	return out, rows.Err()
}

// addFileUIDs adds the UIDs of the events indexed from a file to uids.
func (ix *indexer) addFileUIDs(ctx context.Context, fileID int64, uids map[string]bool) error {
	rows, err := ix.fileUIDs.QueryContext(ctx, fileID)
	if err != nil {
		return fmt.Errorf("listing events of a changed file: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		if err := rows.Scan(&u); err != nil {
			return fmt.Errorf("listing events of a changed file: %w", err)
		}
		uids[u] = true
	}
	return rows.Err()
}

// EventCopy is one indexed version of an event in a file of a calendar:
// its master or one override.
type EventCopy struct {
	File string
	// RecurrenceID is the original start of the instance an override
	// replaces; zero for the master.
	RecurrenceID time.Time
	AllDay       bool
	// Superseded is true when a newer version in another file hides it.
	Superseded bool
}

// CopiesOf lists every version of the event uid indexed in a calendar,
// hidden ones included, with the files holding them: the shown master
// first (its file is FileOf's answer), then by file and instance. A
// delete must reach all of them, or a hidden older version comes back.
func (s *Store) CopiesOf(ctx context.Context, calendarName, uid string) ([]EventCopy, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT f.name, e.recurrence_id, e.all_day, e.superseded
		FROM events e JOIN files f ON f.id = e.file_id JOIN calendars c ON c.id = e.calendar_id
		WHERE c.name = ? AND e.uid = ? ORDER BY e.superseded, e.recurrence_id IS NOT NULL, f.name, e.recurrence_id`, calendarName, uid)
	if err != nil {
		return nil, fmt.Errorf("listing copies of event %q: %w", uid, err)
	}
	defer rows.Close()
	var out []EventCopy
	for rows.Next() {
		var c EventCopy
		var rec sql.NullInt64
		if err := rows.Scan(&c.File, &rec, &c.AllDay, &c.Superseded); err != nil {
			return nil, fmt.Errorf("listing copies of event %q: %w", uid, err)
		}
		if rec.Valid {
			c.RecurrenceID = time.Unix(rec.Int64, 0).In(s.floating)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
