// Package actions is the Action Center: a background inbox of work that
// may need the user, found in new mail. A scan takes genuinely new message
// ids (the backlog present when the Action Center was first enabled is
// marked seen), drops what a deterministic prefilter knows is not work
// (junk, empty, no-reply senders, surveys), groups the rest by thread and
// makes one planner call per thread over its chronological messages: kind,
// priority, deadline, summary, proposed steps (tool calls with concrete
// arguments, or manual steps), confidence and a context snapshot. Progress
// is recorded per message, so a crash mid-scan keeps the finished threads.
//
// Items go new → read → done / dismissed; a closed item reopens only when
// a newer message arrives on its thread. Executing an item runs its tool
// steps through the normal policy; their approvals never time out and a
// step still waiting when the daemon stops is asked again after a restart.
// Flows are user-defined procedures created only through an approval card
// and retrieved (at most two) before planning.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// the Action Center (`actions.db`): enabling it marks the existing mail as seen; scans take new
// message ids, prefilter (junk, own, empty, no-reply, surveys), group by thread, one planner call
// per thread (kind, priority, deadline, summary, tool or manual steps, confidence, context);
// progress per message (a crash keeps finished threads); items new → read → done/dismissed,
// reopened by a newer message; a step may name only `mail_reply`, `mail_send` and the tools the
// retrieved flows declare (`flow_create`'s card lists them; the item records its step tools),
// anything else becomes a manual step; executing runs tool steps through the authority
// (`actions.StepOrigin`: limited to the item's step tools, tainted by the mail thread) with
// approvals that never expire, a step still waiting after a restart is asked again, one caught
// running is marked unknown; flows (created by the gated `flow_create`, ≤ 2 retrieved before
// planning by hybrid search: FTS5/BM25 over names and triggers (function words dropped) fused by
// RRF with embedding similarity through local-embed, a flow sharing no word with the mail
// retrieved at cosine ≥ 0.3, lexical only when the embedder fails); scans run as the scheduler's
// built-in job `actions.scan`; tools `actions_list`, `action_read`; `hestia actions list`.
package actions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Schema is the Action Center database.
var Schema = store.Schema{
	Name: "actions",
	Migrations: []string{`
CREATE TABLE items (
	id           INTEGER PRIMARY KEY,
	source       TEXT NOT NULL DEFAULT 'mail',
	thread_key   TEXT NOT NULL,
	kind         TEXT NOT NULL,
	priority     TEXT NOT NULL,
	deadline     INTEGER,
	summary      TEXT NOT NULL,
	steps        TEXT NOT NULL,
	confidence   REAL NOT NULL DEFAULT 0,
	context      TEXT NOT NULL DEFAULT '{}',
	state        TEXT NOT NULL,
	last_message INTEGER NOT NULL,
	chat_id      TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL
);
CREATE UNIQUE INDEX items_thread ON items(source, thread_key);
CREATE INDEX items_state ON items(state, updated_at);
CREATE TABLE seen (
	message_id INTEGER PRIMARY KEY,
	thread_key TEXT NOT NULL,
	state      TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	item_id    INTEGER,
	at         INTEGER NOT NULL
);
CREATE TABLE settings (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	enabled    INTEGER NOT NULL DEFAULT 0,
	language   TEXT NOT NULL DEFAULT 'en',
	watermark  INTEGER,
	activated  INTEGER
);
INSERT INTO settings (id) VALUES (1);
CREATE TABLE flows (
	id         INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	trigger    TEXT NOT NULL,
	procedure  TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
`, `
CREATE VIRTUAL TABLE flows_fts USING fts5(name, trigger, content='flows', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
INSERT INTO flows_fts (rowid, name, trigger) SELECT id, name, trigger FROM flows;
CREATE TRIGGER flows_ai AFTER INSERT ON flows BEGIN
	INSERT INTO flows_fts (rowid, name, trigger) VALUES (new.id, new.name, new.trigger);
END;
CREATE TRIGGER flows_ad AFTER DELETE ON flows BEGIN
	INSERT INTO flows_fts (flows_fts, rowid, name, trigger) VALUES ('delete', old.id, old.name, old.trigger);
END;
CREATE TRIGGER flows_au AFTER UPDATE ON flows BEGIN
	INSERT INTO flows_fts (flows_fts, rowid, name, trigger) VALUES ('delete', old.id, old.name, old.trigger);
	INSERT INTO flows_fts (rowid, name, trigger) VALUES (new.id, new.name, new.trigger);
END;
`, `
-- The tools a flow may use in its steps (beyond DefaultStepTools), and the
-- step tools an item was planned with: its execution may use only these.
ALTER TABLE flows ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';
ALTER TABLE items ADD COLUMN tools TEXT NOT NULL DEFAULT '[]';
`},
}

