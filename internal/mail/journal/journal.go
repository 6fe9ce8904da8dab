// Package journal is the write journal for outgoing mail: every send,
// reply and scheduled send is recorded, with the outcome it should have,
// before SMTP runs; the SMTP result is recorded after; and a confirmation
// pass looks for the message in the account's Sent mailbox.
//
// Invariant: nothing in this package ever sends an operation twice. A
// crash after the "started" row is written leaves the row started; the
// confirmation pass then seeks evidence and eventually marks it
// needs_review, asking the user, because an unconfirmed send may still
// have gone out. Duplicate mail is worse than a send the user must redo.
package journal

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Kinds of operation.
const (
	KindSend     = "send"
	KindReply    = "reply"
	KindSchedule = "schedule"
)

// States. scheduled → started → sent | failed | unknown → confirmed | needs_review.
const (
	StateScheduled   = "scheduled"
	StateStarted     = "started"      // claimed; SMTP may or may not have run
	StateSent        = "sent"         // the SMTP server accepted the message
	StateFailed      = "failed"       // SMTP refused before accepting data
	StateUnknown     = "unknown"      // the connection broke around DATA: it may have gone out
	StateConfirmed   = "confirmed"    // found in the Sent mailbox
	StateNeedsReview = "needs_review" // no evidence after the allowed checks; never resent
	StateCancelled   = "cancelled"
)

// Schema is the journal database.
var Schema = store.Schema{
	Name: "mailops",
	Migrations: []string{`
CREATE TABLE ops (
	id            INTEGER PRIMARY KEY,
	kind          TEXT NOT NULL,
	account       TEXT NOT NULL,
	state         TEXT NOT NULL,
	draft         TEXT NOT NULL,
	message_id    TEXT NOT NULL,
	scheduled_for INTEGER,
	attempts      INTEGER NOT NULL DEFAULT 0,
	attempted_at  INTEGER,
	checks        INTEGER NOT NULL DEFAULT 0,
	result        TEXT NOT NULL DEFAULT '',
	error         TEXT NOT NULL DEFAULT '',
	evidence      TEXT NOT NULL DEFAULT '',
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
CREATE INDEX ops_state ON ops(state, scheduled_for);
`},
}

// Draft is the complete outgoing message. It is stored unredacted: a
// scheduled send needs all of it later (the audit copy is redacted).
type Draft struct {
	From       string   `json:"from"`
	To         []string `json:"to"`
	Cc         []string `json:"cc,omitempty"`
	Bcc        []string `json:"bcc,omitempty"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	InReplyTo  string   `json:"in_reply_to,omitempty"` // Message-ID of the message answered
	References []string `json:"references,omitempty"`
	// MessageID is assigned when the operation is recorded, so every
	// artefact of this operation (the sent copy, the Sent mailbox) carries it.
	MessageID string `json:"message_id,omitempty"`
}

// Validate names the first problem with a draft.
func (d Draft) Validate() error {
	if len(d.To)+len(d.Cc)+len(d.Bcc) == 0 {
		return errors.New("draft has no recipients")
	}
	for _, a := range append(append(append([]string{d.From}, d.To...), d.Cc...), d.Bcc...) {
		if !validAddr(a) {
			return fmt.Errorf("address %q is not a valid email address", a)
		}
	}
	if strings.ContainsAny(d.Subject, "\r\n") {
		return errors.New("subject must be one line")
	}
	if strings.TrimSpace(d.Subject) == "" && strings.TrimSpace(d.Body) == "" {
		return errors.New("draft has neither subject nor body")
	}
	if len(d.Body) > 1<<20 {
		return errors.New("body is larger than 1 MiB")
	}
	return nil
}

func validAddr(a string) bool {
	at := strings.LastIndexByte(a, '@')
	return at > 0 && at < len(a)-1 && !strings.ContainsAny(a, " \t\r\n<>,;\"")
}

// Op is one journaled operation.
type Op struct {
	ID           int64      `json:"id"`
	Kind         string     `json:"kind"`
	Account      string     `json:"account"`
	State        string     `json:"state"`
	Draft        Draft      `json:"draft"`
	MessageID    string     `json:"message_id"`
	ScheduledFor *time.Time `json:"scheduled_for,omitempty"`
	Attempts     int        `json:"attempts"`
	AttemptedAt  *time.Time `json:"attempted_at,omitempty"`
	Checks       int        `json:"checks"`
	Result       string     `json:"result,omitempty"`
	Error        string     `json:"error,omitempty"`
	Evidence     string     `json:"evidence,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	UpdatedAt    time.Time  `json:"updated_at"`
}

