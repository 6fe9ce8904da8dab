package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DefaultTail is how many of the newest rows the daemon verifies at start.
const DefaultTail = 1000

// VerifyTail checks the newest n rows (all rows when n <= 0): each row's
// hash, each link between them, and the link of the oldest of them to the
// row before it. It is the cheap check the daemon runs at start; Verify
// walks everything. Count is the number of rows checked.
func (l *Log) VerifyTail(ctx context.Context, n int) (VerifyResult, error) {
	if n <= 0 {
		return l.Verify(ctx)
	}
	rows, err := l.db.QueryContext(ctx, `SELECT id, ts, type, chat_id, turn_id, tool, summary, data, prev_hash, hash
		FROM (SELECT * FROM events ORDER BY id DESC LIMIT ?) ORDER BY id`, n)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("reading audit events: %w", err)
	}
	defer rows.Close()
	var evs []Event
	for rows.Next() {
		e, err := scanEvent(rows)
		if err != nil {
			return VerifyResult{}, err
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return VerifyResult{}, fmt.Errorf("reading audit events: %w", err)
	}
	res := VerifyResult{OK: true, Count: int64(len(evs))}
	if len(evs) == 0 {
		return res, nil
	}
	// The link into the tail: the hash of the row just before it, or the
	// genesis value when the tail starts at the first row.
	prev := genesis
	err = l.db.QueryRowContext(ctx, `SELECT hash FROM events WHERE id < ? ORDER BY id DESC LIMIT 1`, evs[0].ID).Scan(&prev)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return VerifyResult{}, fmt.Errorf("reading audit events: %w", err)
	}
	for _, e := range evs {
		switch {
		case e.PrevHash != prev:
			res.OK, res.FirstBad, res.Problem = false, e.ID, fmt.Sprintf("event %d does not link to the event before it (a row was removed or reordered)", e.ID)
		case chainHash(e) != e.Hash:
			res.OK, res.FirstBad, res.Problem = false, e.ID, fmt.Sprintf("event %d was changed after it was written", e.ID)
		}
		if !res.OK {
			return res, nil
		}
		prev = e.Hash
	}
	return res, nil
}

// Anchor is the newest row at some moment. Kept outside the database (the
// daemon writes it to a file as rows are added), it catches what a keyless
// chain cannot: the newest rows deleted, or the whole chain recomputed.
type Anchor struct {
	ID   int64     `json:"id"`
	Hash string    `json:"hash"`
	At   time.Time `json:"at"`
}

// Head returns the anchor of the newest row (zero ID when empty).
func (l *Log) Head(ctx context.Context) (Anchor, error) {
	var a Anchor
	err := l.db.QueryRowContext(ctx, `SELECT id, hash FROM events ORDER BY id DESC LIMIT 1`).Scan(&a.ID, &a.Hash)
	if errors.Is(err, sql.ErrNoRows) {
		return Anchor{}, nil
	}
	if err != nil {
		return Anchor{}, fmt.Errorf("reading the newest audit event: %w", err)
	}
	return a, nil
}

// ErrAnchor is wrapped when the database no longer holds an anchored row.
var ErrAnchor = errors.New("audit trail does not match its anchor")

// CheckAnchor reports whether the anchored row is still there, unchanged.
func (l *Log) CheckAnchor(ctx context.Context, a Anchor) error {
	if a.ID == 0 {
		return nil
	}
	var hash string
	err := l.db.QueryRowContext(ctx, `SELECT hash FROM events WHERE id = ?`, a.ID).Scan(&hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%w: event %d (anchored %s) is gone: the newest events were deleted", ErrAnchor, a.ID, a.At.Format(time.RFC3339))
	case err != nil:
		return fmt.Errorf("reading audit event %d: %w", a.ID, err)
	case hash != a.Hash:
		return fmt.Errorf("%w: event %d has a different hash than anchored %s: the chain was rewritten", ErrAnchor, a.ID, a.At.Format(time.RFC3339))
	}
	return nil
}
