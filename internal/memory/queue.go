package memory

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the memory database: the promotion queue and the chat review
// marks of the proposer.
var Schema = store.Schema{Name: "memory", Migrations: []string{`
CREATE TABLE candidates (
	id         TEXT PRIMARY KEY,
	created_at INTEGER NOT NULL,
	source     TEXT NOT NULL,
	chat_id    TEXT NOT NULL DEFAULT '',
	model      TEXT NOT NULL DEFAULT '',
	target     TEXT NOT NULL,
	text       TEXT NOT NULL,
	confidence TEXT NOT NULL DEFAULT 'normal',
	warnings   TEXT NOT NULL DEFAULT '[]',
	status     TEXT NOT NULL DEFAULT 'pending',
	decided_at INTEGER NOT NULL DEFAULT 0,
	note       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX candidates_status ON candidates(status, created_at);
CREATE TABLE reviewed_chats (
	chat_id     TEXT PRIMARY KEY,
	reviewed_at INTEGER NOT NULL,
	last_seq    INTEGER NOT NULL
);
`}}

// Queue bounds.
const (
	MaxPending = 200
	MaxAge     = 30 * 24 * time.Hour
)

// Candidate statuses.
const (
	Pending  = "pending"
	Accepted = "accepted"
	Rejected = "rejected"
	Expired  = "expired"
)

// Candidate is one proposed durable fact.
type Candidate struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"created_at"`
	Source     string    `json:"source"` // compaction, idle, manual
	ChatID     string    `json:"chat_id,omitempty"`
	Model      string    `json:"model,omitempty"`
	Target     string    `json:"target"`
	Text       string    `json:"text"`
	Confidence string    `json:"confidence"` // low, normal, high
	Warnings   []string  `json:"warnings"`
	Status     string    `json:"status"`
	Note       string    `json:"note,omitempty"`
}

// Queue is the promotion queue. Nothing in it reaches the profile files
// until the user accepts it.
type Queue struct {
	db      *store.DB
	profile *Profile
	now     func() time.Time
}

// NewQueue returns the queue over db (opened with Schema).
func NewQueue(db *store.DB, p *Profile, now func() time.Time) *Queue {
	if now == nil {
		now = time.Now
	}
	return &Queue{db: db, profile: p, now: now}
}

// Profile is the profile the queue writes to.
func (q *Queue) Profile() *Profile { return q.profile }

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Enqueue adds candidates, annotated with warnings. Expired entries are
// swept first; when the queue is full the oldest pending entries make room
// (newer proposals reflect newer chats). Exact repeats of a pending text
// are dropped. It returns the stored candidates.
func (q *Queue) Enqueue(ctx context.Context, cs []Candidate) ([]Candidate, error) {
	if err := q.Expire(ctx); err != nil {
		return nil, err
	}
	var out []Candidate
	err := q.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, c := range cs {
			t, err := Target(c.Target)
			if err != nil {
				return err
			}
			c.Target = t
			c.Text = strings.TrimSpace(c.Text)
			if c.Text == "" || len([]rune(c.Text)) > 500 {
				continue // empty or not a short fact
			}
			switch c.Confidence {
			case "low", "normal", "high":
			default:
				c.Confidence = "normal"
			}
			var dup int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM candidates WHERE status = 'pending' AND target = ? AND text = ?`, c.Target, c.Text).Scan(&dup); err != nil {
				return err
			}
			if dup > 0 {
				continue
			}
			c.ID, c.CreatedAt, c.Status = newID(), q.now(), Pending
			c.Warnings = q.profile.Warnings(c.Target, c.Text)
			if c.Warnings == nil {
				c.Warnings = []string{}
			}
			w, _ := json.Marshal(c.Warnings)
			if _, err := tx.ExecContext(ctx, `INSERT INTO candidates (id, created_at, source, chat_id, model, target, text, confidence, warnings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.ID, c.CreatedAt.UnixMilli(), c.Source, c.ChatID, c.Model, c.Target, c.Text, c.Confidence, string(w)); err != nil {
				return err
			}
			out = append(out, c)
		}
		_, err := tx.ExecContext(ctx, `UPDATE candidates SET status = 'expired', decided_at = ?, note = 'queue full' WHERE id IN (
			SELECT id FROM candidates WHERE status = 'pending' ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)`, q.now().UnixMilli(), MaxPending)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queueing memory candidates: %w", err)
	}
	return out, nil
}

// Expire marks pending candidates older than MaxAge expired.
func (q *Queue) Expire(ctx context.Context) error {
	now := q.now()
	_, err := q.db.ExecContext(ctx, `UPDATE candidates SET status = 'expired', decided_at = ?, note = 'older than 30 days' WHERE status = 'pending' AND created_at < ?`,
		now.UnixMilli(), now.Add(-MaxAge).UnixMilli())
	return err
}

// List returns candidates with a status ("" = pending), newest first.
func (q *Queue) List(ctx context.Context, status string, limit int) ([]Candidate, error) {
	if err := q.Expire(ctx); err != nil {
		return nil, err
	}
	if status == "" {
		status = Pending
	}
	if limit <= 0 || limit > 500 {
		limit = MaxPending
	}
	rows, err := q.db.QueryContext(ctx, `SELECT id, created_at, source, chat_id, model, target, text, confidence, warnings, status, note
		FROM candidates WHERE status = ? ORDER BY created_at DESC, rowid DESC LIMIT ?`, status, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Candidate{}
	for rows.Next() {
		c, err := scanCandidate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func scanCandidate(sc interface{ Scan(...any) error }) (Candidate, error) {
	var c Candidate
	var at int64
	var w string
	if err := sc.Scan(&c.ID, &at, &c.Source, &c.ChatID, &c.Model, &c.Target, &c.Text, &c.Confidence, &w, &c.Status, &c.Note); err != nil {
		return c, err
	}
	c.CreatedAt = time.UnixMilli(at)
	_ = json.Unmarshal([]byte(w), &c.Warnings)
	return c, nil
}

// Get returns one candidate.
func (q *Queue) Get(ctx context.Context, id string) (Candidate, error) {
	c, err := scanCandidate(q.db.QueryRowContext(ctx, `SELECT id, created_at, source, chat_id, model, target, text, confidence, warnings, status, note FROM candidates WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return c, fmt.Errorf("%w: no memory candidate %q", store.ErrNotFound, id)
	}
	return c, err
}

