package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// maxRefs bounds the references recorded and consulted per message; long
// mailing-list chains carry hundreds.
const maxRefs = 50

// subjectWindow is the ±14 days within which a subject + participant match
// may join an existing thread.
const subjectWindow = 14 * 24 * 3600

var subjectPrefix = regexp.MustCompile(`(?i)^\s*((re|fwd?|aw|wg|sv|vs|antw|rif|r|tr|odp|res)(\[\d+\])?\s*[:：]|\[[^\]]{1,40}\])\s*`)

// NormalizeSubject strips reply/forward prefixes (in several languages) and
// mailing-list tags, lower-cases and collapses spaces, so "Re: [list] Fwd:
// Budget" and "budget" compare equal.
func NormalizeSubject(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i < 10; i++ {
		t := subjectPrefix.ReplaceAllString(s, "")
		if t == s {
			break
		}
		s = t
	}
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// resolveThread picks the thread of a new message, in falling order of
// confidence (rule 1, an existing identity, is handled by the caller):
// Gmail thread id; a stored message named by In-Reply-To/References; a
// stored message sharing one of those references (siblings under a missing
// parent); normalised subject plus a shared participant within ±14 days;
// else a new thread.
func resolveThread(ctx context.Context, tx *txc, account int64, m *parse.Message, date int64) (int64, error) {
	var thread int64
	found := func(err error) (bool, error) {
		if err == nil && thread != 0 {
			return true, nil
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("resolving thread: %w", err)
		}
		return false, nil
	}
	if m.GmailThreadID != "" {
		err := tx.QueryRowContext(ctx, `SELECT thread_id FROM messages WHERE account_id = ? AND gm_thrid = ? AND thread_id IS NOT NULL LIMIT 1`, account, m.GmailThreadID).Scan(&thread)
		if ok, err := found(err); ok || err != nil {
			return thread, err
		}
	}
	// In-Reply-To first, then References from the nearest ancestor back.
	refs := append([]string(nil), m.InReplyTo...)
	for i := len(m.References) - 1; i >= 0; i-- {
		refs = append(refs, m.References[i])
	}
	if len(refs) > maxRefs {
		refs = refs[:maxRefs]
	}
	for _, r := range refs {
		err := tx.QueryRowContext(ctx, `SELECT thread_id FROM messages WHERE account_id = ? AND message_id = ? AND thread_id IS NOT NULL LIMIT 1`, account, r).Scan(&thread)
		if ok, err := found(err); ok || err != nil {
			return thread, err
		}
	}
	for _, r := range refs {
		// CROSS JOIN pins the join order: start from the ref index, never
		// scan the account's messages (the planner otherwise may, via the
		// (account_id, identity) index, making import quadratic).
		err := tx.QueryRowContext(ctx, `SELECT m.thread_id FROM message_refs f CROSS JOIN messages m ON m.id = f.message_id
			WHERE f.ref = ? AND m.account_id = ? AND m.thread_id IS NOT NULL LIMIT 1`, r, account).Scan(&thread)
		if ok, err := found(err); ok || err != nil {
			return thread, err
		}
	}
	norm := NormalizeSubject(m.Subject)
	addrs := participants(m)
	if norm != "" && len(addrs) > 0 && date != 0 {
		q := `SELECT t.id FROM threads t JOIN thread_participants p ON p.thread_id = t.id
			WHERE t.account_id = ? AND t.norm_subject = ? AND t.message_count > 0
			AND t.first_at <= ? AND t.last_at >= ? AND p.addr IN (` + placeholders(len(addrs)) + `)
			ORDER BY t.last_at DESC LIMIT 1`
		args := []any{account, norm, date + subjectWindow, date - subjectWindow}
		for _, a := range addrs {
			args = append(args, a)
		}
		err := tx.QueryRowContext(ctx, q, args...).Scan(&thread)
		if ok, err := found(err); ok || err != nil {
			return thread, err
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO threads(account_id, norm_subject, first_at, last_at) VALUES (?, ?, ?, ?)`, account, norm, date, date)
	if err != nil {
		return 0, fmt.Errorf("creating thread: %w", err)
	}
	return res.LastInsertId()
}

// mergeChildren joins into thread the threads of stored messages that
// reference msgID. Import runs recent-first, so replies routinely arrive
// before the message they answer; without this they would stay apart.
func mergeChildren(ctx context.Context, tx *txc, account, thread int64, msgID string) error {
	if msgID == "" {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT m.thread_id FROM message_refs f CROSS JOIN messages m ON m.id = f.message_id
		WHERE f.ref = ? AND m.account_id = ? AND m.thread_id IS NOT NULL AND m.thread_id != ?`, msgID, account, thread)
	if err != nil {
		return fmt.Errorf("finding child threads: %w", err)
	}
	var others []int64
	for rows.Next() {
		var t int64
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		others = append(others, t)
	}
	rows.Close()
	for _, o := range others {
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET thread_id = ? WHERE thread_id = ?`, thread, o); err != nil {
			return fmt.Errorf("merging thread %d: %w", o, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO thread_participants(thread_id, addr) SELECT ?, addr FROM thread_participants WHERE thread_id = ?`, thread, o); err != nil {
			return fmt.Errorf("merging thread %d: %w", o, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, o); err != nil {
			return fmt.Errorf("merging thread %d: %w", o, err)
		}
	}
	return nil
}

func participants(m *parse.Message) []string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]parse.Address{m.From, m.To, m.Cc} {
		for _, a := range list {
			if a.Addr != "" && !seen[a.Addr] && len(out) < 20 {
				seen[a.Addr] = true
				out = append(out, a.Addr)
			}
		}
	}
	return out
}

func addParticipants(ctx context.Context, tx *txc, thread int64, m *parse.Message) error {
	for _, a := range participants(m) {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO thread_participants(thread_id, addr) VALUES (?, ?)`, thread, a); err != nil {
			return fmt.Errorf("recording participant: %w", err)
		}
	}
	return nil
}

// refreshThread recomputes a thread's activity window and live count.
func refreshThread(ctx context.Context, tx *txc, thread int64) error {
	if thread == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE threads SET
		first_at = coalesce((SELECT min(date) FROM messages WHERE thread_id = ?1 AND deleted_at IS NULL), first_at),
		last_at = coalesce((SELECT max(date) FROM messages WHERE thread_id = ?1 AND deleted_at IS NULL), last_at),
		message_count = (SELECT count(*) FROM messages WHERE thread_id = ?1 AND deleted_at IS NULL)
		WHERE id = ?1`, thread)
	if err != nil {
		return fmt.Errorf("refreshing thread %d: %w", thread, err)
	}
	return nil
}

func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?,", n-1) + "?"
}
