package actions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
	"github.com/hestia-dev/hestia/internal/search"
)

// Message is one mail message as the Action Center sees it.
type Message struct {
	ID       int64     `json:"id"`
	ThreadID int64     `json:"thread_id"`
	From     string    `json:"from"`
	To       string    `json:"to,omitempty"`
	Subject  string    `json:"subject"`
	Mailbox  string    `json:"mailbox,omitempty"`
	Role     string    `json:"role,omitempty"` // inbox, sent, junk, …
	Date     time.Time `json:"date"`
	Body     string    `json:"body"`
}

// Source is the mail mirror.
type Source interface {
	// MaxID is the newest message id (0 when there is none).
	MaxID(ctx context.Context) (int64, error)
	// Since returns up to limit messages with id > after, in id order.
	Since(ctx context.Context, after int64, limit int) ([]Message, error)
	// Thread returns the thread of message id, oldest first (at most limit).
	Thread(ctx context.Context, id int64, limit int) ([]Message, error)
}

// Plan is the planner's answer for one thread.
type Plan struct {
	Needed     bool    `json:"needed"`
	Kind       string  `json:"kind"`
	Priority   string  `json:"priority"`
	Deadline   string  `json:"deadline,omitempty"`
	Summary    string  `json:"summary"`
	Steps      []Step  `json:"steps"`
	Confidence float64 `json:"confidence"`
}

// PlanInput is what the planner sees for one thread.
type PlanInput struct {
	Thread   []Message `json:"thread"` // chronological
	Fresh    []int64   `json:"fresh"`  // the new message ids
	Flows    []Flow    `json:"flows,omitempty"`
	Language string    `json:"language"`
}

// Planner makes one model call per thread.
type Planner func(ctx context.Context, in PlanInput) (Plan, error)

var (
	noReplyRE = lazyre.New(`(?i)\b(no[-_.]?reply|do[-_.]?not[-_.]?reply|mailer-daemon|postmaster|bounce[s]?|notifications?)@`)
	surveyRE  = lazyre.New(`(?i)\b(survey|questionnaire|rate your|how did we do|feedback request|your opinion)\b`)
)

// Prefilter says why a message is not work ("" when it may be).
func Prefilter(m Message) string {
	switch {
	case m.Role == "junk" || m.Role == "spam" || m.Role == "trash" || strings.EqualFold(m.Mailbox, "junk") || strings.EqualFold(m.Mailbox, "spam"):
		return "junk"
	case m.Role == "sent" || m.Role == "drafts":
		return "own"
	case strings.TrimSpace(m.Body) == "" && strings.TrimSpace(m.Subject) == "":
		return "empty"
	case noReplyRE.MatchString(m.From):
		return "no_reply"
	case surveyRE.MatchString(m.Subject):
		return "survey"
	}
	return ""
}

// ScanResult reports one scan.
type ScanResult struct {
	Messages    int `json:"messages"`
	Filtered    int `json:"filtered"`
	Threads     int `json:"threads"`
	PlannerCall int `json:"planner_calls"`
	Created     int `json:"created"`
	Updated     int `json:"updated"`
	Failed      int `json:"failed"`
}

// MaxScan bounds the messages one scan takes.
const MaxScan = 2000

