package mail

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/parse"
	"github.com/hestia-dev/hestia/internal/store"
)

// Body states: whether the mirror holds the whole message text.
const (
	BodyFull    = "full"
	BodyPartial = "partial"
	BodyNone    = "none"
)

// Item is one physical copy of a message handed to the mirror.
type Item struct {
	Account     string
	AccountKind string // "local" or "imap"
	Mailbox     string
	Role        string // optional; overrides name-based detection
	Path        string // unique key of this copy: a file path, "file#offset", an imap:// URL
	Mtime       int64
	Size        int64
	UID         uint32
	Raw         []byte
	Flags       parse.Flags
	// Partial marks a copy known to be incomplete (.partial.emlx, a
	// truncated fetch); the body state is then partial or none.
	Partial bool
	// FallbackDate is used when the Date header is missing or unparseable.
	FallbackDate time.Time
}

// prepared is an Item parsed outside any transaction.
type prepared struct {
	Item
	msg       *parse.Message
	identity  string
	bodyState string
	embedHash string
	// body is msg.Text as stored (bodyCodec.pack), packed here, outside
	// the write transaction.
	body any
	role string // the target mailbox's role, set in apply
	// contentHash fingerprints subject, sender and text (see contentHash).
	contentHash string
}

func (s *Store) prepare(it Item) (*prepared, error) {
	msg, err := parse.Parse(it.Raw, parse.Options{})
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", it.Path, err)
	}
	p := &prepared{Item: it, msg: msg, bodyState: BodyFull}
	if msg.Date.IsZero() {
		msg.Date = it.FallbackDate
	}
	if it.Partial {
		p.bodyState = BodyPartial
		if strings.TrimSpace(msg.Text) == "" {
			p.bodyState = BodyNone
		}
	}
	p.identity = Identity(msg)
	p.contentHash = contentHash(msg)
	p.embedHash = embedHash(msg.Subject, msg.Text, s.opts.EmbedMaxChars)
	if p.body, err = s.bodies.pack(msg.Text); err != nil {
		return nil, fmt.Errorf("storing %s: %w", it.Path, err)
	}
	for _, a := range msg.Attachments {
		if a.Data != nil {
			if err := s.blobs.put(a.SHA256, a.Data); err != nil {
				return nil, err
			}
		}
	}
	p.Raw = nil // parsed; do not hold the bytes through the batch
	return p, nil
}

// Identity is a message's stable logical identity: its RFC 5322
// Message-ID, else a surrogate from the hash of its raw bytes. The
// surrogate is content-based rather than path-based because Maildir file
// names change with every flag change and mbox offsets shift when earlier
// messages are removed; the bytes of a message do not.
func Identity(m *parse.Message) string {
	if id := strings.TrimSpace(m.MessageID); id != "" {
		return "mid:" + id
	}
	return "sha:" + m.RawSHA256[:32]
}