// Sender delivers one message (SMTP, plus an IMAP copy to Sent where the
// account wants one). It must return an *SendError classifying failures.
type Sender interface {
	Send(ctx context.Context, account string, d Draft, raw []byte) error
}

// SendError classifies a failed delivery. Delivered is "no" when the
// server certainly did not accept the message (refused at connect, auth,
// MAIL or RCPT), "maybe" when the failure happened during or after DATA.
type SendError struct {
	Delivered string // "no" or "maybe"
	Err       error
}

func (e *SendError) Error() string { return e.Err.Error() }
func (e *SendError) Unwrap() error { return e.Err }

// Finder looks for evidence of a sent message in the mirror.
type Finder interface {
	// FindSent returns ids of live messages in the account's Sent-role
	// mailboxes matching exp, dated within [from, to].
	FindSent(ctx context.Context, account string, exp Expected, from, to time.Time) ([]int64, error)
}

// Expected is the observable outcome a confirmation looks for.
type Expected struct {
	MessageID string
	Subject   string
	To, Cc    []string
	Body      string
	InReplyTo string
}

// ExpectedOf derives the expected outcome of a draft. Bcc recipients are
// not visible in a Sent copy and are not part of the evidence.
func ExpectedOf(d Draft) Expected {
	return Expected{MessageID: d.MessageID, Subject: d.Subject, To: d.To, Cc: d.Cc, Body: d.Body, InReplyTo: d.InReplyTo}
}

// Journal is the operations store.
type Journal struct {
	db  *store.DB
	log *slog.Logger
	now func() time.Time
	// Host names generated Message-IDs.
	host string
}

// Open opens the journal database.
func Open(ctx context.Context, path string, log *slog.Logger, now func() time.Time) (*Journal, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	return &Journal{db: db, log: log, now: now, host: "hestia.local"}, nil
}

// Close closes the database.
func (j *Journal) Close() error { return j.db.Close() }

func newMessageID(host string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b) + "@" + host
}

// Send journals and runs an immediate send or reply. The started row is
// committed before SMTP runs; its outcome is recorded after. A returned Op
// in state failed or unknown is not an error of Send itself.
func (j *Journal) Send(ctx context.Context, kind, account string, d Draft, s Sender) (Op, error) {
	if kind != KindSend && kind != KindReply {
		return Op{}, fmt.Errorf("kind %q is not send or reply", kind)
	}
	if kind == KindReply && d.InReplyTo == "" {
		return Op{}, errors.New("a reply needs the Message-ID of the message it answers")
	}
	if err := d.Validate(); err != nil {
		return Op{}, err
	}
	d.MessageID = newMessageID(j.host)
	now := j.now()
	id, err := j.insert(ctx, kind, account, StateStarted, d, nil, 1, &now)
	if err != nil {
		return Op{}, err
	}
	return j.run(ctx, id, account, d, now, s)
}

// Schedule journals a send to run at `at` (by SendDue).
func (j *Journal) Schedule(ctx context.Context, account string, d Draft, at time.Time) (Op, error) {
	if err := d.Validate(); err != nil {
		return Op{}, err
	}
	if at.Before(j.now().Add(-time.Minute)) {
		return Op{}, fmt.Errorf("scheduled time %s is in the past", at.Format(time.RFC3339))
	}
	d.MessageID = newMessageID(j.host)
	id, err := j.insert(ctx, KindSchedule, account, StateScheduled, d, &at, 0, nil)
	if err != nil {
		return Op{}, err
	}
	return j.Get(ctx, id)
}

