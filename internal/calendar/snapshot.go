package calendar

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A snapshot is the horizon held in memory by a long-lived Store (the
// daemon): every instance inside the horizon — single events, overrides,
// materialized series — as compact records sorted by start, over prebuilt
// event values. An agenda inside the horizon is then a binary search and a
// copy, with no SQL rows scanned. It is tied to the database's generation
// counter (bumped by triggers on every change to events or the horizon, by
// any process), so a change made by `hestia cal import` is seen; a stale
// snapshot is never answered from: the SQL path answers while a fresh one
// is built in the background.
type snapshot struct {
	gen int64
	hz  horizon
	// occ holds the instances up to longEvent long, sorted by start; long
	// holds the longer ones (few), scanned whole.
	occ, long []socc
	evs       []sev
	// lazy are the recurring masters not materialized; they expand per
	// query as outside the horizon.
	lazy       []lazyRow
	overridden map[overrideKey]bool
}

type socc struct {
	start, end int64
	ev         int32
}

type sev struct {
	base  Instance
	calID int64
	// series is set for materialized masters (the per-series cap applies).
	series bool
}

type lazyRow struct {
	row
	rangeEnd sql.NullInt64
}

var errChangedMeanwhile = errors.New("calendar changed while the snapshot was read")

// snapState is a Store's snapshot machinery; the zero value is off.
type snapState struct {
	on       bool
	cur      atomic.Pointer[snapshot]
	building atomic.Bool
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
}

// KeepSnapshot makes the Store keep the horizon in memory (for a
// long-lived process; a CLI run answers from SQL). The first build happens
// in the background on the first agenda query, or now with WarmSnapshot.
func (s *Store) KeepSnapshot() {
	if s.snap.on {
		return
	}
	s.snap.on = true
	s.snap.ctx, s.snap.cancel = context.WithCancel(context.Background())
}

// WarmSnapshot builds the in-memory snapshot now (when KeepSnapshot is on).
func (s *Store) WarmSnapshot(ctx context.Context) error {
	if !s.snap.on {
		return errors.New("calendar snapshot is off")
	}
	sn, err := s.buildSnapshot(ctx)
	if err != nil {
		return err
	}
	s.snap.cur.Store(sn)
	return nil
}

func (s *Store) stopSnapshot() {
	if s.snap.cancel != nil {
		s.snap.cancel()
	}
	s.snap.wg.Wait()
}

func (s *Store) generation(ctx context.Context) (int64, error) {
	var g int64
	if err := s.db.QueryRowContext(ctx, `SELECT n FROM gen WHERE id = 1`).Scan(&g); err != nil {
		return 0, fmt.Errorf("reading calendar generation: %w", err)
	}
	return g, nil
}

// freshSnapshot returns the snapshot when it is current and covers the
// window; otherwise nil, starting a rebuild when it is stale.
func (s *Store) freshSnapshot(ctx context.Context, from, to int64) *snapshot {
	if !s.snap.on {
		return nil
	}
	gen, err := s.generation(ctx)
	if err != nil {
		return nil
	}
	sn := s.snap.cur.Load()
	if sn != nil && sn.gen == gen {
		if sn.hz.covers(from, to) {
			return sn
		}
		return nil
	}
	if s.snap.building.CompareAndSwap(false, true) {
		s.snap.wg.Add(1)
		go func() {
			defer s.snap.wg.Done()
			defer s.snap.building.Store(false)
			t0 := time.Now()
			sn, err := s.buildSnapshot(s.snap.ctx)
			if err != nil {
				switch {
				case errors.Is(err, errChangedMeanwhile):
					s.log.Debug("calendarSnapshot", "err", err) // the next query tries again
				case s.snap.ctx.Err() == nil:
					s.log.Warn("calendarSnapshot", "err", err)
				}
				return
			}
			s.snap.cur.Store(sn)
			s.log.Debug("calendarSnapshot", "instances", len(sn.occ)+len(sn.long), "took", time.Since(t0))
		}()
	}
	return nil
}

// buildSnapshot reads the horizon into memory. The generation is read
// before and after; a change in between discards the build (the next
// query starts another).
func (s *Store) buildSnapshot(ctx context.Context) (*snapshot, error) {
	gen, err := s.generation(ctx)
	if err != nil {
		return nil, err
	}
	hz, err := readHorizon(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if !hz.ok {
		return nil, errors.New("calendar horizon not built yet")
	}
	sn := &snapshot{gen: gen, hz: hz, overridden: map[overrideKey]bool{}}
	var pending []socc
	each := func(q string, args []any, fn func(r *row, extra []any) error, extra ...any) error {
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("reading calendar snapshot: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r row
			dst := []any{&r.id, &r.calID, &r.cal, &r.uid, &r.recID, &r.summary, &r.desc, &r.location, &r.attJSON, &r.organizer,
				&r.start, &r.end, &r.allDay, &r.zone, &r.status, &r.transp, &r.rule, &r.rdates, &r.exdates, &r.recurring, &r.warnings}
			if err := rows.Scan(append(dst, extra...)...); err != nil {
				return fmt.Errorf("reading calendar snapshot: %w", err)
			}
			if err := fn(&r, extra); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	add := func(r *row, series bool) int32 {
		sn.evs = append(sn.evs, sev{base: s.instance(r), calID: r.calID, series: series})
		return int32(len(sn.evs) - 1)
	}
	const sel = selectEvents
	// Single events and overrides overlapping the horizon.
	if err := each(sel+`e.recurring = 0 AND e.start < ? AND e.end >= ?`, []any{hz.to, hz.from}, func(r *row, _ []any) error {
		if r.recID.Valid {
			sn.overridden[overrideKey{r.calID, r.uid, r.recID.Int64}] = true
		}
		pending = append(pending, socc{r.start, r.end, add(r, false)})
		return nil
	}); err != nil {
		return nil, err
	}
	// Overrides outside the horizon can still cancel an instance inside it.
	if err := each(sel+`e.recurrence_id IS NOT NULL AND NOT (e.start < ? AND e.end >= ?)`, []any{hz.to, hz.from}, func(r *row, _ []any) error {
		sn.overridden[overrideKey{r.calID, r.uid, r.recID.Int64}] = true
		return nil
	}); err != nil {
		return nil, err
	}
	var rangeEnd sql.NullInt64
	if err := each(`SELECT `+rowCols+`, e.range_end FROM events e JOIN calendars c ON c.id = e.calendar_id WHERE e.superseded = 0 AND e.recurring = 1 AND e.materialized = 0`,
		nil, func(r *row, _ []any) error {
			sn.lazy = append(sn.lazy, lazyRow{row: *r, rangeEnd: rangeEnd})
			return nil
		}, &rangeEnd); err != nil {
		return nil, err
	}
	masters := map[int64]int32{}
	keys := map[int32]overrideKey{}
	if err := each(sel+`e.recurring = 1 AND e.materialized = 1`, nil, func(r *row, _ []any) error {
		i := add(r, true)
		masters[r.id] = i
		keys[i] = overrideKey{cal: r.calID, uid: r.uid}
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT event_id, start, end FROM instances`)
	if err != nil {
		return nil, fmt.Errorf("reading calendar snapshot: %w", err)
	}
	for rows.Next() {
		var id, st, en int64
		if err := rows.Scan(&id, &st, &en); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reading calendar snapshot: %w", err)
		}
		i, ok := masters[id]
		if !ok {
			continue
		}
		k := keys[i]
		k.recID = st
		if sn.overridden[k] {
			continue
		}
		pending = append(pending, socc{st, en, i})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading calendar snapshot: %w", err)
	}
	for _, o := range pending {
		if o.end-o.start > longEvent {
			sn.long = append(sn.long, o)
		} else {
			sn.occ = append(sn.occ, o)
		}
	}
	// In the agenda's own order, so a window from occ alone needs no sort.
	slices.SortFunc(sn.occ, func(a, b socc) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		x, y := &sn.evs[a.ev].base, &sn.evs[b.ev].base
		return cmp.Or(strings.Compare(x.Summary, y.Summary), strings.Compare(x.Calendar, y.Calendar), strings.Compare(x.UID, y.UID))
	})
	if after, err := s.generation(ctx); err != nil || after != gen {
		return nil, errors.Join(err, errChangedMeanwhile)
	}
	return sn, nil
}

// agenda collects the window's instances from the snapshot.
func (sn *snapshot) agenda(s *Store, q Query, from, to int64, cals map[int64]bool, keep func(Instance) bool) ([]Instance, bool) {
	maxPer := q.MaxPerSeries
	if maxPer <= 0 {
		maxPer = DefaultMaxInstances
	}
	var all []Instance
	truncated := false
	perSeries := map[int32]int{}
	take := func(o socc) {
		ev := &sn.evs[o.ev]
		if cals != nil && !cals[ev.calID] {
			return
		}
		if ev.series {
			if perSeries[o.ev]++; perSeries[o.ev] > maxPer {
				truncated = true
				return
			}
		}
		in := ev.base
		if ev.series {
			loc := in.Start.Location()
			in.Start, in.End = time.Unix(o.start, 0).In(loc), time.Unix(o.end, 0).In(loc)
		}
		if keep(in) {
			all = append(all, in)
		}
	}
	search := func(t int64) int {
		i, _ := slices.BinarySearchFunc(sn.occ, t, func(o socc, t int64) int {
			if o.start < t {
				return -1
			}
			return 1
		})
		return i
	}
	i, hi := search(from-longEvent-86400), search(to)
	all = make([]Instance, 0, hi-i+len(sn.long))
	for ; i < hi; i++ {
		if sn.occ[i].end >= from {
			take(sn.occ[i])
		}
	}
	for _, o := range sn.long {
		if o.start < to && o.end >= from {
			take(o)
		}
	}
	for i := range sn.lazy {
		r := &sn.lazy[i]
		if r.start >= to || (r.rangeEnd.Valid && r.rangeEnd.Int64 <= from) || (cals != nil && !cals[r.calID]) {
			continue
		}
		if s.expandInto(&r.row, q, sn.overridden, keep, &all) {
			truncated = true
		}
	}
	return all, truncated
}
