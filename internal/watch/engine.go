package watch

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hestia-dev/hestia/internal/authority"
	"github.com/hestia-dev/hestia/internal/notify"
	"github.com/hestia-dev/hestia/internal/policy"
	"github.com/hestia-dev/hestia/internal/taint"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
	"github.com/hestia-dev/hestia/internal/tools"
)

// Delivery is one fired event with the rules it matched.
type Delivery struct {
	Watch Watch
	Event StoredEvent
	Rules []Rule
}

// Grants returns the union of the matched rules' grants.
func (d Delivery) Grants() []Grant {
	var out []Grant
	for _, r := range d.Rules {
		out = append(out, r.Grants...)
	}
	return out
}

// Reactor composes the user-facing message for a delivery; it may call
// granted tools through call. It returns the message text.
type Reactor func(ctx context.Context, d Delivery, call CallFunc) (string, error)

// CallFunc runs a tool call under the delivery's grants: a call within a
// grant runs once (claimed first); anything else is gated, not run.
type CallFunc func(ctx context.Context, tool, args string) (CallResult, error)

// CallResult is what a granted call did.
type CallResult struct {
	Ran     bool   `json:"ran"`
	Gated   bool   `json:"gated,omitempty"`
	Repeat  bool   `json:"repeat,omitempty"` // claimed before: not run again
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Options configure an Engine.
type Options struct {
	Log   *slog.Logger
	Now   func() time.Time
	Tools *tools.Registry
	// Authority runs granted calls (internal/authority); without it no
	// call runs.
	Authority *authority.Authority
	Adapters  []Adapter
	// Interval between polls (default 45 s).
	Interval time.Duration
	// React composes messages (nil: the fallback text is delivered).
	React Reactor
	// Deliver hands the final message to the user (the originating chat,
	// a notification). An error leaves the event pending for a retry.
	Deliver func(ctx context.Context, d Delivery, message string) error
	// Gate asks the user about a call outside the grants (an approval
	// that does not expire); nil just refuses it.
	Gate func(ctx context.Context, d Delivery, tool string, args json.RawMessage, reason string)
}

// Engine polls watches and delivers their events.
type Engine struct {
	db       *store.DB
	log      *slog.Logger
	now      func() time.Time
	opts     Options
	adapters map[string]Adapter
	kick     chan struct{}
	poll     sync.Mutex // single flight: one poll-and-deliver pass at a time
}

// Open opens (creating) the watches database.
func Open(ctx context.Context, path string, o Options) (*Engine, error) {
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
	if o.Interval <= 0 {
		o.Interval = 45 * time.Second
	}
	e := &Engine{db: db, log: o.Log, now: o.Now, opts: o, adapters: map[string]Adapter{}, kick: make(chan struct{}, 1)}
	for _, a := range o.Adapters {
		e.adapters[a.Name()] = a
	}
	return e, nil
}

// Close closes the database.
func (e *Engine) Close() error { return e.db.Close() }

// SetReactor installs the message composer and delivery (wiring order).
func (e *Engine) SetReactor(react Reactor, deliver func(ctx context.Context, d Delivery, message string) error, gate func(ctx context.Context, d Delivery, tool string, args json.RawMessage, reason string)) {
	e.poll.Lock()
	e.opts.React, e.opts.Deliver, e.opts.Gate = react, deliver, gate
	e.poll.Unlock()
}

// Sources lists the adapter names.
func (e *Engine) Sources() []string {
	var out []string
	for n := range e.adapters {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Spec is a new watch.
type Spec struct {
	Source      string    `json:"source"`
	Ref         string    `json:"ref"`
	Instruction string    `json:"instruction"`
	ChatID      string    `json:"chat_id,omitempty"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Rules       []Rule    `json:"rules"`
	Deliver     []string  `json:"deliver,omitempty"`
}

// Create validates s, takes the first snapshot (so only later changes
// fire) and stores the watch. Errors naming a field are *FieldError.
func (e *Engine) Create(ctx context.Context, s Spec) (Watch, error) {
	ad, ok := e.adapters[s.Source]
	if !ok {
		return Watch{}, fieldErr("source", "%q is not a watch source (one of %s)", s.Source, strings.Join(e.Sources(), ", "))
	}
	if err := ad.Validate(s.Ref); err != nil {
		return Watch{}, &FieldError{Field: "ref", Msg: err.Error()}
	}
	if strings.TrimSpace(s.Instruction) == "" {
		return Watch{}, fieldErr("instruction", "is required: the user's own words for what to do")
	}
	if len(s.Instruction) > MaxInstruction {
		return Watch{}, fieldErr("instruction", "at most %d bytes", MaxInstruction)
	}
	if err := validateRules(s.Rules, ad, e.schemaOf); err != nil {
		return Watch{}, err
	}
	deliver, err := notify.ParseDeliver(s.Deliver)
	if err != nil {
		return Watch{}, err
	}
	now := e.now()
	if !s.ExpiresAt.IsZero() && !s.ExpiresAt.After(now) {
		return Watch{}, fieldErr("expires_at", "%s is in the past", s.ExpiresAt.Format(time.RFC3339))
	}
	snap, err := ad.Snapshot(ctx, s.Ref)
	if err != nil {
		return Watch{}, fmt.Errorf("reading %s %s for the first snapshot: %w", s.Source, s.Ref, err)
	}
	if s.ExpiresAt.IsZero() {
		d := ad.DefaultExpiry(snap)
		if d <= 0 {
			return Watch{}, fieldErr("expires_at", "is required for %s watches (when should watching stop?)", s.Source)
		}
		s.ExpiresAt = now.Add(d)
	}
	if s.ExpiresAt.Sub(now) > MaxLifetime {
		return Watch{}, fieldErr("expires_at", "at most %d days ahead", int(MaxLifetime.Hours()/24))
	}
	rules, _ := json.Marshal(s.Rules)
	id := newID()
	if _, err := e.db.ExecContext(ctx, `INSERT INTO watches (id, source, ref, instruction, chat_id, rules, state, expires_at, created_at, snapshot, last_poll, deliver)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, s.Source, s.Ref, s.Instruction, s.ChatID, string(rules), StateActive, ms(s.ExpiresAt), ms(now), string(snap), ms(now), strings.Join(deliver, ",")); err != nil {
		return Watch{}, fmt.Errorf("storing watch: %w", err)
	}
	e.Kick()
	return e.Get(ctx, id)
}

// Validate checks a spec without reading the resource (approval previews).
func (e *Engine) Validate(s Spec) error {
	ad, ok := e.adapters[s.Source]
	if !ok {
		return fieldErr("source", "%q is not a watch source (one of %s)", s.Source, strings.Join(e.Sources(), ", "))
	}
	if err := ad.Validate(s.Ref); err != nil {
		return &FieldError{Field: "ref", Msg: err.Error()}
	}
	return validateRules(s.Rules, ad, e.schemaOf)
}

func (e *Engine) schemaOf(name string) (json.RawMessage, bool) {
	if e.opts.Tools == nil {
		return nil, false
	}
	t, err := e.opts.Tools.Get(name)
	if err != nil {
		return nil, false
	}
	return t.Spec().Schema, true
}

// Stop moves an active or paused watch to stopped; stopping again changes
// nothing.
func (e *Engine) Stop(ctx context.Context, id string) (Watch, error) {
	w, err := e.Get(ctx, id)
	if err != nil {
		return Watch{}, err
	}
	if w.State == StateActive || w.State == StatePaused {
		if _, err := e.db.ExecContext(ctx, `UPDATE watches SET state = ?, ended_at = ? WHERE id = ? AND state IN (?, ?)`, StateStopped, ms(e.now()), id, StateActive, StatePaused); err != nil {
			return Watch{}, fmt.Errorf("stopping watch %s: %w", id, err)
		}
	}
	return e.Get(ctx, id)
}

// Kick asks the loop for a pass now.
func (e *Engine) Kick() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// Run is the daemon worker: a pass at start, then every interval.
func (e *Engine) Run(ctx context.Context) error {
	for {
		if err := e.Pass(ctx); err != nil && ctx.Err() == nil {
			e.log.Warn("watchPass", "err", err)
		}
		t := time.NewTimer(e.opts.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-e.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// Pass expires due watches, polls the active ones and delivers pending
// events, oldest first.
func (e *Engine) Pass(ctx context.Context) error {
	e.poll.Lock()
	defer e.poll.Unlock()
	if err := e.expire(ctx); err != nil {
		return err
	}
	if err := e.PollAll(ctx); err != nil {
		return err
	}
	return e.deliverPending(ctx)
}

func (e *Engine) expire(ctx context.Context) error {
	now := ms(e.now())
	_, err := e.db.ExecContext(ctx, `UPDATE watches SET state = ?, ended_at = ? WHERE state IN (?, ?) AND expires_at <= ?`, StateExpired, now, StateActive, StatePaused, now)
	if err != nil {
		return fmt.Errorf("expiring watches: %w", err)
	}
	return nil
}

type active struct {
	id, source, ref string
	rules           []Rule
	snap            json.RawMessage
}

// PollAll polls every active watch once, in creation order.
func (e *Engine) PollAll(ctx context.Context) error {
	rows, err := e.db.QueryContext(ctx, `SELECT id, source, ref, rules, snapshot FROM watches WHERE state = ? ORDER BY created_at`, StateActive)
	if err != nil {
		return fmt.Errorf("loading active watches: %w", err)
	}
	var ws []active
	for rows.Next() {
		var a active
		var rules string
		var snap sql.NullString
		if err := rows.Scan(&a.id, &a.source, &a.ref, &rules, &snap); err != nil {
			rows.Close()
			return err
		}
		json.Unmarshal([]byte(rules), &a.rules)
		if snap.Valid {
			a.snap = json.RawMessage(snap.String)
		}
		ws = append(ws, a)
	}
	rows.Close()
	for _, a := range ws {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := e.pollOne(ctx, a); err != nil {
			e.log.Warn("watchPoll", "watch", a.id, "err", err)
		}
	}
	return nil
}

// pollOne reads a fresh snapshot and enqueues its events. A failed read
// records the error and keeps the previous snapshot, so the next good
// read still sees every transition from the last known state.
func (e *Engine) pollOne(ctx context.Context, a active) error {
	ad, ok := e.adapters[a.source]
	now := e.now()
	if !ok {
		_, err := e.db.ExecContext(ctx, `UPDATE watches SET last_error = ?, last_poll = ? WHERE id = ?`, "source "+a.source+" is not available in this version", ms(now), a.id)
		return err
	}
	var cur json.RawMessage
	var err error
	if inc, ok := ad.(Incremental); ok {
		cur, err = inc.SnapshotSince(ctx, a.ref, a.snap)
	} else {
		cur, err = ad.Snapshot(ctx, a.ref)
	}
	if err != nil {
		msg := err.Error()
		if len(msg) > 500 {
			msg = msg[:500]
		}
		_, uerr := e.db.ExecContext(ctx, `UPDATE watches SET last_error = ?, last_poll = ? WHERE id = ?`, msg, ms(now), a.id)
		return errors.Join(err, uerr)
	}
	var evs []Event
	if a.snap != nil {
		if evs, err = ad.Events(a.snap, cur); err != nil {
			return fmt.Errorf("comparing snapshots: %w", err)
		}
	}
	evs = append(evs, e.temporal(a, cur, now)...)
	terminal := ad.Terminal(cur)
	return e.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, ev := range evs {
			if err := e.enqueue(ctx, tx, a, ev, now); err != nil {
				return err
			}
		}
		if string(cur) != string(a.snap) {
			if _, err := tx.ExecContext(ctx, `UPDATE watches SET snapshot = ?, last_poll = ?, last_error = '' WHERE id = ?`, string(cur), ms(now), a.id); err != nil {
				return err
			}
		} else if _, err := tx.ExecContext(ctx, `UPDATE watches SET last_poll = ?, last_error = '' WHERE id = ?`, ms(now), a.id); err != nil {
			return err
		}
		// Events are queued before a terminal snapshot completes the
		// watch, so the final arrival is still delivered.
		if terminal {
			if _, err := tx.ExecContext(ctx, `UPDATE watches SET state = ?, ended_at = ? WHERE id = ? AND state = ?`, StateCompleted, ms(now), a.id, StateActive); err != nil {
				return err
			}
		}
		return nil
	})
}

// enqueue stores an event once (its key is unique per watch) with the
// rules it matches; once-rules that already took part are skipped. An
// event no rule wants is not stored.
func (e *Engine) enqueue(ctx context.Context, tx *sql.Tx, a active, ev Event, now time.Time) error {
	var matched []string
	for _, r := range a.rules {
		ok := r.matches(ev) || (r.Trigger != nil && ev.Type == EventTimeReached && ev.Data["rule"] == r.ID)
		if !ok {
			continue
		}
		if r.Once {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM event_rules WHERE watch_id = ? AND rule_id = ?`, a.id, r.ID).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
		}
		matched = append(matched, r.ID)
	}
	if len(matched) == 0 {
		return nil
	}
	data, _ := json.Marshal(ev.Data)
	res, err := tx.ExecContext(ctx, `INSERT INTO events (watch_id, key, type, data, text, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (watch_id, key) DO NOTHING`,
		a.id, ev.Key, ev.Type, string(data), ev.Text, ms(now))
	if err != nil {
		return fmt.Errorf("queueing event %s: %w", ev.Key, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil // this transition fired before
	}
	id, _ := res.LastInsertId()
	for _, r := range matched {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_rules (event_id, watch_id, rule_id) VALUES (?, ?, ?)`, id, a.id, r); err != nil {
			return err
		}
	}
	return nil
}

// EventTimeReached is the type of temporal trigger events.
const EventTimeReached = "time.reached"

// temporal fires the watch's temporal triggers that are due. A relative
// trigger whose reference time has already passed by more than an hour is
// stale and does not fire (a "30 minutes before" mail after the fact would
// be wrong); an absolute one fires late after a restart.
func (e *Engine) temporal(a active, cur json.RawMessage, now time.Time) []Event {
	var out []Event
	var snap map[string]any
	for _, r := range a.rules {
		t := r.Trigger
		if t == nil {
			continue
		}
		var at time.Time
		if !t.At.IsZero() {
			at = t.At
		} else {
			if snap == nil {
				json.Unmarshal(cur, &snap)
			}
			ref, ok := timeField(snap, t.Field)
			if !ok {
				continue
			}
			at = ref.Add(time.Duration(t.After-t.Before) * time.Minute)
			if now.Sub(at) > time.Hour {
				continue
			}
		}
		if now.Before(at) {
			continue
		}
		out = append(out, Event{Type: EventTimeReached, Key: fmt.Sprintf("time:%s:%d", r.ID, at.Unix()),
			Data: map[string]any{"rule": r.ID, "at": at.UTC().Format(time.RFC3339), "field": t.Field},
			Text: fmt.Sprintf("It is time (%s).", at.Local().Format("Mon 15:04"))})
	}
	return out
}

func timeField(snap map[string]any, path string) (time.Time, bool) {
	v, ok := lookup(snap, path)
	if !ok {
		return time.Time{}, false
	}
	switch x := v.(type) {
	case string:
		t, err := time.Parse(time.RFC3339, x)
		return t, err == nil
	case float64:
		return time.UnixMilli(int64(x)), x > 0
	}
	return time.Time{}, false
}

// maxAttempts bounds model attempts per event; after them the fallback
// text is delivered.
const maxAttempts = 2

// deliverPending delivers queued events oldest first, 20 per pass.
func (e *Engine) deliverPending(ctx context.Context) error {
	rows, err := e.db.QueryContext(ctx, `SELECT id, watch_id, key, type, data, text, state, message, created_at, delivered_at,
		(SELECT group_concat(rule_id) FROM event_rules r WHERE r.event_id = events.id)
		FROM events WHERE state = 'pending' ORDER BY id LIMIT 20`)
	if err != nil {
		return fmt.Errorf("loading pending events: %w", err)
	}
	var evs []StoredEvent
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			rows.Close()
			return err
		}
		evs = append(evs, ev)
	}
	rows.Close()
	for _, ev := range evs {
		if err := e.deliver(ctx, ev); err != nil {
			e.log.Warn("watchDeliver", "watch", ev.WatchID, "event", ev.Key, "err", err)
		}
	}
	return nil
}

func (e *Engine) deliver(ctx context.Context, ev StoredEvent) error {
	w, err := e.Get(ctx, ev.WatchID)
	if err != nil {
		return err
	}
	d := Delivery{Watch: w, Event: ev}
	for _, r := range w.Rules {
		for _, id := range ev.Rules {
			if r.ID == id {
				d.Rules = append(d.Rules, r)
			}
		}
	}
	msg := ev.Message
	if msg == "" {
		var attempts int
		e.db.QueryRowContext(ctx, `SELECT attempts FROM events WHERE id = ?`, ev.ID).Scan(&attempts)
		if e.opts.React != nil && attempts < maxAttempts {
			if _, err := e.db.ExecContext(ctx, `UPDATE events SET attempts = attempts + 1 WHERE id = ?`, ev.ID); err != nil {
				return err
			}
			msg, err = e.opts.React(ctx, d, func(ctx context.Context, tool, args string) (CallResult, error) {
				return e.call(ctx, d, tool, args)
			})
			if err != nil {
				e.log.Warn("watchCompose", "watch", w.ID, "err", err)
				if attempts+1 < maxAttempts {
					return nil // try the model again next pass
				}
				msg = ""
			}
		}
		if strings.TrimSpace(msg) == "" {
			msg = ev.Text
		}
		// The composed text is stored before delivery, so a retried
		// delivery never asks the model (or its granted tools) again.
		if _, err := e.db.ExecContext(ctx, `UPDATE events SET message = ? WHERE id = ?`, msg, ev.ID); err != nil {
			return err
		}
	}
	if e.opts.Deliver != nil {
		if err := e.opts.Deliver(ctx, d, msg); err != nil {
			return fmt.Errorf("delivering: %w", err)
		}
	}
	_, err = e.db.ExecContext(ctx, `UPDATE events SET state = 'delivered', delivered_at = ? WHERE id = ?`, ms(e.now()), ev.ID)
	return err
}

// call runs one tool call of a delivery under its grants.
func (e *Engine) call(ctx context.Context, d Delivery, name, raw string) (CallResult, error) {
	if e.opts.Tools == nil || e.opts.Authority == nil {
		return CallResult{Gated: true, Content: "no tools are available"}, nil
	}
	t, err := e.opts.Tools.Get(name)
	if err != nil {
		return CallResult{IsError: true, Content: fmt.Sprintf("unknown tool %s", name)}, nil
	}
	_, canon, err := tools.DecodeArgs(name, raw, t.Spec().Schema)
	if err != nil {
		return CallResult{IsError: true, Content: err.Error()}, nil
	}
	vars := map[string]any{
		"event": map[string]any{"type": d.Event.Type, "key": d.Event.Key, "data": d.Event.Data},
		"watch": map[string]any{"id": d.Watch.ID, "ref": d.Watch.Ref, "source": d.Watch.Source},
	}
	// Vars also reach data fields directly: {{event.train}} for data.train.
	for k, v := range d.Event.Data {
		vars["event"].(map[string]any)[k] = v
	}
	var rule *Rule
	var grant *Grant
	reason := "no rule matched by this event grants " + name
	for i := range d.Rules {
		c := checkGrant(d.Rules[i].Grants, name, canon, vars)
		if c.OK {
			rule, grant = &d.Rules[i], c.Grant
			break
		}
		if c.Reason != fmt.Sprintf("no grant for %s", name) {
			reason = c.Reason
		}
	}
	if rule != nil {
		var used int
		if err := e.db.QueryRowContext(ctx, `SELECT count(*) FROM claims WHERE watch_id = ? AND rule_id = ? AND tool = ? AND event_id != ?`, d.Watch.ID, rule.ID, name, d.Event.ID).Scan(&used); err != nil {
			return CallResult{}, err
		}
		if used >= grant.Max {
			rule, reason = nil, fmt.Sprintf("the grant allows %s at most %d time(s) and was used up", name, grant.Max)
		}
	}
	if rule == nil {
		if e.opts.Gate != nil {
			e.opts.Gate(ctx, d, name, canon, reason)
		}
		return CallResult{Gated: true, Content: "NOT run: " + reason + ". The call needs the user's approval; it was sent to them."}, nil
	}
	// The grant is the user's pre-approval, not a bypass: the call goes
	// through the authority like any other, which lifts only a threshold or
	// taint gate with it. A call the grant cannot cover (high risk, a trust
	// rule's gate) waits for the user instead.
	o := CallOrigin(d, rule, grant, e.now())
	if chk := e.opts.Authority.Check(ctx, o, name, string(canon)); chk.Result.Decision != policy.Allow {
		if chk.Result.Decision == policy.Deny {
			return CallResult{IsError: true, Content: "BLOCKED: " + name + " was NOT run. Policy refuses it: " + chk.Result.Reason}, nil
		}
		if e.opts.Gate != nil {
			e.opts.Gate(ctx, d, name, canon, chk.Result.Reason)
		}
		return CallResult{Gated: true, Content: "NOT run: " + chk.Result.Reason + ". The call needs the user's approval; it was sent to them."}, nil
	}
	key := fmt.Sprintf("%s:%d:%s:%s", d.Watch.ID, d.Event.ID, rule.ID, name)
	res, err := e.db.ExecContext(ctx, `INSERT INTO claims (key, watch_id, event_id, rule_id, tool, args, state, created_at) VALUES (?, ?, ?, ?, ?, ?, 'claimed', ?) ON CONFLICT (key) DO NOTHING`,
		key, d.Watch.ID, d.Event.ID, rule.ID, name, string(canon), ms(e.now()))
	if err != nil {
		return CallResult{}, fmt.Errorf("claiming %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var state, result string
		e.db.QueryRowContext(ctx, `SELECT state, result FROM claims WHERE key = ?`, key).Scan(&state, &result)
		return CallResult{Repeat: true, Content: fmt.Sprintf("NOT run again: %s was already claimed for this event (state %s). %s", name, state, result)}, nil
	}
	out := e.opts.Authority.Invoke(ctx, o, authority.Call{ID: key, Tool: name, Args: string(canon)})
	state, content := "done", tools.Cap(out.Result.Content, t.Spec().MaxResultChars())
	switch {
	case !out.Ran:
		state, content = "refused", fmt.Sprintf("not run (%s): %s", out.Decision, out.Policy.Reason)
	case out.Err != nil:
		state, content = "failed", out.Err.Error()
	case out.Result.IsError:
		state = "failed"
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := e.db.ExecContext(wctx, `UPDATE claims SET state = ?, result = ?, ended_at = ? WHERE key = ?`, state, clipStr(content, 2000), ms(e.now()), key); err != nil {
		return CallResult{}, err
	}
	return CallResult{Ran: out.Ran, Content: content, IsError: state != "done"}, nil
}

// CallOrigin is a delivery's call as the authority sees it: a background
// call in the watch's chat, descending from the event's outside data, under
// the matched grant (nil: none matched).
func CallOrigin(d Delivery, rule *Rule, g *Grant, now time.Time) authority.Origin {
	o := authority.Origin{Kind: authority.Watch, ID: d.Watch.ID, Label: fmt.Sprintf("watch %s (%s %s)", d.Watch.ID, d.Watch.Source, clipStr(d.Watch.Ref, 80)),
		ChatID: d.Watch.ChatID, Background: true, Ask: authority.Defer,
		Taint: []taint.Source{EventSource(d, now)}}
	if rule != nil && g != nil {
		b, _ := json.Marshal(g.Args)
		o.Grant = &authority.Grant{ID: fmt.Sprintf("watch %s rule %s", d.Watch.ID, rule.ID), Allows: fmt.Sprintf("%s with %s, at most %d time(s)", g.Tool, b, g.Max)}
	}
	return o
}

// EventSource is the untrusted source a delivery's event data is: what a
// call or message made from it descends from.
func EventSource(d Delivery, now time.Time) taint.Source {
	return taint.Source{Tool: "watch:" + d.Watch.Source, Detail: clipStr(d.Watch.Ref+" "+d.Event.Key, 120), At: now}
}

func clipStr(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
