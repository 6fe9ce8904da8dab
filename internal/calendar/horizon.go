package calendar

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The horizon is the span around today whose recurring instances are
// materialized in the instances table at index time, so agenda and
// availability queries inside it read rows instead of expanding every
// open-ended series per query. Outside it (and for series that would not
// fit, or whose instances are longer than a week) expansion stays lazy.
const (
	horizonBackMonths  = 12
	horizonAheadMonths = 25
	// materializeCap bounds the instances one series may store; a series
	// with more (an hourly rule) stays lazy.
	materializeCap = 5000
)

type horizon struct {
	from, to int64
	ok       bool
}

func (h horizon) covers(from, to int64) bool { return h.ok && from >= h.from && to <= h.to }

// horizonFor is the horizon for a day: from the first of the month a year
// back to the first of the month 25 months ahead (UTC), so it moves once a
// month and the instances table is rebuilt at most that often.
func horizonFor(now time.Time) horizon {
	y, m, _ := now.UTC().Date()
	first := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return horizon{from: first.AddDate(0, -horizonBackMonths, 0).Unix(), to: first.AddDate(0, horizonAheadMonths, 0).Unix(), ok: true}
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func readHorizon(ctx context.Context, q querier) (horizon, error) {
	var h horizon
	err := q.QueryRowContext(ctx, `SELECT from_ts, to_ts FROM horizon WHERE id = 1`).Scan(&h.from, &h.to)
	if errors.Is(err, sql.ErrNoRows) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("reading calendar horizon: %w", err)
	}
	h.ok = true
	return h, nil
}

// RefreshHorizon moves the materialized horizon to today's when the month
// changed (or it was never built), re-expanding every recurring series
// into it. Sync calls it, so the periodic reconcile keeps it current.
func (s *Store) RefreshHorizon(ctx context.Context) (bool, error) {
	want := horizonFor(s.now())
	have, err := readHorizon(ctx, s.db)
	if err != nil {
		return false, err
	}
	if have == want {
		return false, nil
	}
	err = s.db.Tx(ctx, func(tx *sql.Tx) error {
		if have, err = readHorizon(ctx, tx); err != nil || have == want {
			return err // another process moved it meanwhile
		}
		for _, q := range []string{`DELETE FROM instances`, `UPDATE events SET materialized = 0 WHERE materialized = 1`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("clearing calendar instances: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO horizon(id, from_ts, to_ts) VALUES (1, ?, ?)
			ON CONFLICT(id) DO UPDATE SET from_ts = excluded.from_ts, to_ts = excluded.to_ts`, want.from, want.to); err != nil {
			return fmt.Errorf("recording calendar horizon: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, calendar_id, uid, start, end, all_day, zone, rrule, rdates, exdates FROM events WHERE recurring = 1`)
		if err != nil {
			return fmt.Errorf("listing recurring events: %w", err)
		}
		var masters []row
		for rows.Next() {
			r := row{recurring: true}
			if err := rows.Scan(&r.id, &r.calID, &r.uid, &r.start, &r.end, &r.allDay, &r.zone, &r.rule, &r.rdates, &r.exdates); err != nil {
				rows.Close()
				return fmt.Errorf("listing recurring events: %w", err)
			}
			masters = append(masters, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("listing recurring events: %w", err)
		}
		ix, err := s.newIndexer(ctx, tx)
		if err != nil {
			return err
		}
		defer ix.close()
		mark, err := tx.PrepareContext(ctx, `UPDATE events SET materialized = 1 WHERE id = ?`)
		if err != nil {
			return fmt.Errorf("preparing calendar horizon update: %w", err)
		}
		defer mark.Close()
		for i := range masters {
			occ, ok := ix.expand(&masters[i])
			if !ok {
				continue
			}
			if err := ix.store(ctx, masters[i].id, occ); err != nil {
				return err
			}
			if _, err := mark.ExecContext(ctx, masters[i].id); err != nil {
				return fmt.Errorf("marking event %s: %w", masters[i].uid, err)
			}
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("moving the calendar horizon: %w", err)
	}
	s.log.Info("calendarHorizon", "from", time.Unix(want.from, 0).UTC().Format(time.DateOnly), "to", time.Unix(want.to, 0).UTC().Format(time.DateOnly))
	return true, nil
}

// expand returns a master's instances overlapping the horizon; ok is false
// when the series stays lazy (no horizon yet, instances longer than a
// week, more than materializeCap instances, a rule that fails).
func (ix *indexer) expand(r *row) ([]Interval, bool) {
	h := ix.horizon
	if !h.ok || r.end-r.start > longEvent {
		return nil, false
	}
	if r.start >= h.to {
		return nil, true
	}
	se := ix.s.series(r)
	occ, trunc, err := se.Expand(time.Unix(h.from, 0), time.Unix(h.to, 0), materializeCap)
	if err != nil || trunc {
		return nil, false
	}
	out := make([]Interval, len(occ))
	for i, o := range occ {
		out[i] = Interval{Start: o.Start, End: se.end(o.Start)}
	}
	return out, true
}

func (ix *indexer) store(ctx context.Context, eventID int64, occ []Interval) error {
	for _, o := range occ {
		if _, err := ix.insertInstance.ExecContext(ctx, eventID, o.Start.Unix(), o.End.Unix()); err != nil {
			return fmt.Errorf("storing calendar instance: %w", err)
		}
	}
	return nil
}
