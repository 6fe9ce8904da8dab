// Package watch is the source-neutral watch engine: "tell me when X
// changes" and, with the user's approval, "when X happens, do Y".
//
// A watch is a source (an adapter name), an opaque resource reference, the
// user's original instruction, the chat it came from, an expiry and rules.
// A rule is one event type or a temporal trigger (before/after a time field
// of the snapshot by N minutes, or at an absolute time), equality filters
// on the event's data (dot paths), a once flag and grants: tools the rule
// may call without a new approval, each argument constrained (exact value,
// set, numeric range or a template filled from the event), extra fields
// refused, invocations bounded.
//
// Adapters turn two snapshots into events with stable keys. Everything is
// durable: the unique event key means one transition fires once across
// polls and restarts; rule participation is recorded before delivery; a
// claim row is written before a granted call runs, so a retried delivery
// never repeats it. A poll error keeps the previous snapshot.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// the watch engine (`watches.db`): watches (source, opaque ref, instruction, chat, expiry, rules),
// events with a unique per-watch key (a transition fires once across polls and restarts), rule
// participation, claims written before a granted call runs (a retry never repeats it); rules =
// event type or temporal trigger, `where` dot-path filters, `once`, grants with
// exact/set/range/template constraints, extra fields refused, max calls; adapters `train`
// (ViaggiaTreno andamentoTreno JSON, `[watch] train_base_url`), `url` (ETag/Last-Modified, 1 MiB
// cap, private addresses refused at dial time unless `url_allow_private`), `file`, `mail` (a saved
// search over the mail mirror: a cursor in the snapshot, so only messages that arrive after the
// watch began fire, each once, across restarts; partial free-text hits and backfills dated > 14
// days ago do not fire); the composed message (model with only the matched grants' tools, or the
// fallback text) is stored before delivery to the chat + a notification; calls outside a grant
// become approvals without expiry; a watch's `deliver` list (inbox, push, telegram; default
// inbox+push) says where the message goes besides the chat; a mail watch's search can be previewed
// (`POST /api/watches/preview`, `hestia watch add --dry-run`). Tools `watch_create` (no grants, egress), `watch_create_agent`
// (grants, gated), `watch_list`, `watch_stop`; `hestia watch list/show/stop`; over HTTP, creating
// or resuming a watch with grants needs the caller's `approve` scope (a grant is a pre-approval;
// pausing, stopping and deleting need only `chat`), and the watch's JSON states each grant in full
// (tool, constraints, `max`).
package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// States of a watch.
const (
	StateActive    = "active"
	StatePaused    = "paused" // not polled until resumed; still expires
	StateStopped   = "stopped"
	StateExpired   = "expired"
	StateCompleted = "completed"
)