// contentHash fingerprints what a reader sees of a message, ignoring
// transport differences (Received lines, line endings, list tags on the
// subject), so the same message found twice is one message while two
// different messages under one Message-ID are told apart.
func contentHash(m *parse.Message) string {
	h := sha256.New()
	h.Write([]byte(NormalizeSubject(m.Subject)))
	h.Write([]byte{0})
	for _, a := range m.From {
		h.Write([]byte(strings.ToLower(a.Addr) + ","))
	}
	h.Write([]byte{0})
	h.Write([]byte(strings.Join(strings.Fields(m.Text), " ")))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func embedHash(subject, body string, max int) string {
	h := sha256.Sum256([]byte(EmbedText(subject, body, max)))
	// 64 bits tell a changed text from the old one (it is compared with
	// the embedding's hash of the same message only) at a quarter of the
	// bytes per row; rows written with the full 256 bits stay consistent.
	return hex.EncodeToString(h[:8])
}

// EmbedText is the source text of a message's vector: subject and the
// start of the body, capped at max characters.
func EmbedText(subject, body string, max int) string {
	r := []rune(body)
	if len(r) > max {
		r = r[:max]
	}
	return subject + "\n\n" + string(r)
}

func joinAddrs(as []parse.Address) string {
	parts := make([]string, 0, len(as))
	for _, a := range as {
		parts = append(parts, a.String())
	}
	return strings.Join(parts, ", ")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

var bodyRank = map[string]int{BodyNone: 0, BodyPartial: 1, BodyFull: 2}

// applyResult says what one ingest did.
type applyResult int

const (
	resultAdded applyResult = iota
	resultUpdated
)

// apply writes one prepared copy inside tx.
func (s *Store) apply(ctx context.Context, tx *txc, p *prepared, acc map[string]int64, mbs map[mailboxKey]mailboxInfo) (applyResult, error) {
	kind := p.AccountKind
	if kind == "" {
		kind = "local"
	}
	accID, err := s.accountID(ctx, tx, p.Account, kind)
	if err != nil {
		return 0, err
	}
	acc[p.Account] = accID
	mb, err := s.mailbox(ctx, tx, accID, p.Mailbox, p.Role)
	if err != nil {
		return 0, err
	}
	mbs[mailboxKey{accID, p.Mailbox}] = mb
	p.role = mb.role
	now := s.now().Unix()
	m := p.msg

	// A path that used to hold another message (a rewritten file) releases it.
	var prevMsg int64
	err = tx.QueryRowContext(ctx, `SELECT message_id FROM message_paths WHERE path = ?`, p.Path).Scan(&prevMsg)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("reading path %s: %w", p.Path, err)
	}

	var (
		id, curMailbox             int64
		curState, curRole, curHash string
		deleted                    sql.NullInt64
		result                     = resultUpdated
	)
	lookup := func() error {
		return tx.QueryRowContext(ctx, `SELECT m.id, coalesce(m.mailbox_id, 0), m.body_state, m.deleted_at, coalesce(b.role, ''), m.content_hash
		FROM messages m LEFT JOIN mailboxes b ON b.id = m.mailbox_id
		WHERE m.account_id = ? AND m.identity = ?`, accID, p.identity).Scan(&id, &curMailbox, &curState, &deleted, &curRole, &curHash)
	}
	err = lookup()
	if err == nil && curHash != "" && curHash != p.contentHash && curState == BodyFull && p.bodyState == BodyFull && strings.HasPrefix(p.identity, "mid:") {
		// Same Message-ID, different message (a reused or forged id, an
		// edited resend): keep this one too, under a content-qualified
		// identity, so neither hides the other from search.
		p.identity += "#" + p.contentHash
		err = lookup()
	}
	if err == nil && curHash == "" {
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET content_hash = ? WHERE id = ?`, p.contentHash, id); err != nil {
			return 0, fmt.Errorf("recording content hash of %d: %w", id, err)
		}
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		result = resultAdded
		id, err = s.insertMessage(ctx, tx, accID, mb.id, p, now)
		if err != nil {
			return 0, err
		}
	case err != nil:
		return 0, fmt.Errorf("looking up %s: %w", p.identity, err)
	default:
		// Known message: keep its thread (rule 1), let a more specific
		// mailbox win, refresh flags, upgrade an incomplete body.
		mailboxID := curMailbox
		if curMailbox == 0 || specificity(mb.role) > specificity(curRole) {
			mailboxID = mb.id
		}
		if _, err := tx.ExecContext(ctx, `UPDATE messages SET mailbox_id = ?, seen = ?, answered = ?, flagged = ?, draft = ?, deleted_at = NULL WHERE id = ?`,
			mailboxID, boolInt(p.Flags.Seen), boolInt(p.Flags.Answered), boolInt(p.Flags.Flagged), boolInt(p.Flags.Draft), id); err != nil {
			return 0, fmt.Errorf("updating message %d: %w", id, err)
		}
		if bodyRank[p.bodyState] > bodyRank[curState] {
			if !tx.fresh[id] {
				if err := tx.unindex(ctx, id); err != nil {
					return 0, err
				}
			}
			tx.queueIndex(id, ftsText{m.Subject, joinAddrs(m.From), joinAddrs(m.To), joinAddrs(m.Cc), m.Text})
			if _, err := tx.ExecContext(ctx, `UPDATE messages SET body = ?, body_state = ?, embed_hash = ?, subject = ?, from_addr = ?, to_addr = ?, cc_addr = ?, size = ?, content_hash = ? WHERE id = ?`,
				p.body, p.bodyState, p.embedHash, m.Subject, joinAddrs(m.From), joinAddrs(m.To), joinAddrs(m.Cc), m.Size, p.contentHash, id); err != nil {
				return 0, fmt.Errorf("upgrading body of %d: %w", id, err)
			}
			if err := s.insertAttachments(ctx, tx, id, m); err != nil {
				return 0, err
			}
		}
		if deleted.Valid {
			tx.revived = append(tx.revived, id)
			var thread int64
			tx.QueryRowContext(ctx, `SELECT coalesce(thread_id, 0) FROM messages WHERE id = ?`, id).Scan(&thread)
			if err := refreshThread(ctx, tx, thread); err != nil {
				return 0, err
			}
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO message_paths(path, message_id, mailbox_id, mtime, size, uid) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT(path) DO UPDATE SET message_id = excluded.message_id, mailbox_id = excluded.mailbox_id, mtime = excluded.mtime, size = excluded.size, uid = excluded.uid`,
		p.Path, id, mb.id, p.Mtime, p.Size, p.UID); err != nil {
		return 0, fmt.Errorf("recording path %s: %w", p.Path, err)
	}
	if prevMsg != 0 && prevMsg != id {
		if err := s.softDeleteOrphan(ctx, tx, prevMsg); err != nil {
			return 0, err
		}
	}
	return result, nil
}

func (s *Store) insertMessage(ctx context.Context, tx *txc, accID, mailboxID int64, p *prepared, now int64) (int64, error) {
	m := p.msg
	date := int64(0)
	if !m.Date.IsZero() {
		date = m.Date.Unix()
	}
	thread, err := resolveThread(ctx, tx, accID, m, date, p.role)
	if err != nil {
		return 0, err
	}
	inReplyTo := ""
	if len(m.InReplyTo) > 0 {
		inReplyTo = m.InReplyTo[0]
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO messages(account_id, identity, message_id, mailbox_id, thread_id, gm_thrid, in_reply_to,
		subject, from_addr, to_addr, cc_addr, date, size, seen, answered, flagged, draft, has_attachments, body, body_state, embed_hash, problems, ingested_at, reply_to, content_hash)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		accID, p.identity, m.MessageID, mailboxID, thread, m.GmailThreadID, inReplyTo,
		m.Subject, joinAddrs(m.From), joinAddrs(m.To), joinAddrs(m.Cc), date, m.Size,
		boolInt(p.Flags.Seen), boolInt(p.Flags.Answered), boolInt(p.Flags.Flagged), boolInt(p.Flags.Draft),
		boolInt(len(m.Attachments) > 0), p.body, p.bodyState, p.embedHash, strings.Join(m.Problems, "\n"), now, joinAddrs(m.ReplyTo), p.contentHash)
	if err != nil {
		return 0, fmt.Errorf("inserting message %s: %w", p.identity, err)
	}
	id, _ := res.LastInsertId()
	tx.fresh[id] = true
	tx.queueIndex(id, ftsText{m.Subject, joinAddrs(m.From), joinAddrs(m.To), joinAddrs(m.Cc), m.Text})
	refs := append(append([]string(nil), m.InReplyTo...), m.References...)
	for i, r := range refs {
		if i >= maxRefs {
			break
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO message_refs(message_id, ref) VALUES (?, ?)`, id, r); err != nil {
			return 0, fmt.Errorf("recording references: %w", err)
		}
	}
	if err := s.insertAttachments(ctx, tx, id, m); err != nil {
		return 0, err
	}
	if err := addParticipants(ctx, tx, thread, m); err != nil {
		return 0, err
	}
	if err := refreshThread(ctx, tx, thread); err != nil {
		return 0, err
	}
	return id, nil
}

func (s *Store) insertAttachments(ctx context.Context, tx *txc, id int64, m *parse.Message) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM attachments WHERE message_id = ?`, id); err != nil {
		return fmt.Errorf("replacing attachments: %w", err)
	}
	for i, a := range m.Attachments {
		if _, err := tx.ExecContext(ctx, `INSERT INTO attachments(message_id, idx, filename, content_type, size, sha256, stored) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			id, i, a.Filename, a.ContentType, a.Size, a.SHA256, boolInt(a.Data != nil)); err != nil {
			return fmt.Errorf("recording attachment: %w", err)
		}
	}
	return nil
}

// RemovePaths forgets physical copies (vanished files, expunged UIDs) and
// soft-deletes every message left without a path. It returns how many
// messages were soft-deleted.
func (s *Store) RemovePaths(ctx context.Context, paths []string) (int, error) {
	deleted := 0
	for start := 0; start < len(paths); start += 500 {
		end := min(start+500, len(paths))
		var gone, revived []int64
		err := s.db.Tx(ctx, func(stx *sql.Tx) error {
			tx := newTxc(stx)
			defer tx.close()
			defer func() { gone, revived = tx.gone, tx.revived }()
			for _, p := range paths[start:end] {
				var msg int64
				err := tx.QueryRowContext(ctx, `DELETE FROM message_paths WHERE path = ? RETURNING message_id`, p).Scan(&msg)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					return fmt.Errorf("removing path %s: %w", p, err)
				}
				var n int
				tx.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE id = ? AND deleted_at IS NULL`, msg).Scan(&n)
				if err := s.softDeleteOrphan(ctx, tx, msg); err != nil {
					return err
				}
				var still int
				tx.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE id = ? AND deleted_at IS NULL`, msg).Scan(&still)
				deleted += n - still
			}
			return nil
		})
		if err != nil {
			return deleted, err
		}
		if err := s.followDeletions(ctx, gone, revived); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// followDeletions brings the loaded vector index in line with messages a
// committed transaction soft-deleted (their vectors leave it, so they no
// longer take places among the nearest) or brought back (their stored
// vectors return).
func (s *Store) followDeletions(ctx context.Context, gone, revived []int64) error {
	s.vecMu.Lock()
	idx := s.vec
	s.vecMu.Unlock()
	if idx == nil || len(gone)+len(revived) == 0 {
		return nil
	}
	for _, id := range gone {
		idx.Delete(id)
	}
	for start := 0; start < len(revived); start += 500 {
		ids := revived[start:min(start+500, len(revived))]
		args := make([]any, len(ids))
		for i, id := range ids {
			args[i] = id
		}
		rows, err := s.db.QueryContext(ctx, `SELECT e.message_id, e.vector FROM embeddings e JOIN messages m ON m.id = e.message_id
			WHERE e.message_id IN (`+placeholders(len(ids))+`) AND m.deleted_at IS NULL`, args...)
		if err != nil {
			return fmt.Errorf("reloading vectors: %w", err)
		}
		for rows.Next() {
			var id int64
			var blob []byte
			if err := rows.Scan(&id, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("reloading vectors: %w", err)
			}
			idx.PutEncoded(id, blob) // a damaged one stays out, as at load
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("reloading vectors: %w", err)
		}
	}
	return nil
}

// softDeleteOrphan marks msg deleted when no path remains, and otherwise
// moves it to the most specific mailbox that still holds it.
func (s *Store) softDeleteOrphan(ctx context.Context, tx *txc, msg int64) error {
	var mailbox int64
	err := tx.QueryRowContext(ctx, `SELECT p.mailbox_id FROM message_paths p JOIN mailboxes b ON b.id = p.mailbox_id
		WHERE p.message_id = ? ORDER BY CASE b.role WHEN 'all' THEN 1 ELSE 0 END, p.rowid LIMIT 1`, msg).Scan(&mailbox)
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE messages SET mailbox_id = ? WHERE id = ?`, mailbox, msg)
		return err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("checking paths of %d: %w", msg, err)
	}
	var thread int64
	if err := tx.QueryRowContext(ctx, `UPDATE messages SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL RETURNING coalesce(thread_id, 0)`, s.now().Unix(), msg).Scan(&thread); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("soft-deleting %d: %w", msg, err)
	}
	tx.gone = append(tx.gone, msg)
	return refreshThread(ctx, tx, thread)
}