// Cancel cancels a scheduled operation that has not been claimed.
func (j *Journal) Cancel(ctx context.Context, id int64) error {
	res, err := j.db.ExecContext(ctx, `UPDATE ops SET state = ?, updated_at = ? WHERE id = ? AND state = ?`, StateCancelled, j.now().Unix(), id, StateScheduled)
	if err != nil {
		return fmt.Errorf("cancelling operation %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("no scheduled operation %d: %w", id, store.ErrNotFound)
	}
	return nil
}

func (j *Journal) insert(ctx context.Context, kind, account, state string, d Draft, at *time.Time, attempts int, attempted *time.Time) (int64, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return 0, err
	}
	now := j.now().Unix()
	res, err := j.db.ExecContext(ctx, `INSERT INTO ops(kind, account, state, draft, message_id, scheduled_for, attempts, attempted_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, kind, account, state, string(raw), d.MessageID, unix(at), attempts, unix(attempted), now, now)
	if err != nil {
		return 0, fmt.Errorf("journaling %s: %w", kind, err)
	}
	return res.LastInsertId()
}

func unix(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.Unix()
}

// run performs the delivery of a claimed (started) operation and records
// the outcome. It is only ever called right after the claim.
func (j *Journal) run(ctx context.Context, id int64, account string, d Draft, at time.Time, s Sender) (Op, error) {
	raw, err := BuildMessage(d, at)
	state, result, msg := StateSent, "accepted by SMTP server", ""
	if err == nil {
		err = s.Send(ctx, account, d, raw)
	}
	if err != nil {
		state, result, msg = StateUnknown, "", err.Error()
		var se *SendError
		if errors.As(err, &se) && se.Delivered == "no" {
			state = StateFailed
		}
	}
	// The outcome is recorded even if the caller's context ended: the
	// message may have left, and the journal must say so.
	rctx := context.WithoutCancel(ctx)
	if _, uerr := j.db.ExecContext(rctx, `UPDATE ops SET state = ?, result = ?, error = ?, updated_at = ? WHERE id = ? AND state = ?`,
		state, result, msg, j.now().Unix(), id, StateStarted); uerr != nil {
		j.log.Error("mailJournalRecord", "op", id, "err", uerr)
		return Op{}, fmt.Errorf("recording result of operation %d: %w", id, uerr)
	}
	j.log.Info("mailSend", "op", id, "state", state)
	return j.Get(rctx, id)
}

// SendDue claims and sends every scheduled operation due by now, one at a
// time. The claim is one UPDATE that only a still-scheduled row can pass,
// so two processes never both send the same operation.
func (j *Journal) SendDue(ctx context.Context, s Sender) (int, error) {
	n := 0
	for n < 100 {
		now := j.now()
		var id int64
		var account, draft string
		err := j.db.QueryRowContext(ctx, `UPDATE ops SET state = ?, attempts = attempts + 1, attempted_at = ?, updated_at = ?
			WHERE id = (SELECT id FROM ops WHERE state = ? AND scheduled_for <= ? ORDER BY scheduled_for, id LIMIT 1) AND state = ?
			RETURNING id, account, draft`, StateStarted, now.Unix(), now.Unix(), StateScheduled, now.Unix(), StateScheduled).Scan(&id, &account, &draft)
		if errors.Is(err, sql.ErrNoRows) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("claiming scheduled mail: %w", err)
		}
		var d Draft
		if err := json.Unmarshal([]byte(draft), &d); err != nil {
			return n, fmt.Errorf("operation %d has a corrupt draft: %w", id, err)
		}
		if _, err := j.run(ctx, id, account, d, now, s); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ConfirmOptions bound a confirmation pass.
type ConfirmOptions struct {
	MaxChecks  int           // checks before needs_review (default 12)
	StaleAfter time.Duration // a started row this old lost its caller (default 60s)
}

// Confirm looks for evidence of up to 100 unconfirmed operations. It never
// sends: with exactly one match the operation is confirmed; otherwise its
// check count grows and at MaxChecks it becomes needs_review.
func (j *Journal) Confirm(ctx context.Context, f Finder, opts ConfirmOptions) (confirmed, review int, err error) {
	if opts.MaxChecks <= 0 {
		opts.MaxChecks = 12
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = time.Minute
	}
	now := j.now()
	ops, err := j.list(ctx, `WHERE state IN (?, ?, ?) OR (state = ? AND updated_at <= ?) ORDER BY id LIMIT 100`,
		StateSent, StateUnknown, StateFailed, StateStarted, now.Add(-opts.StaleAfter).Unix())
	if err != nil {
		return 0, 0, err
	}
	for _, op := range ops {
		at := op.CreatedAt
		if op.AttemptedAt != nil {
			at = *op.AttemptedAt
		}
		ids, ferr := f.FindSent(ctx, op.Account, ExpectedOf(op.Draft), at.Add(-time.Minute), at.Add(24*time.Hour))
		state, evidence := op.State, ""
		switch {
		case ferr != nil:
			evidence = "check failed: " + ferr.Error()
		case len(ids) == 1:
			state, evidence = StateConfirmed, fmt.Sprintf("found in Sent as mail message %d", ids[0])
		case len(ids) > 1:
			evidence = fmt.Sprintf("ambiguous: %d matching messages in Sent", len(ids))
		default:
			evidence = "not found in Sent"
		}
		checks := op.Checks + 1
		if state != StateConfirmed && checks >= opts.MaxChecks {
			state = StateNeedsReview
			evidence += "; needs review: check the Sent folder before sending again"
		}
		if _, err := j.db.ExecContext(ctx, `UPDATE ops SET state = ?, checks = ?, evidence = ?, updated_at = ? WHERE id = ? AND state = ?`,
			state, checks, evidence, now.Unix(), op.ID, op.State); err != nil {
			return confirmed, review, fmt.Errorf("recording confirmation of %d: %w", op.ID, err)
		}
		switch state {
		case StateConfirmed:
			confirmed++
		case StateNeedsReview:
			review++
		}
	}
	return confirmed, review, nil
}

// Get reads one operation.
func (j *Journal) Get(ctx context.Context, id int64) (Op, error) {
	ops, err := j.list(ctx, `WHERE id = ?`, id)
	if err != nil {
		return Op{}, err
	}
	if len(ops) == 0 {
		return Op{}, fmt.Errorf("mail operation %d: %w", id, store.ErrNotFound)
	}
	return ops[0], nil
}

// List returns the newest operations, optionally in one state.
func (j *Journal) List(ctx context.Context, state string, limit int) ([]Op, error) {
	if limit <= 0 || limit > 200 {
		limit = 50
	}
	return j.list(ctx, `WHERE (? = '' OR state = ?) ORDER BY id DESC LIMIT ?`, state, state, limit)
}

func (j *Journal) list(ctx context.Context, where string, args ...any) ([]Op, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT id, kind, account, state, draft, message_id, scheduled_for, attempts, attempted_at, checks, result, error, evidence, created_at, updated_at FROM ops `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("listing mail operations: %w", err)
	}
	defer rows.Close()
	out := []Op{}
	for rows.Next() {
		var op Op
		var draft string
		var sched, att sql.NullInt64
		var created, updated int64
		if err := rows.Scan(&op.ID, &op.Kind, &op.Account, &op.State, &draft, &op.MessageID, &sched, &op.Attempts, &att, &op.Checks, &op.Result, &op.Error, &op.Evidence, &created, &updated); err != nil {
			return nil, fmt.Errorf("listing mail operations: %w", err)
		}
		if err := json.Unmarshal([]byte(draft), &op.Draft); err != nil {
			return nil, fmt.Errorf("operation %d has a corrupt draft: %w", op.ID, err)
		}
		if sched.Valid {
			t := time.Unix(sched.Int64, 0).UTC()
			op.ScheduledFor = &t
		}
		if att.Valid {
			t := time.Unix(att.Int64, 0).UTC()
			op.AttemptedAt = &t
		}
		op.CreatedAt, op.UpdatedAt = time.Unix(created, 0).UTC(), time.Unix(updated, 0).UTC()
		out = append(out, op)
	}
	return out, rows.Err()
}