// Scan processes the new mail once. It does nothing unless enabled.
func (c *Center) Scan(ctx context.Context) (ScanResult, error) {
	c.scanMu.Lock()
	defer c.scanMu.Unlock()
	var res ScanResult
	set, err := c.GetSettings(ctx)
	if err != nil || !set.Enabled || c.opts.Source == nil {
		return res, err
	}
	// The watermark is a floor: every message at or below it is done
	// (seen at activation, filtered or planned). Messages above it that
	// a crashed scan already finished are skipped by their seen row.
	var mark int64
	if err := c.db.QueryRowContext(ctx, `SELECT coalesce(watermark, 0) FROM settings WHERE id = 1`).Scan(&mark); err != nil {
		return res, err
	}
	all, err := c.opts.Source.Since(ctx, mark, MaxScan)
	if err != nil {
		return res, fmt.Errorf("reading new mail: %w", err)
	}
	var msgs []Message
	for _, m := range all {
		var n int
		if err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM seen WHERE message_id = ?`, m.ID).Scan(&n); err != nil {
			return res, err
		}
		if n == 0 {
			msgs = append(msgs, m)
		}
	}
	// floor moves to just below the oldest message left unfinished.
	floor := mark
	if len(all) > 0 {
		floor = all[len(all)-1].ID
	}
	defer func() {
		if floor > mark {
			c.db.ExecContext(context.WithoutCancel(ctx), `UPDATE settings SET watermark = ? WHERE id = 1`, floor)
		}
	}()
	res.Messages = len(msgs)
	threads := map[int64][]Message{}
	var order []int64
	now := ms(c.now())
	for _, m := range msgs {
		if why := Prefilter(m); why != "" {
			res.Filtered++
			if _, err := c.db.ExecContext(ctx, `INSERT OR IGNORE INTO seen (message_id, thread_key, state, reason, at) VALUES (?, ?, 'filtered', ?, ?)`, m.ID, threadKey(m), why, now); err != nil {
				return res, err
			}
			continue
		}
		if _, ok := threads[m.ThreadID]; !ok {
			order = append(order, m.ThreadID)
		}
		threads[m.ThreadID] = append(threads[m.ThreadID], m)
	}
	res.Threads = len(order)
	for _, tid := range order {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		fresh := threads[tid]
		created, err := c.planThread(ctx, fresh, set.Language)
		res.PlannerCall++
		switch {
		case err != nil:
			res.Failed++
			c.log.Warn("actionPlan", "thread", tid, "err", err)
			// Stop; this thread and the ones after it are retried by the
			// next scan, so the floor stays below their oldest message.
			for _, rest := range order[slices.Index(order, tid):] {
				for _, m := range threads[rest] {
					floor = min(floor, m.ID-1)
				}
			}
			return res, nil
		case created == 1:
			res.Created++
		case created == 2:
			res.Updated++
		}
	}
	return res, nil
}

func threadKey(m Message) string { return strconv.FormatInt(m.ThreadID, 10) }

// planThread makes the planner call for one thread and records the item
// and the messages' progress in one transaction. It returns 1 for a new
// item, 2 for an updated or reopened one, 0 for none.
func (c *Center) planThread(ctx context.Context, fresh []Message, lang string) (int, error) {
	if c.opts.Planner == nil {
		return 0, errors.New("no planner")
	}
	last := fresh[len(fresh)-1]
	thread, err := c.opts.Source.Thread(ctx, last.ID, 20)
	if err != nil {
		return 0, fmt.Errorf("reading thread: %w", err)
	}
	if len(thread) == 0 {
		thread = fresh
	}
	var ids []int64
	for _, m := range fresh {
		ids = append(ids, m.ID)
	}
	flows, err := c.RetrieveFlows(ctx, last.Subject+" "+last.From+" "+snippet(last.Body, 500), 2)
	if err != nil {
		return 0, err
	}
	plan, err := c.opts.Planner(ctx, PlanInput{Thread: thread, Fresh: ids, Flows: flows, Language: lang})
	if err != nil {
		return 0, err
	}
	key := threadKey(last)
	outcome := 0
	err = c.db.Tx(ctx, func(tx *sql.Tx) error {
		var itemID sql.NullInt64
		if plan.Needed {
			allowed := StepTools(flows)
			p, err := c.normalize(plan, allowed)
			if err != nil {
				return err
			}
			toolsJSON, _ := json.Marshal(allowed)
			steps, _ := json.Marshal(p.Steps)
			snap, _ := json.Marshal(map[string]any{"subject": last.Subject, "from": last.From, "messages": len(thread), "fresh": ids, "flows": flowNames(flows)})
			var deadline any
			if t, err := time.Parse(time.RFC3339, p.Deadline); err == nil {
				deadline = ms(t)
			}
			var id int64
			var state string
			err = tx.QueryRowContext(ctx, `SELECT id, state FROM items WHERE source = 'mail' AND thread_key = ?`, key).Scan(&id, &state)
			now := ms(c.now())
			switch {
			case errors.Is(err, sql.ErrNoRows):
				r, err := tx.ExecContext(ctx, `INSERT INTO items (thread_key, kind, priority, deadline, summary, steps, confidence, context, state, last_message, created_at, updated_at, tools)
					VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'new', ?, ?, ?, ?)`, key, p.Kind, p.Priority, deadline, p.Summary, string(steps), p.Confidence, string(snap), last.ID, now, now, string(toolsJSON))
				if err != nil {
					return err
				}
				id, _ = r.LastInsertId()
				outcome = 1
			case err != nil:
				return err
			default:
				// A newer message reopens a handled item.
				_, err = tx.ExecContext(ctx, `UPDATE items SET kind = ?, priority = ?, deadline = ?, summary = ?, steps = ?, confidence = ?, context = ?, state = 'new', last_message = ?, updated_at = ?, tools = ? WHERE id = ?`,
					p.Kind, p.Priority, deadline, p.Summary, string(steps), p.Confidence, string(snap), last.ID, now, string(toolsJSON), id)
				if err != nil {
					return err
				}
				outcome = 2
			}
			itemID = sql.NullInt64{Int64: id, Valid: true}
		}
		for _, m := range fresh {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO seen (message_id, thread_key, state, item_id, at) VALUES (?, ?, 'planned', ?, ?)`, m.ID, key, itemID, ms(c.now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("recording the plan: %w", err)
	}
	if outcome > 0 && c.opts.OnNew != nil {
		if it, err := c.itemByThread(ctx, key); err == nil {
			c.opts.OnNew(it)
		}
	}
	return outcome, nil
}