// SetFlags updates the flags of the message one path belongs to (an IMAP
// flag change without new content).
func (s *Store) SetFlags(ctx context.Context, path string, f parse.Flags) error {
	res, err := s.db.ExecContext(ctx, `UPDATE messages SET seen = ?, answered = ?, flagged = ?, draft = ?
		WHERE id = (SELECT message_id FROM message_paths WHERE path = ?)`,
		boolInt(f.Seen), boolInt(f.Answered), boolInt(f.Flagged), boolInt(f.Draft), path)
	if err != nil {
		return fmt.Errorf("setting flags of %s: %w", path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("path %s: %w", path, store.ErrNotFound)
	}
	return nil
}

// IngestResult counts what a batch did.
type IngestResult struct {
	Added, Updated, Failed int
	Errors                 []error // the first few failures
}

// Ingest parses and stores items in one transaction. A message that cannot
// be parsed is counted and skipped; it does not fail the batch.
func (s *Store) Ingest(ctx context.Context, items []Item) (IngestResult, error) {
	var res IngestResult
	preps := make([]*prepared, 0, len(items))
	for _, it := range items {
		p, err := s.prepare(it)
		if err != nil {
			res.Failed++
			if len(res.Errors) < 5 {
				res.Errors = append(res.Errors, err)
			}
			continue
		}
		preps = append(preps, p)
	}
	r, err := s.applyBatch(ctx, preps)
	res.Added, res.Updated = r.Added, r.Updated
	return res, err
}

func (s *Store) applyBatch(ctx context.Context, preps []*prepared) (IngestResult, error) {
	var res IngestResult
	if len(preps) == 0 {
		return res, nil
	}
	acc := map[string]int64{}
	mbs := map[mailboxKey]mailboxInfo{}
	var gone, revived []int64
	err := s.db.Tx(ctx, func(stx *sql.Tx) error {
		tx := newTxc(stx)
		defer tx.close()
		defer func() { gone, revived = tx.gone, tx.revived }()
		res = IngestResult{}
		// A larger page cache for the writing connection: index inserts
		// into a big mirror otherwise turn into one pread per page. 8 MiB
		// imported 100k messages as fast as 32 MiB did, with ~45 MB less
		// peak RSS.
		if _, err := tx.ExecContext(ctx, `PRAGMA cache_size = -8192`); err != nil {
			return fmt.Errorf("sizing page cache: %w", err)
		}
		for _, p := range preps {
			r, err := s.apply(ctx, tx, p, acc, mbs)
			if err != nil {
				return err
			}
			if r == resultAdded {
				res.Added++
			} else {
				res.Updated++
			}
		}
		return tx.indexPending(ctx)
	})
	if err != nil {
		return IngestResult{}, err
	}
	s.cache(acc, mbs)
	return res, s.followDeletions(ctx, gone, revived)
}
