package mail

import (
	"context"
	"fmt"
)

// The mirror's counts and id ranges other components read (the Mail
// page, watches, the Action Center): only this package writes SQL against
// mail.db.

// MailboxCount is one mailbox with its live and unread message counts.
type MailboxCount struct {
	Account  string `json:"account"`
	Name     string `json:"name"`
	Role     string `json:"role,omitempty"`
	Messages int    `json:"messages"`
	Unread   int    `json:"unread"`
}

// MailboxCounts lists every mailbox (by account, then name) with counts
// of the live (not deleted) messages it holds a copy of; never nil.
func (s *Store) MailboxCounts(ctx context.Context) ([]MailboxCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT a.name, b.name, b.role,
		count(DISTINCT msg.id), count(DISTINCT CASE WHEN msg.seen = 0 THEN msg.id END)
		FROM mailboxes b JOIN accounts a ON a.id = b.account_id
		LEFT JOIN message_paths p ON p.mailbox_id = b.id
		LEFT JOIN messages msg ON msg.id = p.message_id AND msg.id NOT IN (SELECT id FROM messages WHERE deleted_at IS NOT NULL)
		GROUP BY b.id ORDER BY a.name, b.name`)
	if err != nil {
		return nil, fmt.Errorf("counting mailboxes: %w", err)
	}
	defer rows.Close()
	out := []MailboxCount{}
	for rows.Next() {
		var c MailboxCount
		if err := rows.Scan(&c.Account, &c.Name, &c.Role, &c.Messages, &c.Unread); err != nil {
			return nil, fmt.Errorf("counting mailboxes: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// ThreadCounts returns the message count of each of threads that exists;
// never nil.
func (s *Store) ThreadCounts(ctx context.Context, threads []int64) (map[int64]int, error) {
	out := map[int64]int{}
	if len(threads) == 0 {
		return out, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, message_count FROM threads WHERE id IN (SELECT value FROM json_each(?))`, idList(threads))
	if err != nil {
		return nil, fmt.Errorf("counting threads: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("counting threads: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counting threads: %w", err)
	}
	return out, nil
}

// MaxID is the highest message id the mirror has given (deleted messages
// included; 0 when empty): new mail gets higher ones, so a reader keeps it
// as its cursor. Lower than a kept cursor means the mirror was rebuilt.
func (s *Store) MaxID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading the newest message id: %w", err)
	}
	return id, nil
}

// NewMessage is a live message past a cursor: its id and its mailbox's
// role ("" when none).
type NewMessage struct {
	ID   int64
	Role string
}

// NewMessages lists up to limit live messages with ids above after, in id
// order.
func (s *Store) NewMessages(ctx context.Context, after int64, limit int) ([]NewMessage, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("listing new mail: limit %d is not positive", limit)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT m.id, coalesce(b.role, '') FROM messages m LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.id > ? AND m.deleted_at IS NULL ORDER BY m.id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("listing new mail: %w", err)
	}
	defer rows.Close()
	var out []NewMessage
	for rows.Next() {
		var m NewMessage
		if err := rows.Scan(&m.ID, &m.Role); err != nil {
			return nil, fmt.Errorf("listing new mail: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing new mail: %w", err)
	}
	return out, nil
}
