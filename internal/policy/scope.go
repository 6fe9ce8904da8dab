package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// SourceRestriction says a decision was a deny because a restriction
// active in the turn (a skill's capability manifest) does not permit the
// call.
const SourceRestriction = "restriction"

// Restriction narrows what a turn may call, on top of everything else:
// while one is active, a call it does not permit is denied, whatever the
// rules, threshold or temporary mode say. Skills install one from their
// capability manifest when loaded.
type Restriction interface {
	// Name identifies the restriction on refusals ("skill weekly-report").
	Name() string
	// Permits returns nil when the call is within the restriction, or an
	// error saying what is outside it.
	Permits(tool string, args json.RawMessage) error
}

// Scope holds the restrictions active in one turn. It is safe for
// concurrent use. Restrictions are only ever added: nothing the model does
// can lift one within the turn.
type Scope struct {
	mu   sync.Mutex // guards list
	list []Restriction
}

// NewScope returns an empty scope.
func NewScope() *Scope { return &Scope{} }

// Add activates r for the rest of the turn; a second restriction with the
// same name is not added twice.
func (s *Scope) Add(r Restriction) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.list {
		if x.Name() == r.Name() {
			return
		}
	}
	s.list = append(s.list, r)
}

// Active returns the active restrictions.
func (s *Scope) Active() []Restriction {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Restriction(nil), s.list...)
}

type scopeKey struct{}

// WithScope returns ctx carrying s; the agent starts each turn with one.
func WithScope(ctx context.Context, s *Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeFrom returns the turn's scope, or nil.
func ScopeFrom(ctx context.Context) *Scope {
	s, _ := ctx.Value(scopeKey{}).(*Scope)
	return s
}

// restrict is applied after every other step: every active restriction
// must permit the call, otherwise it is denied.
func (e *Engine) restrict(ctx context.Context, in Input, res Result) Result {
	s := ScopeFrom(ctx)
	if s == nil || res.Decision == Deny {
		return res
	}
	for _, r := range s.Active() {
		if err := r.Permits(in.ToolName, in.Args); err != nil {
			res.Decision, res.Source, res.RuleID, res.Rule = Deny, SourceRestriction, "", nil
			res.Reason = fmt.Sprintf("%s is active in this turn and does not permit this call: %v", r.Name(), err)
			return res
		}
	}
	return res
}
