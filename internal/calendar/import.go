package calendar

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hestia-dev/hestia/internal/ingest"
)

// Source is one vdir collection: a folder whose .ics files each hold one
// calendar object (an event with its overrides).
type Source struct {
	Name     string
	Path     string
	ReadOnly bool
	Color    string
}

// Skip names a file that could not be indexed and why.
type Skip struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// FileWarning is one component of an indexed file that was skipped or
// repaired (see ParseICSLenient); the rest of the file is indexed.
type FileWarning struct {
	Calendar string `json:"calendar,omitempty"`
	File     string `json:"file"`
	Problem
}

// SyncStats reports one reconcile of a source.
type SyncStats struct {
	Calendar  string `json:"calendar"`
	Files     int    `json:"files"`
	Added     int    `json:"added"`
	Updated   int    `json:"updated"`
	Removed   int    `json:"removed"`
	Unchanged int    `json:"unchanged"`
	Events    int    `json:"events"`
	// Todos counts the to-dos (VTODO) indexed from the files read.
	Todos   int    `json:"todos,omitempty"`
	Skipped []Skip `json:"skipped,omitempty"`
	// Warnings name the components skipped or repaired in files that were
	// otherwise indexed, and the versions this sync found superseded by a
	// newer one in another file (at most maxSkipsReported).
	Warnings []FileWarning `json:"warnings,omitempty"`
	// Superseded counts the versions of events in the collection hidden
	// after the sync because another file holds a newer version (see
	// versions.go).
	Superseded int `json:"superseded,omitempty"`
	// Remote reports the CalDAV mirror pass that preceded the sync, for
	// calendars mirrored from a server.
	Remote *RemoteStats `json:"remote,omitempty"`
}

// RemoteStats is what one CalDAV mirror pass did: how it listed the
// collection (unchanged ctag, sync-token report or full listing) and how
// many objects it downloaded, removed or left alone.
type RemoteStats struct {
	Mode      string `json:"mode"`
	Fetched   int    `json:"fetched"`
	Removed   int    `json:"removed"`
	Unchanged int    `json:"unchanged"`
}

// maxSkipsReported bounds the named skips a result carries; the count in
// Files/Added stays exact.
const maxSkipsReported = 100

// Collections expands a configured path: a folder holding .ics files is one
// collection; otherwise each sub-folder that holds them is one (khal's
// `path = ~/.calendars/*`), named parent/child.
func Collections(src Source) ([]Source, error) {
	ents, err := os.ReadDir(src.Path)
	if err != nil {
		return nil, fmt.Errorf("reading calendar folder %s: %w", src.Path, err)
	}
	var subs []Source
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(strings.ToLower(e.Name()), ".ics") {
			return []Source{src}, nil
		}
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			s := src
			s.Name, s.Path = src.Name+"/"+e.Name(), filepath.Join(src.Path, e.Name())
			subs = append(subs, s)
		}
	}
	if len(subs) == 0 {
		return []Source{src}, nil // an empty collection
	}
	return subs, nil
}