// Accept writes a pending candidate (with the user's edited text when
// text is not empty) into its profile file and marks it accepted. If the
// write fails (duplicate, unsafe, over the limit) the candidate stays
// pending and the error says why.
func (q *Queue) Accept(ctx context.Context, id, text string) (Result, error) {
	c, err := q.Get(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if c.Status != Pending {
		return Result{}, fmt.Errorf("memory candidate %s is %s, not pending", id, c.Status)
	}
	if strings.TrimSpace(text) != "" {
		c.Text = strings.TrimSpace(text)
	}
	res, err := q.profile.Add(c.Target, c.Text)
	if err != nil {
		return Result{}, err
	}
	_, err = q.db.ExecContext(ctx, `UPDATE candidates SET status = 'accepted', text = ?, decided_at = ? WHERE id = ? AND status = 'pending'`, c.Text, q.now().UnixMilli(), id)
	return res, err
}

// Reject drops a pending candidate.
func (q *Queue) Reject(ctx context.Context, id string) error {
	c, err := q.Get(ctx, id)
	if err != nil {
		return err
	}
	if c.Status != Pending {
		return fmt.Errorf("memory candidate %s is %s, not pending", id, c.Status)
	}
	_, err = q.db.ExecContext(ctx, `UPDATE candidates SET status = 'rejected', decided_at = ? WHERE id = ? AND status = 'pending'`, q.now().UnixMilli(), id)
	return err
}
