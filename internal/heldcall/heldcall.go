// Package heldcall keeps background tool calls that wait for the user's
// approval durable across daemon restarts.
//
// A user job's gated call and a watch's call outside its grants wait for
// the user with no expiry. The approval broker keeps requests in memory, so
// without this package a restart lost them. Here every such call is a row
// (heldcalls.db) written before the card is shown: waiting → running →
// done / failed, or denied; a call caught running when the daemon stopped
// becomes unknown and is never retried (it may have happened). At start the
// waiting calls are asked again; approved, a call moves waiting → running
// in one conditional update before it runs, so two approvals (the turn's
// card and a re-asked one, or two daemons' worth of retries) can never run
// it twice.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// background calls waiting for the user, made durable (`heldcalls.db`): a user job's gated call
// (the agent's `Deps.Held`, background turns only) and a watch's call outside its grants are
// recorded before their card, waiting → running → done/failed, or denied; a call still waiting
// when its turn ends or the daemon restarts is asked again (no expiry), the policy is re-checked
// after approval, and it runs only after one conditional waiting → running update, so it runs at
// most once; one caught running by a crash becomes unknown and is never retried; the outcome is
// noted in the call's chat; `GET /api/held-calls[?state=]` lists them.
package heldcall

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hestia-dev/hestia/internal/authority"
	"log/slog"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/taint"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Schema is the held-calls database.
var Schema = store.Schema{
	Name: "heldcalls",
	Migrations: []string{`
CREATE TABLE calls (
	key        TEXT PRIMARY KEY,
	origin     TEXT NOT NULL,
	chat_id    TEXT NOT NULL DEFAULT '',
	tool       TEXT NOT NULL,
	args       TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	state      TEXT NOT NULL,
	result     TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX calls_state ON calls(state);
`, `
ALTER TABLE calls ADD COLUMN tainted_by TEXT NOT NULL DEFAULT '';
`},
}

// States of a held call.
const (
	StateWaiting = "waiting"
	StateRunning = "running"
	StateDone    = "done"
	StateFailed  = "failed"
	StateDenied  = "denied"
	StateUnknown = "unknown" // running when the daemon stopped: maybe done
)

