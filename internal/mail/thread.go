package mail

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// maxRefs bounds the references recorded and consulted per message; long
// mailing-list chains carry hundreds.
const maxRefs = 50

// subjectWindow is the ±14 days within which a subject + participant match
// may join an existing thread.
const subjectWindow = 14 * 24 * 3600

var subjectPrefix = lazyre.New(`(?i)^\s*((re|fwd?|aw|wg|sv|vs|antw|rif|r|tr|odp|res)(\[\d+\])?\s*[:：]|\[[^\]]{1,40}\])\s*`)

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

// resolveThread picks the thread of a new message. Threads are the
// connected components of the Message-ID graph: the new message joins every
// thread holding a message it names (In-Reply-To/References), a message
// that names it, or a message naming one of the same ids (siblings under a
// missing parent), plus any thread with its Gmail thread id; when that is
// several threads they are merged into the oldest. Union is order-free, so
// the result is the same for any import order. Only when nothing links it
// does the subject fallback run: the same real subject and a shared
// participant within ±14 days, never for generic subjects or junk.
// (Rule 1, an existing identity keeping its thread, is the caller's.)
func resolveThread(ctx context.Context, tx *txc, account int64, m *parse.Message, date int64, role string) (int64, error) {
	ids := make([]string, 0, 1+len(m.InReplyTo)+len(m.References))
	seenID := map[string]bool{}
	addID := func(id string) {
		if id != "" && !seenID[id] && len(ids) < maxRefs+1 {
			seenID[id] = true
			ids = append(ids, id)
		}
	}
	addID(m.MessageID)
	for _, r := range m.InReplyTo {
		addID(r)
	}
	for i := len(m.References) - 1; i >= 0; i-- { // nearest ancestors first
		addID(m.References[i])
	}
	threads := map[int64]bool{}
	collect := func(q string, args ...any) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("resolving thread: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var t int64
			if err := rows.Scan(&t); err != nil {
				return fmt.Errorf("resolving thread: %w", err)
			}
			threads[t] = true
		}
		return rows.Err()
	}
	if m.GmailThreadID != "" {
		if err := collect(`SELECT DISTINCT thread_id FROM messages WHERE account_id = ? AND gm_thrid = ? AND thread_id IS NOT NULL`, account, m.GmailThreadID); err != nil {
			return 0, err
		}
	}
	if len(ids) > 0 {
		args := []any{account}
		for _, id := range ids {
			args = append(args, id)
		}
		// Stored messages with one of these ids (parents, and earlier copies).
		if err := collect(`SELECT DISTINCT thread_id FROM messages WHERE account_id = ? AND thread_id IS NOT NULL AND message_id IN (`+placeholders(len(ids))+`)`, args...); err != nil {
			return 0, err
		}
		// Stored messages naming one of these ids (children, siblings).
		// CROSS JOIN pins the join order: start from the ref index, never
		// scan the account's messages.
		if err := collect(`SELECT DISTINCT m.thread_id FROM message_refs f CROSS JOIN messages m ON m.id = f.message_id
			WHERE f.ref IN (`+placeholders(len(ids))+`) AND m.account_id = ? AND m.thread_id IS NOT NULL`, append(args[1:len(args):len(args)], account)...); err != nil {
			return 0, err
		}
	}
	if len(threads) > 0 {
		var target int64
		for t := range threads {
			if target == 0 || t < target {
				target = t
			}
		}
		for t := range threads {
			if t != target {
				if err := mergeThread(ctx, tx, target, t); err != nil {
					return 0, err
				}
			}
		}
		return target, nil
	}
	norm := NormalizeSubject(m.Subject)
	addrs := participants(m)
	if role != RoleJunk && !GenericSubject(norm) && len(addrs) > 0 && date != 0 {
		// The candidate must hold some mail outside Junk: spam reusing a
		// real subject never pulls in the conversation it imitates.
		q := `SELECT t.id FROM threads t JOIN thread_participants p ON p.thread_id = t.id
			WHERE t.account_id = ? AND t.norm_subject = ? AND t.message_count > 0
			AND t.first_at <= ? AND t.last_at >= ? AND p.addr IN (` + placeholders(len(addrs)) + `)
			AND EXISTS (SELECT 1 FROM messages m2 JOIN mailboxes b ON b.id = m2.mailbox_id WHERE m2.thread_id = t.id AND b.role != 'junk')
			ORDER BY t.last_at DESC, t.id LIMIT 1`
		args := []any{account, norm, date + subjectWindow, date - subjectWindow}
		for _, a := range addrs {
			args = append(args, a)
		}
		var thread int64
		err := tx.QueryRowContext(ctx, q, args...).Scan(&thread)
		if err == nil && thread != 0 {
			return thread, nil
		}
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("resolving thread by subject: %w", err)
		}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO threads(account_id, norm_subject, first_at, last_at) VALUES (?, ?, ?, ?)`, account, norm, date, date)
	if err != nil {
		return 0, fmt.Errorf("creating thread: %w", err)
	}
	return res.LastInsertId()
}

// genericSubjects are subjects shared by unrelated mail; they never join
// threads by subject.
var genericSubjects = map[string]bool{
	"no subject": true, "(no subject)": true, "untitled": true, "(untitled)": true, "none": true, "(none)": true,
	"hi": true, "hello": true, "hey": true, "hallo": true, "ciao": true, "salut": true, "bonjour": true,
	"test": true, "testing": true, "question": true, "questions": true, "fyi": true, "info": true, "update": true,
	"thanks": true, "thank you": true, "re": true, "fwd": true, "important": true, "urgent": true,
	"(kein betreff)": true, "kein betreff": true, "(sans objet)": true, "sans objet": true,
	"(nessun oggetto)": true, "nessun oggetto": true, "(sin asunto)": true, "sin asunto": true,
}

// GenericSubject reports whether a normalised subject is empty, too short
// to identify a conversation, or one of the subjects unrelated mail shares.
func GenericSubject(norm string) bool {
	letters := 0
	for _, r := range norm {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			letters++
		}
	}
	return letters < 3 || genericSubjects[strings.Trim(norm, " .!?:-")]
}

// mergeThread moves every message and participant of thread from into
// thread into and drops the emptied thread row.
func mergeThread(ctx context.Context, tx *txc, into, from int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE messages SET thread_id = ? WHERE thread_id = ?`, into, from); err != nil {
		return fmt.Errorf("merging thread %d: %w", from, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO thread_participants(thread_id, addr) SELECT ?, addr FROM thread_participants WHERE thread_id = ?`, into, from); err != nil {
		return fmt.Errorf("merging thread %d: %w", from, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, from); err != nil {
		return fmt.Errorf("merging thread %d: %w", from, err)
	}
	return nil
}

func participants(m *parse.Message) []string {
	seen := map[string]bool{}
	var out []string
	for _, list := range [][]parse.Address{m.From, m.To, m.Cc} {
		for _, a := range list {
			addr := strings.ToLower(a.Addr)
			if addr != "" && !seen[addr] && len(out) < 20 {
				seen[addr] = true
				out = append(out, addr)
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
