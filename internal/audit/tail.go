package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
