package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// ThreadRef is a thread's identity and activity, for background jobs that
// walk threads most-recently-active first (mail → wiki promotion).
type ThreadRef struct {
	ID       int64
	Account  string
	LastAt   time.Time
	Messages int
}

// RecentThreads returns threads with live messages, newest activity first,
// starting after (lastAt, id) of the previous page (zero for the first).
func (s *Store) RecentThreads(ctx context.Context, beforeLastAt int64, beforeID int64, limit int) ([]ThreadRef, error) {
	if beforeLastAt == 0 {
		beforeLastAt, beforeID = 1<<62, 1<<62
	}
	rows, err := s.db.QueryContext(ctx, `SELECT t.id, a.name, t.last_at, t.message_count FROM threads t JOIN accounts a ON a.id = t.account_id
		WHERE (t.last_at < ? OR (t.last_at = ? AND t.id < ?)) AND t.message_count > 0
		ORDER BY t.last_at DESC, t.id DESC LIMIT ?`, beforeLastAt, beforeLastAt, beforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing threads: %w", err)
	}
	defer rows.Close()
	var out []ThreadRef
	for rows.Next() {
		var r ThreadRef
		var at int64
		if err := rows.Scan(&r.ID, &r.Account, &at, &r.Messages); err != nil {
			return nil, err
		}
		r.LastAt = time.Unix(at, 0)
		out = append(out, r)
	}
	return out, rows.Err()
}

// ThreadMessage is one message of a thread with its whole body.
type ThreadMessage struct {
	ID          int64
	MessageID   string
	Subject     string
	From        string
	To          string
	Date        time.Time
	Role        string // the mailbox role (inbox, sent, junk, trash, …)
	Body        string
	BodyState   string
	Attachments []Attachment
}

// maxThreadMessages bounds how many messages of one thread a job reads.
const maxThreadMessages = 50

// ThreadMessages returns a thread's live messages in date order (the
// newest maxThreadMessages when it is longer).
func (s *Store) ThreadMessages(ctx context.Context, threadID int64) ([]ThreadMessage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT * FROM (SELECT m.id, m.message_id, m.subject, m.from_addr, m.to_addr, m.date, COALESCE(b.role, ''), hestia_body(m.body), m.body_state
		FROM messages m LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.thread_id = ? AND m.deleted_at IS NULL ORDER BY m.date DESC, m.id DESC LIMIT ?) ORDER BY 6, 1`, threadID, maxThreadMessages)
	if err != nil {
		return nil, fmt.Errorf("reading thread %d: %w", threadID, err)
	}
	var out []ThreadMessage
	for rows.Next() {
		var m ThreadMessage
		var at int64
		if err := rows.Scan(&m.ID, &m.MessageID, &m.Subject, &m.From, &m.To, &at, &m.Role, &m.Body, &m.BodyState); err != nil {
			rows.Close()
			return nil, err
		}
		m.Date = time.Unix(at, 0).UTC()
		out = append(out, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("mail thread %d: %w", threadID, store.ErrNotFound)
	}
	for i := range out {
		a, err := s.attachments(ctx, out[i].ID)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		out[i].Attachments = a
	}
	return out, nil
}