func (c *Center) itemByThread(ctx context.Context, key string) (Item, error) {
	return scanItem(c.db.QueryRowContext(ctx, `SELECT `+itemCols+` FROM items WHERE source = 'mail' AND thread_key = ?`, key))
}

// normalize bounds and checks a plan: known kind and priority, at most 8
// steps, tool steps naming an allowed tool with valid arguments (else
// manual).
func (c *Center) normalize(p Plan, allowed []string) (Plan, error) {
	if !slices.Contains(Kinds, p.Kind) {
		p.Kind = "review"
	}
	if p.Priority != "high" && p.Priority != "low" {
		p.Priority = "normal"
	}
	p.Summary = snippet(strings.TrimSpace(p.Summary), 500)
	if p.Summary == "" {
		return p, errors.New("the planner gave no summary")
	}
	p.Confidence = min(max(p.Confidence, 0), 1)
	if len(p.Steps) > 8 {
		p.Steps = p.Steps[:8]
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		s.Title = snippet(strings.TrimSpace(s.Title), 200)
		s.State, s.Result = "pending", ""
		if s.Tool == "" {
			s.Manual, s.Args = true, nil
			continue
		}
		if c.opts.CheckStep == nil {
			s.Manual = true
			continue
		}
		if !slices.Contains(allowed, s.Tool) {
			s.Title = strings.TrimSpace(s.Title + " (" + snippet(s.Tool, 64) + " is not a tool this plan may use: " + strings.Join(allowed, ", ") + ")")
			s.Tool, s.Args, s.Manual = "", nil, true
			continue
		}
		canon, err := c.opts.CheckStep(s.Tool, s.Args)
		if err != nil {
			s.Title = strings.TrimSpace(s.Title + " (" + s.Tool + " could not be prepared: " + snippet(err.Error(), 120) + ")")
			s.Tool, s.Args, s.Manual = "", nil, true
			continue
		}
		s.Args, s.Manual = canon, false
	}
	return p, nil
}

