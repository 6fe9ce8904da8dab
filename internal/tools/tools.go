// Package tools defines the one interface every capability the model can call
// implements, and the registry the agent offers them from.
//
// A tool declares its name, description, JSON schema, risk level, whether it
// is read-only and parallel-safe, whether its output is untrusted content
// (mail, web and document text), and an availability check so that a tool
// which would fail at call time is never offered. Arguments are decoded and
// validated here (see DecodeArgs and Validate) before any tool runs, and
// results are capped here, so no connector re-implements either.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `tools/builtin` too:
//
// the tool registry and interface (schema, risk, read-only, parallel-safe, untrusted output,
// egress), strict argument validation, result caps; tool groups and their catalogue (`groups.go`:
// one group per connector, by name prefix or a table, MCP tools by server, the core group
// `now`/`ask_user`/`tools_load`); `now`, `ask_user`, `tools_load` (a group's definitions on
// demand).
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// Risk is how much harm a call can do. The zero value means the tool did not
// declare one; policy treats that like an unknown tool and gates it.
type Risk int

// Risk levels, in increasing order.
const (
	RiskUnknown Risk = iota
	RiskLow
	RiskMedium
	RiskHigh
)

func (r Risk) String() string {
	switch r {
	case RiskLow:
		return "low"
	case RiskMedium:
		return "medium"
	case RiskHigh:
		return "high"
	}
	return "unknown"
}

// MarshalText writes the risk as its name.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// ParseRisk parses low, medium or high.
func ParseRisk(s string) (Risk, error) {
	switch s {
	case "low":
		return RiskLow, nil
	case "medium":
		return RiskMedium, nil
	case "high":
		return RiskHigh, nil
	}
	return RiskUnknown, fmt.Errorf("risk %q is not one of low, medium, high", s)
}

// DefaultMaxResult is the result cap in characters when a tool sets none.
const DefaultMaxResult = 100_000

// Spec is the static description of a tool.
type Spec struct {
	// Name is what the model sees: lower case, namespaced by connector
	// (mail_search, mcp__server__tool).
	Name        string
	Description string
	// Schema is a JSON Schema object for the arguments. Nil means no
	// arguments.
	Schema json.RawMessage
	Risk   Risk
	// ReadOnly tools change nothing outside Hestia's own stores.
	ReadOnly bool
	// ParallelSafe tools may run concurrently with other parallel-safe
	// calls of the same model reply.
	ParallelSafe bool
	// UntrustedOutput marks results that carry outside content (mail,
	// documents, web pages); the agent wraps them so the model treats them
	// as data, never as instructions.
	UntrustedOutput bool
	// Egress marks tools whose calls send data off the machine (mail
	// send/reply, HTTP requests with a body, MCP tools of remote servers),
	// read-only or not. Once a turn has read untrusted output, policy gates
	// every egress or non-read-only tool (internal/taint).
	Egress bool
	// Steers marks tools whose output is instructions the model is meant
	// to follow (a skill's body): not wrapped as data, but a run taints
	// the turn like an untrusted read, since its author is not the user.
	Steers bool
	// MaxResult overrides DefaultMaxResult (characters).
	MaxResult int
	// PathArgs names the top-level string arguments that are filesystem
	// paths; policy path scopes and rule patterns look at them.
	PathArgs []string
}

// Call is one invocation handed to Tool.Run.
type Call struct {
	ID     string // the model's call id
	ChatID string
	TurnID string
	// Args is the validated argument object as canonical JSON.
	Args json.RawMessage
	// Ask puts a question to the user and waits for the answer. It is nil
	// where nobody can answer; tools must handle that.
	Ask func(ctx context.Context, question string, choices []string) (string, error)
}

// Result is what a tool returns to the model.
type Result struct {
	Content string
	// IsError marks a failure the model should see (bad path, not found).
	IsError bool
}

// Tool is one capability.
type Tool interface {
	Spec() Spec
	// Available reports why the tool cannot be used now (nil when it can).
	// It must test the thing that fails at call time.
	Available(ctx context.Context) error
	Run(ctx context.Context, call Call) (Result, error)
}

// Previewer is implemented by tools that can describe a call in one line for
// an approval card ("write 12 bytes to /home/me/x.txt (new file)").
type Previewer interface {
	Preview(ctx context.Context, args json.RawMessage) string
}

// Differ is implemented by tools that change a text file and can show the
// change as a unified diff on the approval card (wiki_write, wiki_edit).
type Differ interface {
	Diff(ctx context.Context, args json.RawMessage) string
}

// Targeter is implemented by tools whose calls have a natural target string
// for policy rule patterns (a resolved path, a recipient). Without it the
// canonical JSON arguments are the target.
type Targeter interface {
	Target(args json.RawMessage) string
}