// Call is one held call.
type Call struct {
	Key string `json:"key"`
	// Origin says what proposed it: "job:NAME", "watch:ID".
	Origin string          `json:"origin"`
	ChatID string          `json:"chat_id,omitempty"`
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Reason string          `json:"reason,omitempty"`
	// TaintedBy names the outside content the proposing turn had read; the
	// re-asked card shows it as the first one did.
	TaintedBy []taint.Source `json:"tainted_by,omitempty"`
	State     string         `json:"state"`
	Result    string         `json:"result,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// Options configure a Queue.
type Options struct {
	Log *slog.Logger
	Now func() time.Time
	// Authority asks about and runs a call asked again (internal/authority):
	// the policy as it is now decides (a deny rule added while the call
	// waited wins), the card always shows, and the call's taint stays.
	Authority *authority.Authority
	// Finished is told about a call this queue ran or closed after asking
	// again (the turn that proposed it is gone): the app notes it in the
	// call's chat.
	Finished func(ctx context.Context, c Call)
	// ToolTimeout bounds one run (default 2 minutes).
	ToolTimeout time.Duration
}

// Queue is the durable store of held calls and the asker of the ones no
// turn waits for any more.
type Queue struct {
	db   *store.DB
	opts Options
	log  *slog.Logger

	mu     sync.Mutex // guards the fields below
	life   context.Context
	asking map[string]bool
	wg     sync.WaitGroup
}

// Open opens (creating) the database at path.
func Open(ctx context.Context, path string, o Options) (*Queue, error) {
	db, err := store.Open(ctx, path, Schema)
	if err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ToolTimeout <= 0 {
		o.ToolTimeout = 2 * time.Minute
	}
	return &Queue{db: db, opts: o, log: o.Log, asking: map[string]bool{}}, nil
}

// Close waits for calls in flight and closes the database.
func (q *Queue) Close() error {
	q.wg.Wait()
	return q.db.Close()
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// Hold records a call waiting for approval before its card is shown. A key
// seen before is not recorded again (inserted is false): the first record
// and its state stand.
func (q *Queue) Hold(ctx context.Context, c Call) (inserted bool, err error) {
	if c.Key == "" || c.Tool == "" {
		return false, errors.New("a held call needs a key and a tool")
	}
	if len(c.Args) == 0 {
		c.Args = json.RawMessage(`{}`)
	}
	now := ms(q.opts.Now())
	tainted := ""
	if len(c.TaintedBy) > 0 {
		b, _ := json.Marshal(c.TaintedBy)
		tainted = string(b)
	}
	res, err := q.db.ExecContext(ctx, `INSERT INTO calls (key, origin, chat_id, tool, args, reason, tainted_by, state, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		c.Key, c.Origin, c.ChatID, c.Tool, string(c.Args), clip(c.Reason, 1000), tainted, StateWaiting, now, now)
	if err != nil {
		return false, fmt.Errorf("holding %s: %w", c.Tool, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Begin moves a waiting call to running. It is the single gate before a
// held call runs: false means it is not waiting any more (it ran, was
// denied, or another approval took it) and must not run.
func (q *Queue) Begin(ctx context.Context, key string) (bool, error) {
	res, err := q.db.ExecContext(ctx, `UPDATE calls SET state = ?, updated_at = ? WHERE key = ? AND state = ?`, StateRunning, ms(q.opts.Now()), key, StateWaiting)
	if err != nil {
		return false, fmt.Errorf("starting held call %s: %w", key, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Finish records how a call ended (done, failed or denied).
func (q *Queue) Finish(ctx context.Context, key, state, result string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := q.db.ExecContext(ctx, `UPDATE calls SET state = ?, result = ?, updated_at = ? WHERE key = ? AND state IN (?, ?)`,
		state, clip(result, 2000), ms(q.opts.Now()), key, StateWaiting, StateRunning); err != nil {
		return fmt.Errorf("finishing held call %s: %w", key, err)
	}
	return nil
}

// Get returns one call.
func (q *Queue) Get(ctx context.Context, key string) (Call, error) {
	row := q.db.QueryRowContext(ctx, `SELECT key, origin, chat_id, tool, args, reason, tainted_by, state, result, created_at, updated_at FROM calls WHERE key = ?`, key)
	c, err := scan(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Call{}, fmt.Errorf("held call %s: %w", key, store.ErrNotFound)
	}
	return c, err
}

// List returns calls in one state ("" for all), newest first, at most 200.
func (q *Queue) List(ctx context.Context, state string) ([]Call, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT key, origin, chat_id, tool, args, reason, tainted_by, state, result, created_at, updated_at FROM calls
		WHERE ? = '' OR state = ? ORDER BY created_at DESC, key LIMIT 200`, state, state)
	if err != nil {
		return nil, fmt.Errorf("listing held calls: %w", err)
	}
	defer rows.Close()
	out := []Call{}
	for rows.Next() {
		c, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func scan(sc interface{ Scan(...any) error }) (Call, error) {
	var c Call
	var args, tainted string
	var created, updated int64
	if err := sc.Scan(&c.Key, &c.Origin, &c.ChatID, &c.Tool, &args, &c.Reason, &tainted, &c.State, &c.Result, &created, &updated); err != nil {
		return Call{}, err
	}
	if tainted != "" {
		json.Unmarshal([]byte(tainted), &c.TaintedBy)
	}
	c.Args = json.RawMessage(args)
	c.CreatedAt, c.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return c, nil
}

// Run is the daemon worker: calls a previous process left running are
// marked unknown (never retried), the waiting ones are asked again, and
// asks started later (Adopt) live until ctx ends.
func (q *Queue) Run(ctx context.Context) error {
	q.mu.Lock()
	q.life = ctx
	q.mu.Unlock()
	if err := q.Resume(ctx); err != nil && ctx.Err() == nil {
		q.log.Error("heldResume", "err", err)
	}
	<-ctx.Done()
	q.wg.Wait()
	return nil
}

// Resume closes calls caught running and asks the waiting ones again.
func (q *Queue) Resume(ctx context.Context) error {
	if _, err := q.db.ExecContext(ctx, `UPDATE calls SET state = ?, result = 'the daemon stopped while it ran: it may or may not have happened, so it is not run again', updated_at = ? WHERE state = ?`,
		StateUnknown, ms(q.opts.Now()), StateRunning); err != nil {
		return fmt.Errorf("closing held calls left running: %w", err)
	}
	waiting, err := q.List(ctx, StateWaiting)
	if err != nil {
		return err
	}
	for i := len(waiting) - 1; i >= 0; i-- { // oldest card first
		q.Adopt(waiting[i].Key)
	}
	return nil
}

// Adopt asks the user about a waiting call no turn waits for any more
// (the turn ended, or the daemon restarted). It does nothing when the
// queue is not running or the call is already being asked.
func (q *Queue) Adopt(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.life == nil || q.life.Err() != nil || q.asking[key] {
		return
	}
	q.asking[key] = true
	q.wg.Add(1)
	go func(ctx context.Context) {
		defer func() {
			q.mu.Lock()
			delete(q.asking, key)
			q.mu.Unlock()
			q.wg.Done()
		}()
		if err := q.ask(ctx, key); err != nil && ctx.Err() == nil {
			q.log.Warn("heldAsk", "key", key, "err", err)
		}
	}(q.life)
}

func (q *Queue) ask(ctx context.Context, key string) error {
	c, err := q.Get(ctx, key)
	if err != nil || c.State != StateWaiting {
		return err
	}
	if q.opts.Authority == nil {
		return errors.New("held calls need the tool authority")
	}
	out := q.opts.Authority.Invoke(ctx, ResumeOrigin(c), authority.Call{ID: c.Key, Tool: c.Tool, Args: string(c.Args), Timeout: q.opts.ToolTimeout,
		Begin: func(ctx context.Context) (bool, error) { return q.Begin(ctx, c.Key) }})
	switch out.Decision {
	case authority.Blocked:
		if out.Why == authority.WhyUnknown {
			return q.close(ctx, c, StateFailed, fmt.Sprintf("%s is no longer available: not run", c.Tool))
		}
		return q.close(ctx, c, StateDenied, "refused by the policy now in force: "+out.Policy.Reason)
	case authority.Invalid:
		return q.close(ctx, c, StateFailed, "its arguments are no longer valid: "+out.ArgErr.Error())
	case authority.Denied, authority.Revise:
		msg := "the user denied it: not run"
		if out.Note != "" {
			msg += " (" + out.Note + ")"
		}
		return q.close(ctx, c, StateDenied, msg)
	case authority.Approved, authority.Edited, authority.Allowed, authority.Granted:
	default:
		// Cancelled (the daemon is stopping), or taken by another card:
		// asked again at the next start if still waiting.
		return nil
	}
	if out.Err != nil && ctx.Err() != nil {
		// The daemon is stopping mid-run: it stays running, so the next
		// start marks it unknown instead of guessing.
		return nil
	}
	state, result := StateDone, out.Result.Content
	if out.Tool != nil {
		result = tools.Cap(result, out.Tool.Spec().MaxResultChars())
	}
	switch {
	case out.Err != nil:
		state, result = StateFailed, out.Err.Error()
	case out.Result.IsError:
		state = StateFailed
	}
	c.Args = out.Args
	return q.close(ctx, c, state, result)
}

func (q *Queue) close(ctx context.Context, c Call, state, result string) error {
	if err := q.Finish(ctx, c.Key, state, result); err != nil {
		return err
	}
	c.State, c.Result = state, clip(result, 2000)
	if q.opts.Finished != nil {
		q.opts.Finished(context.WithoutCancel(ctx), c)
	}
	return nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ResumeOrigin is a held call asked again, as the authority sees it: a
// background call that always shows its card and keeps the taint it was
// proposed under.
func ResumeOrigin(c Call) authority.Origin {
	return authority.Origin{Kind: authority.Held, ID: c.Origin, ChatID: c.ChatID, TurnID: c.Origin, Background: true, AlwaysAsk: true, Taint: c.TaintedBy,
		Label: fmt.Sprintf("%s (waiting since %s)", c.Origin, c.CreatedAt.Local().Format("Mon 2 Jan 15:04"))}
}