func snippet(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Flow is a user-defined procedure.
type Flow struct {
	ID        int64  `json:"id"`
	Name      string `json:"name"`
	Trigger   string `json:"trigger"`
	Procedure string `json:"procedure"`
	// Tools are the tools the flow's steps may use beyond
	// DefaultStepTools; the flow_create card shows them.
	Tools     []string  `json:"tools"`
	CreatedAt time.Time `json:"created_at"`
}

func flowNames(fs []Flow) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name)
	}
	return out
}

// AddFlow stores a flow. Only the flow_create tool (behind an approval
// card) and the authenticated API call it.
func (c *Center) AddFlow(ctx context.Context, f Flow) (Flow, error) {
	f.Name, f.Trigger, f.Procedure = strings.TrimSpace(f.Name), strings.TrimSpace(f.Trigger), strings.TrimSpace(f.Procedure)
	switch {
	case f.Name == "" || len(f.Name) > 100:
		return Flow{}, &FieldError{"name", "1–100 characters"}
	case f.Trigger == "" || len(f.Trigger) > 500:
		return Flow{}, &FieldError{"trigger", "1–500 characters: when does the flow apply?"}
	case f.Procedure == "" || len(f.Procedure) > 4000:
		return Flow{}, &FieldError{"procedure", "1–4000 characters: what should be done?"}
	case len(f.Tools) > 8:
		return Flow{}, &FieldError{"tools", "at most 8 tools"}
	}
	var declared []string
	for _, t := range f.Tools {
		t = strings.TrimSpace(t)
		if slices.Contains(declared, t) || slices.Contains(DefaultStepTools, t) {
			continue
		}
		if c.opts.CheckFlowTool == nil {
			return Flow{}, &FieldError{"tools", fmt.Sprintf("%q cannot be a flow's tool here", t)}
		}
		if err := c.opts.CheckFlowTool(t); err != nil {
			return Flow{}, &FieldError{"tools", fmt.Sprintf("%q: %v", t, err)}
		}
		declared = append(declared, t)
	}
	f.Tools = declared
	toolsJSON, _ := json.Marshal(append([]string{}, declared...))
	r, err := c.db.ExecContext(ctx, `INSERT INTO flows (name, trigger, procedure, created_at, tools) VALUES (?, ?, ?, ?, ?)`, f.Name, f.Trigger, f.Procedure, ms(c.now()), string(toolsJSON))
	if err != nil {
		return Flow{}, fmt.Errorf("storing flow: %w", err)
	}
	f.ID, _ = r.LastInsertId()
	f.CreatedAt = time.UnixMilli(ms(c.now())).UTC()
	return f, nil
}