// Replayer is implemented by tools whose successful calls set up state for
// the rest of a chat (loading a skill activates its capability manifest).
// The agent replays the chat's earlier successful calls at the start of
// every turn, so the state cannot be shed by starting a new turn.
type Replayer interface {
	Replay(ctx context.Context, args json.RawMessage)
}

// Func adapts plain functions to Tool.
type Func struct {
	S        Spec
	Check    func(ctx context.Context) error
	Fn       func(ctx context.Context, call Call) (Result, error)
	PreviewF func(ctx context.Context, args json.RawMessage) string
}

// Spec implements Tool.
func (f *Func) Spec() Spec { return f.S }

// Available implements Tool.
func (f *Func) Available(ctx context.Context) error {
	if f.Check == nil {
		return nil
	}
	return f.Check(ctx)
}

// Run implements Tool.
func (f *Func) Run(ctx context.Context, call Call) (Result, error) { return f.Fn(ctx, call) }

// Preview implements Previewer.
func (f *Func) Preview(ctx context.Context, args json.RawMessage) string {
	if f.PreviewF == nil {
		return ""
	}
	return f.PreviewF(ctx, args)
}

var nameRE = lazyre.New(`^[a-z][a-z0-9_]{0,63}$`)

// ErrUnknownTool is returned for names the registry does not hold.
var ErrUnknownTool = errors.New("unknown tool")

// Registry holds the tools. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex // guards tools and warmers
	tools map[string]Tool
	// warmers run before Available lists tools: sources whose tools are
	// only known once started (MCP servers) start lazily there.
	warmers []func(ctx context.Context)
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]Tool{}} }

// Register adds a tool. Names must be unique, lower case letters, digits and
// underscores, and the schema must be a JSON object.
func (r *Registry) Register(t Tool) error {
	s := t.Spec()
	if !nameRE.MatchString(s.Name) {
		return fmt.Errorf("registering tool %q: name must match %s", s.Name, nameRE)
	}
	if len(s.Schema) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(s.Schema, &obj); err != nil {
			return fmt.Errorf("registering tool %q: schema is not a JSON object: %w", s.Name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[s.Name]; dup {
		return fmt.Errorf("registering tool %q: already registered", s.Name)
	}
	r.tools[s.Name] = t
	return nil
}

// MustRegister is Register for wiring code with fixed tool sets.
func (r *Registry) MustRegister(ts ...Tool) {
	for _, t := range ts {
		if err := r.Register(t); err != nil {
			panic(err)
		}
	}
}

// Unregister removes a tool (a dynamic source dropped it). It reports
// whether the name was registered.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tools[name]
	delete(r.tools, name)
	return ok
}

// AddWarmer registers fn to run at the start of every Available call, so
// that a source can start lazily and register its tools just before they
// are first offered. fn must be cheap once warm and honour ctx.
func (r *Registry) AddWarmer(fn func(ctx context.Context)) {
	r.mu.Lock()
	r.warmers = append(r.warmers, fn)
	r.mu.Unlock()
}

// Get returns the tool with that name.
func (r *Registry) Get(name string) (Tool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return t, nil
}

// All returns every registered tool sorted by name.
func (r *Registry) All() []Tool {
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

// Available returns the tools whose availability check passes, sorted by name.
func (r *Registry) Available(ctx context.Context) []Tool {
	r.mu.RLock()
	warmers := r.warmers
	r.mu.RUnlock()
	for _, w := range warmers {
		w(ctx)
	}
	var out []Tool
	for _, t := range r.All() {
		if t.Available(ctx) == nil {
			out = append(out, t)
		}
	}
	return out
}

// Cap cuts content to at most max characters (runes), keeping the head and
// saying how much was cut so the model knows the result is partial.
func Cap(content string, max int) string {
	if max <= 0 {
		max = DefaultMaxResult
	}
	if len(content) <= max { // bytes ≥ runes, fast path
		return content
	}
	n := utf8.RuneCountInString(content)
	if n <= max {
		return content
	}
	cut, runes := len(content), 0
	for i := range content {
		if runes == max {
			cut = i
			break
		}
		runes++
	}
	return content[:cut] + fmt.Sprintf("\n[result truncated: showed %d of %d characters]", max, n)
}

// MaxResultChars is the effective result cap of a spec.
func (s Spec) MaxResultChars() int {
	if s.MaxResult > 0 {
		return s.MaxResult
	}
	return DefaultMaxResult
}

// PathValues returns the values of the spec's path arguments present in args.
func (s Spec) PathValues(args json.RawMessage) []string {
	if len(s.PathArgs) == 0 {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return nil
	}
	var out []string
	for _, k := range s.PathArgs {
		if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
			out = append(out, v)
		}
	}
	return out
}
