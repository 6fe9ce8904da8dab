package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// SyncState is what incremental IMAP sync remembers per mailbox.
type SyncState struct {
	UIDValidity uint32
	UIDNext     uint32
	ModSeq      uint64 // HIGHESTMODSEQ (RFC 7162) at the last sync; 0 without CONDSTORE
}

// MailboxState returns the stored sync state (zero when never synced).
func (s *Store) MailboxState(ctx context.Context, account, mailbox string) (SyncState, error) {
	var st SyncState
	err := s.db.QueryRowContext(ctx, `SELECT b.uidvalidity, b.uidnext, b.modseq FROM mailboxes b JOIN accounts a ON a.id = b.account_id
		WHERE a.name = ? AND b.name = ?`, account, mailbox).Scan(&st.UIDValidity, &st.UIDNext, &st.ModSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return SyncState{}, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading sync state of %s/%s: %w", account, mailbox, err)
	}
	return st, nil
}

// SetMailboxState records sync state, creating the mailbox with role.
func (s *Store) SetMailboxState(ctx context.Context, account, kind, mailbox, role string, st SyncState) error {
	acc := map[string]int64{}
	mbs := map[mailboxKey]mailboxInfo{}
	err := s.db.Tx(ctx, func(tx *sql.Tx) error {
		id, err := s.accountID(ctx, tx, account, kind)
		if err != nil {
			return err
		}
		acc[account] = id
		mb, err := s.mailbox(ctx, tx, id, mailbox, role)
		if err != nil {
			return err
		}
		mbs[mailboxKey{id, mailbox}] = mb
		_, err = tx.ExecContext(ctx, `UPDATE mailboxes SET uidvalidity = ?, uidnext = ?, modseq = ? WHERE id = ?`, st.UIDValidity, st.UIDNext, int64(st.ModSeq), mb.id)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording sync state of %s/%s: %w", account, mailbox, err)
	}
	s.cache(acc, mbs)
	return nil
}

// UIDEntry is one mirrored IMAP copy.
type UIDEntry struct {
	Path  string
	Flags parse.Flags
}

// MailboxUIDs lists the mirrored copies of one IMAP mailbox by UID.
func (s *Store) MailboxUIDs(ctx context.Context, account, mailbox string) (map[uint32]UIDEntry, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT p.uid, p.path, m.seen, m.answered, m.flagged, m.draft FROM message_paths p
		JOIN mailboxes b ON b.id = p.mailbox_id JOIN accounts a ON a.id = b.account_id JOIN messages m ON m.id = p.message_id
		WHERE a.name = ? AND b.name = ? AND p.uid > 0`, account, mailbox)
	if err != nil {
		return nil, fmt.Errorf("listing UIDs of %s/%s: %w", account, mailbox, err)
	}
	defer rows.Close()
	out := map[uint32]UIDEntry{}
	for rows.Next() {
		var uid uint32
		var e UIDEntry
		if err := rows.Scan(&uid, &e.Path, &e.Flags.Seen, &e.Flags.Answered, &e.Flags.Flagged, &e.Flags.Draft); err != nil {
			return nil, err
		}
		out[uid] = e
	}
	return out, rows.Err()
}

// Paths lists the physical copies of a message (files, mbox offsets, IMAP URLs).
func (s *Store) Paths(ctx context.Context, id int64) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT path FROM message_paths WHERE message_id = ? ORDER BY path`, id)
	if err != nil {
		return nil, fmt.Errorf("listing paths of %d: %w", id, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