// Sync reconciles the index with a vdir collection: new and changed files
// (by size and mtime) are parsed, files gone from disk are dropped. Broken
// files are skipped with a named reason and counted; what was indexed from
// other files is kept.
func (s *Store) Sync(ctx context.Context, src Source) (SyncStats, error) {
	st := SyncStats{Calendar: src.Name}
	if src.Name == "" {
		return st, fmt.Errorf("calendar source %s has no name", src.Path)
	}
	ents, err := os.ReadDir(src.Path)
	if err != nil {
		return st, fmt.Errorf("reading calendar folder %s: %w", src.Path, err)
	}
	if _, err := s.RefreshHorizon(ctx); err != nil {
		return st, err
	}
	calID, err := s.ensureCalendar(ctx, src.Name, src.Path, src.ReadOnly, src.Color)
	if err != nil {
		return st, err
	}
	type known struct {
		id          int64
		mtime, size int64
	}
	have := map[string]known{}
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, mtime, size FROM files WHERE calendar_id = ?`, calID)
	if err != nil {
		return st, fmt.Errorf("listing indexed files: %w", err)
	}
	for rows.Next() {
		var k known
		var name string
		if err := rows.Scan(&k.id, &name, &k.mtime, &k.size); err != nil {
			rows.Close()
			return st, fmt.Errorf("listing indexed files: %w", err)
		}
		have[name] = k
	}
	rows.Close()

	var work []syncFile
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(name), ".ics") || strings.HasPrefix(name, ".") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // vanished between ReadDir and Info
		}
		st.Files++
		seen[name] = true
		k, ok := have[name]
		switch {
		case !ok:
			work = append(work, syncFile{name, fi.ModTime().UnixNano(), fi.Size(), 0})
			st.Added++
		case k.mtime != fi.ModTime().UnixNano() || k.size != fi.Size():
			work = append(work, syncFile{name, fi.ModTime().UnixNano(), fi.Size(), k.id})
			st.Updated++
		default:
			st.Unchanged++
		}
	}
	sort.Slice(work, func(i, j int) bool { return work[i].name < work[j].name })
	var gone []int64
	for name, k := range have {
		if !seen[name] {
			gone = append(gone, k.id)
			st.Removed++
		}
	}
	w := syncWriter{s: s, st: &st, src: src, calID: calID, gone: gone}
	// Reading and parsing are independent per file and dominate an
	// import; they run on every core while one writer commits.
	err = ingest.Pipeline[syncFile, parsedFile]{
		Parse: func(_ context.Context, f syncFile, emit func(parsedFile, int64) error) error {
			p := parsedFile{syncFile: f}
			data, err := readBounded(filepath.Join(src.Path, f.name))
			if err == nil {
				var o Objects
				o, err = ParseObjects(bytes.NewReader(data), s.floating)
				p.evs, p.todos, p.probs = o.Events, o.Todos, o.Problems
			}
			// A broken file is recorded with its reason, not skipped.
			p.err = err
			return emit(p, int64(len(data))+1)
		},
		Commit: w.commit,
		Limits: ingest.Limits{BatchSize: 500},
	}.Run(ctx, work)
	if err == nil && len(w.gone) > 0 { // nothing to parse, only removals
		err = w.commit(ctx, nil)
	}
	if err != nil {
		return st, err
	}
	if st.Superseded, err = supersededCount(ctx, s.db, calID); err != nil {
		return st, err
	}
	// Files reach the writer in the order they are parsed.
	slices.SortFunc(st.Skipped, func(a, b Skip) int { return strings.Compare(a.File, b.File) })
	slices.SortStableFunc(st.Warnings, func(a, b FileWarning) int { return strings.Compare(a.File, b.File) })
	if len(st.Skipped) > 0 {
		s.log.Warn("calendarFilesSkipped", "calendar", src.Name, "count", len(st.Skipped))
	}
	if len(st.Warnings) > 0 {
		s.log.Warn("calendarComponentsRepaired", "calendar", src.Name, "count", len(st.Warnings))
	}
	return st, nil
}

// syncFile is a file of a collection to (re)index: old is its files row
// when it was indexed before.
type syncFile struct {
	name        string
	mtime, size int64
	old         int64
}

// parsedFile is a syncFile read and parsed: its events, or why it could
// not be.
type parsedFile struct {
	syncFile
	evs   []Event
	todos []Todo
	probs []Problem
	err   error
}

// syncWriter commits one Sync's parsed files.
type syncWriter struct {
	s     *Store
	st    *SyncStats
	src   Source
	calID int64
	gone  []int64 // files rows whose files are gone, dropped by the first commit
}

// commit indexes one batch of parsed files (and drops the gone ones) in
// one transaction.
func (w *syncWriter) commit(ctx context.Context, batch []parsedFile) error {
	err := w.s.db.Tx(ctx, func(tx *sql.Tx) error {
		ix, err := w.s.newIndexer(ctx, tx)
		if err != nil {
			return err
		}
		defer ix.close()
		// The UIDs whose versions may have changed: those of the files
		// dropped or replaced, and those written.
		uids := map[string]bool{}
		for _, id := range w.gone {
			if err := ix.addFileUIDs(ctx, id, uids); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM files WHERE id = ?`, id); err != nil {
				return fmt.Errorf("dropping removed file: %w", err)
			}
		}
		for _, p := range batch {
			reason := ""
			if p.err != nil {
				reason = p.err.Error()
				if len(w.st.Skipped) < maxSkipsReported {
					w.st.Skipped = append(w.st.Skipped, Skip{File: p.name, Reason: reason})
				}
			}
			for _, pr := range p.probs {
				if len(w.st.Warnings) < maxSkipsReported {
					w.st.Warnings = append(w.st.Warnings, FileWarning{Calendar: w.src.Name, File: p.name, Problem: pr})
				}
			}
			probs := ""
			if len(p.probs) > 0 {
				b, _ := json.Marshal(p.probs)
				probs = string(b)
			}
			var fileID int64
			if err := ix.upsertFile.QueryRowContext(ctx, w.calID, p.name, p.mtime, p.size, reason, probs).Scan(&fileID); err != nil {
				return fmt.Errorf("recording file %s: %w", p.name, err)
			}
			if p.old != 0 {
				if err := ix.addFileUIDs(ctx, fileID, uids); err != nil {
					return err
				}
				if _, err := ix.dropEvents.ExecContext(ctx, fileID); err != nil {
					return fmt.Errorf("replacing events of %s: %w", p.name, err)
				}
				if _, err := ix.dropTodos.ExecContext(ctx, fileID); err != nil {
					return fmt.Errorf("replacing to-dos of %s: %w", p.name, err)
				}
			}
			if err := ix.insertEvents(ctx, w.calID, fileID, p.evs); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			if err := ix.insertTodos(ctx, w.calID, fileID, p.todos); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			w.st.Events += len(p.evs)
			w.st.Todos += len(p.todos)
			for i := range p.evs {
				uids[p.evs[i].UID] = true
			}
		}
		hidden, err := reconcileVersions(ctx, tx, w.calID, uids)
		if err != nil {
			return err
		}
		for _, h := range hidden {
			if len(w.st.Warnings) < maxSkipsReported {
				w.st.Warnings = append(w.st.Warnings, FileWarning{Calendar: w.src.Name, File: h.file, Problem: h.problem()})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.gone = nil
	return nil
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%w: file is %d bytes, the limit is %d", ErrMalformed, fi.Size(), MaxFileBytes)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Warnings lists the components skipped or repaired in indexed files, and
// the versions of events hidden by a newer one in another file (see
// versions.go), by calendar and file, at most limit (all when limit <= 0),
// and how many there are in all.
func (s *Store) Warnings(ctx context.Context, limit int) ([]FileWarning, int, error) {
	hidden, err := s.hiddenProblems(ctx)
	if err != nil {
		return nil, 0, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT f.id, c.name, f.name, f.warnings FROM files f JOIN calendars c ON c.id = f.calendar_id
		WHERE f.warnings != '' OR EXISTS (SELECT 1 FROM events e WHERE e.file_id = f.id AND e.superseded = 1)
		ORDER BY c.name, f.name`)
	if err != nil {
		return nil, 0, fmt.Errorf("listing calendar warnings: %w", err)
	}
	defer rows.Close()
	var out []FileWarning
	total := 0
	for rows.Next() {
		var id int64
		var cal, file, js string
		if err := rows.Scan(&id, &cal, &file, &js); err != nil {
			return nil, 0, fmt.Errorf("listing calendar warnings: %w", err)
		}
		var probs []Problem
		if js != "" {
			if err := json.Unmarshal([]byte(js), &probs); err != nil {
				return nil, 0, fmt.Errorf("reading warnings of %s/%s: %w", cal, file, err)
			}
		}
		for _, p := range append(probs, hidden[id]...) {
			total++
			if limit <= 0 || len(out) < limit {
				out = append(out, FileWarning{Calendar: cal, File: file, Problem: p})
			}
		}
	}
	return out, total, rows.Err()
}