// DefaultStepTools are the tools any plan's steps may use; a flow adds the
// tools it declares (approved on the flow_create card). A plan is made
// from mail, so a step naming any other tool is the mail's author's, and
// becomes a manual step.
var DefaultStepTools = []string{"mail_reply", "mail_send"}

// StepTools is the set a plan made with flows may use: the defaults and
// every tool the flows declare, in a stable order.
func StepTools(flows []Flow) []string {
	out := append([]string(nil), DefaultStepTools...)
	for _, f := range flows {
		for _, t := range f.Tools {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// Item states.
const (
	StateNew       = "new"
	StateRead      = "read"
	StateDone      = "done"
	StateDismissed = "dismissed"
)

// Kinds of work.
var Kinds = []string{"reply_needed", "scheduling", "follow_up", "review"}

// Step is one proposed step: a tool call with concrete arguments, or a
// manual step for the user.
type Step struct {
	Title  string          `json:"title"`
	Tool   string          `json:"tool,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Manual bool            `json:"manual,omitempty"`
	// State while executing: pending, awaiting_approval, done, denied,
	// failed, unknown (it may have run when the daemon stopped).
	State  string `json:"state,omitempty"`
	Result string `json:"result,omitempty"`
}

// Item is one piece of proposed work.
type Item struct {
	ID          int64          `json:"id"`
	Source      string         `json:"source"`
	ThreadKey   string         `json:"thread_key"`
	Kind        string         `json:"kind"`
	Priority    string         `json:"priority"`
	Deadline    *time.Time     `json:"deadline,omitempty"`
	Summary     string         `json:"summary"`
	Steps       []Step         `json:"steps"`
	Confidence  float64        `json:"confidence"`
	Context     map[string]any `json:"context,omitempty"`
	State       string         `json:"state"`
	LastMessage int64          `json:"last_message_id"`
	ChatID      string         `json:"chat_id,omitempty"`
	// Tools are the step tools this item may run (DefaultStepTools and
	// those of the flows it was planned with).
	Tools     []string  `json:"tools"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Options configure a Center.
type Options struct {
	Log     *slog.Logger
	Now     func() time.Time
	Source  Source  // new mail; nil disables scans
	Planner Planner // nil: scans stop before planning
	// Tools checks a proposed tool step (exists, arguments valid) and
	// returns canonical arguments; an error turns it into a manual step.
	CheckStep func(tool string, args json.RawMessage) (json.RawMessage, error)
	// RunStep executes one tool step through the normal policy; it may
	// block on an approval that does not expire. It returns the final
	// state (done, denied, failed) and a short result. awaiting is called
	// before it waits for the user.
	RunStep func(ctx context.Context, it Item, idx int, s Step, awaiting func()) (state, result string)
	// CheckFlowTool says whether a flow may declare a tool (it exists and
	// is not one of the background plane's); nil allows only the defaults.
	CheckFlowTool func(name string) error
	// OnNew is told about created and reopened items (notifications).
	OnNew func(Item)
	// ScanElsewhere, when set, means scans are run by someone else (the
	// daemon's built-in job actions.scan calls Scan): Run then only
	// resumes executions, and Kick calls ScanElsewhere to ask for a scan.
	ScanElsewhere func()
	// Embedder, when set, adds semantic candidates to flow retrieval
	// (fused with the FTS5 ranking by RRF); nil or failing: lexical only.
	Embedder search.Embedder
	// FlowSimilarity is the cosine a flow needs to be retrieved without a
	// shared word (default DefaultFlowSimilarity; models differ).
	FlowSimilarity float64
}

// Center owns the Action Center store.
type Center struct {
	db   *store.DB
	log  *slog.Logger
	now  func() time.Time
	opts Options
	kick chan struct{}
	run  runner
	// scanMu serialises scans: the scheduled job and a manual scan must
	// not both plan the same new thread.
	scanMu sync.Mutex
	// flowVecs caches flow embeddings by their text.
	flowVecs struct {
		mu sync.Mutex
		m  map[string][]float32
	}
}

// Open opens (creating) the Action Center database.
func Open(ctx context.Context, path string, o Options) (*Center, error) {
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
	c := &Center{db: db, log: o.Log, now: o.Now, opts: o, kick: make(chan struct{}, 1)}
	c.run.life, c.run.stop = context.WithCancel(context.Background())
	return c, nil
}

// Close stops executions, waits for them and closes the database.
func (c *Center) Close() error {
	c.run.stop()
	c.run.wg.Wait()
	return c.db.Close()
}

func ms(t time.Time) int64 { return t.UnixMilli() }

const itemCols = `id, source, thread_key, kind, priority, deadline, summary, steps, confidence, context, state, last_message, chat_id, created_at, updated_at, tools`

func scanItem(sc interface{ Scan(...any) error }) (Item, error) {
	var it Item
	var deadline sql.NullInt64
	var steps, ctxJSON, toolsJSON string
	var created, updated int64
	if err := sc.Scan(&it.ID, &it.Source, &it.ThreadKey, &it.Kind, &it.Priority, &deadline, &it.Summary, &steps, &it.Confidence, &ctxJSON, &it.State, &it.LastMessage, &it.ChatID, &created, &updated, &toolsJSON); err != nil {
		return Item{}, err
	}
	json.Unmarshal([]byte(toolsJSON), &it.Tools)
	if len(it.Tools) == 0 {
		it.Tools = append([]string(nil), DefaultStepTools...)
	}
	if deadline.Valid {
		t := time.UnixMilli(deadline.Int64).UTC()
		it.Deadline = &t
	}
	json.Unmarshal([]byte(steps), &it.Steps)
	json.Unmarshal([]byte(ctxJSON), &it.Context)
	it.CreatedAt, it.UpdatedAt = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return it, nil
}

// Get returns one item.
func (c *Center) Get(ctx context.Context, id int64) (Item, error) {
	it, err := scanItem(c.db.QueryRowContext(ctx, `SELECT `+itemCols+` FROM items WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("action %d: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return Item{}, fmt.Errorf("reading action %d: %w", id, err)
	}
	return it, nil
}

// Filter selects items.
type Filter struct {
	State    string // "" = open (new and read); "all" = every state
	Kind     string
	Priority string
	Limit    int // 1–100, default 50
}

// Counts are the items per state.
type Counts map[string]int

// List returns items (newest first) and the counts per state.
func (c *Center) List(ctx context.Context, f Filter) ([]Item, Counts, error) {
	if f.Limit <= 0 || f.Limit > 100 {
		f.Limit = 50
	}
	q := `SELECT ` + itemCols + ` FROM items WHERE 1=1`
	var args []any
	switch f.State {
	case "":
		q += ` AND state IN ('new','read')`
	case "all":
	default:
		q += ` AND state = ?`
		args = append(args, f.State)
	}
	if f.Kind != "" {
		q += ` AND kind = ?`
		args = append(args, f.Kind)
	}
	if f.Priority != "" {
		q += ` AND priority = ?`
		args = append(args, f.Priority)
	}
	q += ` ORDER BY CASE priority WHEN 'high' THEN 0 WHEN 'normal' THEN 1 ELSE 2 END, updated_at DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := c.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("listing actions: %w", err)
	}
	defer rows.Close()
	out := []Item{}
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	counts := Counts{StateNew: 0, StateRead: 0, StateDone: 0, StateDismissed: 0}
	crows, err := c.db.QueryContext(ctx, `SELECT state, count(*) FROM items GROUP BY state`)
	if err != nil {
		return nil, nil, err
	}
	defer crows.Close()
	for crows.Next() {
		var s string
		var n int
		crows.Scan(&s, &n)
		counts[s] = n
	}
	return out, counts, crows.Err()
}

// ErrBadTransition is returned for a state change the lifecycle forbids.
var ErrBadTransition = errors.New("invalid state change")

// SetState moves an item: new → read → done/dismissed (and back to read
// from a closed state when the user reopens it).
func (c *Center) SetState(ctx context.Context, id int64, state string) (Item, error) {
	it, err := c.Get(ctx, id)
	if err != nil {
		return Item{}, err
	}
	switch state {
	case StateRead, StateDone, StateDismissed:
	default:
		return Item{}, fmt.Errorf("%w: state must be read, done or dismissed, not %q", ErrBadTransition, state)
	}
	if _, err := c.db.ExecContext(ctx, `UPDATE items SET state = ?, updated_at = ? WHERE id = ?`, state, ms(c.now()), it.ID); err != nil {
		return Item{}, fmt.Errorf("updating action %d: %w", id, err)
	}
	return c.Get(ctx, id)
}

// Settings are the Action Center's switches.
type Settings struct {
	Enabled   bool       `json:"enabled"`
	Language  string     `json:"language"`
	Activated *time.Time `json:"activated_at,omitempty"`
}

// GetSettings returns the settings.
func (c *Center) GetSettings(ctx context.Context) (Settings, error) {
	var s Settings
	var act sql.NullInt64
	if err := c.db.QueryRowContext(ctx, `SELECT enabled, language, activated FROM settings WHERE id = 1`).Scan(&s.Enabled, &s.Language, &act); err != nil {
		return Settings{}, fmt.Errorf("reading Action Center settings: %w", err)
	}
	if act.Valid {
		t := time.UnixMilli(act.Int64).UTC()
		s.Activated = &t
	}
	return s, nil
}

// FieldError names a bad setting; its text is safe to show.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// HTTPStatus and HTTPCode make it a 400 bad_request (httpjson.Coded).
func (e *FieldError) HTTPStatus() int  { return 400 }
func (e *FieldError) HTTPCode() string { return "bad_request" }

// SetSettings stores the settings. The first enabling records the mail
// backlog's high-water mark: everything already there counts as seen.
func (c *Center) SetSettings(ctx context.Context, s Settings) (Settings, error) {
	if l := len(s.Language); l < 2 || l > 16 {
		return Settings{}, &FieldError{"language", fmt.Sprintf("%q is not a language tag such as en or it", s.Language)}
	}
	var mark any
	if s.Enabled {
		cur, err := c.GetSettings(ctx)
		if err != nil {
			return Settings{}, err
		}
		if cur.Activated == nil {
			if c.opts.Source == nil {
				return Settings{}, &FieldError{"enabled", "there is no mail source to scan"}
			}
			m, err := c.opts.Source.MaxID(ctx)
			if err != nil {
				return Settings{}, fmt.Errorf("marking the existing mail as seen: %w", err)
			}
			mark = m
		}
	}
	if mark != nil {
		_, err := c.db.ExecContext(ctx, `UPDATE settings SET enabled = ?, language = ?, watermark = ?, activated = ? WHERE id = 1`, s.Enabled, s.Language, mark, ms(c.now()))
		if err != nil {
			return Settings{}, err
		}
	} else if _, err := c.db.ExecContext(ctx, `UPDATE settings SET enabled = ?, language = ? WHERE id = 1`, s.Enabled, s.Language); err != nil {
		return Settings{}, err
	}
	return c.GetSettings(ctx)
}