// Flows lists the flows.
func (c *Center) Flows(ctx context.Context) ([]Flow, error) {
	rows, err := c.db.QueryContext(ctx, `SELECT id, name, trigger, procedure, created_at, tools FROM flows ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []Flow{}
	for rows.Next() {
		var f Flow
		var created int64
		var toolsJSON string
		if err := rows.Scan(&f.ID, &f.Name, &f.Trigger, &f.Procedure, &created, &toolsJSON); err != nil {
			return nil, err
		}
		json.Unmarshal([]byte(toolsJSON), &f.Tools)
		if f.Tools == nil {
			f.Tools = []string{}
		}
		f.CreatedAt = time.UnixMilli(created).UTC()
		out = append(out, f)
	}
	return out, rows.Err()
}

var wordRE = lazyre.New(`\p{L}[\p{L}\p{N}]{2,}`)

// stopwords are function words that say nothing about which flow applies
// ("the" in a trigger must not match every English message). Built on
// first use: every hestia process would pay for it at start.
var stopwords = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`the and for you your with from about when this that these those are was were has have had
		will would can could should our out all any but not its into than then them they their there what which who whom
		why how per por con del della dei delle che una uno gli nel nella sul sulla dal dalla alle agli sono come anche
		der die das und ein eine les des une pour avec dans sur est`) {
		m[w] = true
	}
	return m
})

// DefaultFlowSimilarity is the cosine a flow needs to be retrieved on
// meaning alone, without sharing a word with the mail. The offline
// embedder scores unrelated short texts below 0.2 and a flow whose words
// the mail repeats around 0.2–0.4.
const DefaultFlowSimilarity = 0.3

// RetrieveFlows returns at most k flows for text, best first: hybrid
// retrieval fusing the FTS5 (BM25) ranking of the flows' names and
// triggers with their embedding similarity by reciprocal rank fusion
// (internal/search). A flow is a candidate when it shares a meaningful
// word with text or, with an embedder, when its similarity reaches the
// threshold; without an embedder (or when it fails) retrieval is lexical.
func (c *Center) RetrieveFlows(ctx context.Context, text string, k int) ([]Flow, error) {
	fs, err := c.Flows(ctx)
	if err != nil || len(fs) == 0 || k <= 0 {
		return nil, err
	}
	byID := make(map[int64]Flow, len(fs))
	for _, f := range fs {
		byID[f.ID] = f
	}
	candidate := map[int64]bool{}
	var lex []int64
	var words []string
	for _, w := range wordRE.FindAllString(strings.ToLower(text), -1) {
		if !stopwords()[w] {
			words = append(words, w)
		}
	}
	if q := search.MatchAny(strings.Join(words, " ")); q != "" {
		rows, err := c.db.QueryContext(ctx, `SELECT rowid FROM flows_fts WHERE flows_fts MATCH ? ORDER BY rank LIMIT 50`, q)
		if err != nil {
			return nil, fmt.Errorf("searching flows: %w", err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			lex = append(lex, id)
			candidate[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	vec := c.semanticFlows(ctx, text, fs, candidate)
	var out []Flow
	for _, h := range search.RRF(search.K, lex, vec) {
		if candidate[h.ID] && len(out) < k {
			out = append(out, byID[h.ID])
		}
	}
	return out, nil
}

// semanticFlows ranks every flow by the cosine similarity of its name and
// trigger to text and marks those at the threshold as candidates. Flow
// vectors are cached by their text. nil when there is no embedder or it
// failed (logged): retrieval is then lexical.
func (c *Center) semanticFlows(ctx context.Context, text string, fs []Flow, candidate map[int64]bool) []int64 {
	if c.opts.Embedder == nil || strings.TrimSpace(text) == "" {
		return nil
	}
	c.flowVecs.mu.Lock()
	defer c.flowVecs.mu.Unlock()
	if c.flowVecs.m == nil {
		c.flowVecs.m = map[string][]float32{}
	}
	inputs := []string{text}
	for _, f := range fs {
		if key := f.Name + "\n" + f.Trigger; c.flowVecs.m[key] == nil {
			inputs = append(inputs, key)
		}
	}
	vs, err := c.opts.Embedder.Embed(ctx, inputs)
	if err != nil || len(vs) != len(inputs) {
		c.log.Warn("flowEmbed", "err", err)
		return nil
	}
	for i, in := range inputs[1:] {
		c.flowVecs.m[in] = search.Normalize(append([]float32(nil), vs[i+1]...))
	}
	q := search.Normalize(append([]float32(nil), vs[0]...))
	threshold := c.opts.FlowSimilarity
	if threshold == 0 {
		threshold = DefaultFlowSimilarity
	}
	type scored struct {
		id  int64
		sim float64
	}
	var ranked []scored
	for _, f := range fs {
		v := c.flowVecs.m[f.Name+"\n"+f.Trigger]
		if len(v) != len(q) {
			continue // another embedding model's vector
		}
		var sim float64
		for i := range q {
			sim += float64(q[i]) * float64(v[i])
		}
		ranked = append(ranked, scored{f.ID, sim})
		if sim >= threshold {
			candidate[f.ID] = true
		}
	}
	sort.SliceStable(ranked, func(a, b int) bool { return ranked[a].sim > ranked[b].sim })
	out := make([]int64, len(ranked))
	for i, r := range ranked {
		out[i] = r.id
	}
	return out
}