// Watch is one stored watch.
type Watch struct {
	ID          string          `json:"id"`
	Source      string          `json:"source"`
	Ref         string          `json:"ref"`
	Instruction string          `json:"instruction"`
	ChatID      string          `json:"chat_id,omitempty"`
	Rules       []Rule          `json:"rules"`
	State       string          `json:"state"`
	ExpiresAt   time.Time       `json:"expires_at"`
	CreatedAt   time.Time       `json:"created_at"`
	EndedAt     *time.Time      `json:"ended_at,omitempty"`
	LastPoll    *time.Time      `json:"last_poll,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	LastEvent   *time.Time      `json:"last_event_at,omitempty"`
	Snapshot    json.RawMessage `json:"snapshot,omitempty"`
	Events      int             `json:"events"`
	// Deliver is where a fired event's message goes besides the watch's
	// chat (inbox, push, telegram; notify.ParseDeliver); nil: inbox and push.
	Deliver []string `json:"deliver,omitempty"`
}

// Rule says which events matter and what may be done about them.
type Rule struct {
	ID string `json:"id"`
	// Event is an adapter event type (train.departed, url.changed, …).
	Event string `json:"event,omitempty"`
	// Trigger is a temporal trigger instead of an event.
	Trigger *Trigger `json:"trigger,omitempty"`
	// Where filters on the event's data: dot path → exact JSON value.
	Where  map[string]any `json:"where,omitempty"`
	Once   bool           `json:"once,omitempty"`
	Grants []Grant        `json:"grants,omitempty"`
}

// Trigger fires relative to a time field of the snapshot (Field, a dot
// path to an RFC 3339 string or unix milliseconds) or at an absolute time.
type Trigger struct {
	Field  string    `json:"field,omitempty"`
	Before int       `json:"before_minutes,omitempty"`
	After  int       `json:"after_minutes,omitempty"`
	At     time.Time `json:"at,omitzero"`
}

// Grant lets a rule call one tool without a new approval, within limits.
type Grant struct {
	Tool string                `json:"tool"`
	Args map[string]Constraint `json:"args"`
	// Max bounds the calls over the watch's life (default 1).
	Max int `json:"max,omitempty"`
}

// Constraint limits one argument. Exactly one of its fields is set.
type Constraint struct {
	Exact    any      `json:"exact,omitempty"`
	Set      []any    `json:"set,omitempty"`
	Min      *float64 `json:"min,omitempty"`
	Max      *float64 `json:"max,omitempty"`
	Template string   `json:"template,omitempty"`
}

// Event is what an adapter reports between two snapshots.
type Event struct {
	Type string         `json:"type"`
	Key  string         `json:"key"` // stable for one transition
	Data map[string]any `json:"data,omitempty"`
	// Text is the deterministic message the user gets when the model is
	// unavailable.
	Text string `json:"text"`
}

// Adapter is one source of watchable resources.
type Adapter interface {
	Name() string
	// Validate checks a resource reference before a watch is created.
	Validate(ref string) error
	// EventTypes lists the events the adapter emits (rule validation).
	EventTypes() []string
	Snapshot(ctx context.Context, ref string) (json.RawMessage, error)
	Events(prev, cur json.RawMessage) ([]Event, error)
	// DefaultExpiry is how long a watch on cur lives when the user gave no
	// expiry; zero means the user must give one.
	DefaultExpiry(cur json.RawMessage) time.Duration
	// Terminal says the resource will not change any more (a train
	// arrived): the watch completes after this poll's events.
	Terminal(cur json.RawMessage) bool
}

// Incremental is an Adapter whose snapshot continues from the previous one
// (a cursor, as the mail adapter keeps): the engine passes the stored
// snapshot, nil for a watch's first.
type Incremental interface {
	SnapshotSince(ctx context.Context, ref string, prev json.RawMessage) (json.RawMessage, error)
}

// FieldError is a bad watch definition; Field names what is wrong.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// HTTPStatus and HTTPCode make it a 400 bad_request (httpjson.Coded).
func (e *FieldError) HTTPStatus() int  { return 400 }
func (e *FieldError) HTTPCode() string { return "bad_request" }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Limits.
const (
	MaxRules       = 20
	MaxGrants      = 5
	MaxInstruction = 4000
	MaxLifetime    = 90 * 24 * time.Hour
	MaxInvocations = 20
)

var ruleIDRE = lazyre.New(`^[A-Za-z0-9_.-]{1,64}$`)

// ToolSchemas resolves a tool name to its argument schema; ok is false for
// a tool that does not exist.
type ToolSchemas func(name string) (schema json.RawMessage, ok bool)

// validateRules checks rules against the adapter's events and grants
// against the tools' schemas.
func validateRules(rules []Rule, ad Adapter, schemas ToolSchemas) error {
	if len(rules) == 0 {
		return fieldErr("rules", "at least one rule is required")
	}
	if len(rules) > MaxRules {
		return fieldErr("rules", "at most %d rules, got %d", MaxRules, len(rules))
	}
	known := map[string]bool{}
	for _, t := range ad.EventTypes() {
		known[t] = true
	}
	seen := map[string]bool{}
	for i := range rules {
		r := &rules[i]
		f := fmt.Sprintf("rules[%d]", i)
		if r.ID == "" {
			r.ID = fmt.Sprintf("r%d", i+1)
		}
		if !ruleIDRE.MatchString(r.ID) || seen[r.ID] {
			return fieldErr(f+".id", "%q must be unique, 1–64 letters, digits, '.', '_' or '-'", r.ID)
		}
		seen[r.ID] = true
		switch {
		case (r.Event == "") == (r.Trigger == nil):
			return fieldErr(f, "give exactly one of event or trigger")
		case r.Event != "" && !known[r.Event]:
			return fieldErr(f+".event", "%q is not an event of source %s (one of %s)", r.Event, ad.Name(), strings.Join(ad.EventTypes(), ", "))
		case r.Trigger != nil:
			t := r.Trigger
			if (t.Field == "") == t.At.IsZero() {
				return fieldErr(f+".trigger", "give exactly one of field (with before_minutes or after_minutes) or at")
			}
			if t.Before < 0 || t.After < 0 || t.Before > 7*24*60 || t.After > 7*24*60 || (t.Before > 0 && t.After > 0) {
				return fieldErr(f+".trigger", "before_minutes or after_minutes (not both) from 0 to 10080")
			}
		}
		if len(r.Grants) > MaxGrants {
			return fieldErr(f+".grants", "at most %d grants", MaxGrants)
		}
		for j := range r.Grants {
			if err := validateGrant(&r.Grants[j], fmt.Sprintf("%s.grants[%d]", f, j), schemas); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateGrant(g *Grant, f string, schemas ToolSchemas) error {
	if strings.HasPrefix(g.Tool, "watch_") {
		return fieldErr(f+".tool", "a watch cannot grant watch tools")
	}
	schema, ok := schemas(g.Tool)
	if !ok {
		return fieldErr(f+".tool", "no tool named %q", g.Tool)
	}
	if g.Max == 0 {
		g.Max = 1
	}
	if g.Max < 1 || g.Max > MaxInvocations {
		return fieldErr(f+".max", "must be from 1 to %d", MaxInvocations)
	}
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if len(schema) > 0 {
		if err := json.Unmarshal(schema, &s); err != nil {
			return fieldErr(f+".tool", "tool %s has an unreadable schema", g.Tool)
		}
	}
	if len(g.Args) == 0 && len(s.Required) > 0 {
		return fieldErr(f+".args", "constrain the arguments of %s (required: %s)", g.Tool, strings.Join(s.Required, ", "))
	}
	for _, req := range s.Required {
		if _, ok := g.Args[req]; !ok {
			return fieldErr(f+".args."+req, "required argument of %s needs a constraint (an unconstrained argument could be anything)", g.Tool)
		}
	}
	for name, c := range g.Args {
		prop, ok := s.Properties[name]
		if !ok {
			return fieldErr(f+".args."+name, "%s has no argument %q", g.Tool, name)
		}
		n := 0
		if c.Exact != nil {
			n++
		}
		if c.Set != nil {
			n++
		}
		if c.Min != nil || c.Max != nil {
			n++
		}
		if c.Template != "" {
			n++
		}
		if n != 1 {
			return fieldErr(f+".args."+name, "give exactly one of exact, set, min/max or template")
		}
		typ, _ := prop.Type.(string)
		if (c.Min != nil || c.Max != nil) && typ != "number" && typ != "integer" {
			return fieldErr(f+".args."+name, "a range needs a numeric argument; %s is %s", name, typ)
		}
		if c.Template != "" && typ != "string" {
			return fieldErr(f+".args."+name, "a template needs a string argument; %s is %s", name, typ)
		}
		if c.Template != "" {
			if _, err := renderTemplate(c.Template, nil, false); err != nil {
				return fieldErr(f+".args."+name, "%v", err)
			}
		}
		vals := c.Set
		if c.Exact != nil {
			vals = []any{c.Exact}
		}
		for _, v := range vals {
			if !typeOK(typ, v) {
				return fieldErr(f+".args."+name, "value %v does not match the argument's type %s", v, typ)
			}
		}
	}
	return nil
}

func typeOK(typ string, v any) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return true
}

// lookup reads a dot path from nested maps.
func lookup(data map[string]any, path string) (any, bool) {
	var cur any = data
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// matches reports whether a rule's event and filters match ev.
func (r Rule) matches(ev Event) bool {
	if r.Event == "" || r.Event != ev.Type {
		return false
	}
	for path, want := range r.Where {
		got, ok := lookup(ev.Data, path)
		if !ok || !jsonEqual(got, want) {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
