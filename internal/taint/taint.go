// Package taint tracks, per turn, whether the model has been shown untrusted
// content (mail bodies, web pages, documents, MCP results, channel
// messages) and from which source.
//
// Once a turn is tainted, the model's later choices may be steered by
// whoever wrote that content, so policy tightens for the rest of the turn:
// every tool that writes or sends data off the machine (Sensitive) is gated
// for a human decision even where a trust rule or a temporary mode would
// allow it, and the approval card names the source that tainted the turn.
// Deny stays deny. The decision is deterministic code over tool metadata —
// nothing the model says can clear the taint.
//
// The agent starts each turn with WithTracker; policy.Engine.Decide reads
// the tracker from the context, tightens the decision and marks the
// tracker when it lets an untrusted-output tool run. A decision made
// without any tracker in the context falls back to one kept per chat by the
// policy engine, which is never cleared by itself: forgetting the per-turn
// wiring makes taint stricter, never absent.
package taint

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/tools"
)

// Source is one untrusted read that tainted a turn.
type Source struct {
	Tool string `json:"tool"`
	// Detail narrows the source where the tool knows it (a message id, a
	// URL, a path); empty otherwise. Bounded.
	Detail string    `json:"detail,omitempty"`
	CallID string    `json:"call_id,omitempty"`
	At     time.Time `json:"at"`
}

// String is the form shown on approval cards: "mail_read (<id@host>)".
func (s Source) String() string {
	if s.Detail == "" {
		return s.Tool
	}
	return fmt.Sprintf("%s (%s)", s.Tool, s.Detail)
}

// MaxSources bounds how many distinct sources a tracker keeps; the count
// keeps growing past it.
const MaxSources = 16

const (
	maxDetail = 120
	maxCalls  = 4096
)

// Tracker is the taint state of one turn. It is safe for concurrent use
// (parallel-safe tool calls of one reply are decided concurrently).
type Tracker struct {
	mu      sync.Mutex // guards the fields below
	sources []Source
	count   int
	calls   map[string]bool // call ids already counted
}

// NewTracker returns a clean tracker.
func NewTracker() *Tracker { return &Tracker{} }

// Mark records an untrusted read.
func (t *Tracker) Mark(s Source) {
	if len(s.Detail) > maxDetail {
		s.Detail = s.Detail[:maxDetail]
	}
	s.Detail = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s.Detail)
	t.mu.Lock()
	defer t.mu.Unlock()
	if s.CallID != "" {
		// One call read once, however many places record it.
		if t.calls[s.CallID] {
			return
		}
		if t.calls == nil {
			t.calls = map[string]bool{}
		}
		if len(t.calls) < maxCalls {
			t.calls[s.CallID] = true
		}
	}
	t.count++
	for _, have := range t.sources {
		if have.Tool == s.Tool && have.Detail == s.Detail {
			return
		}
	}
	if len(t.sources) < MaxSources {
		t.sources = append(t.sources, s)
	}
}

// Tainted reports whether any untrusted content was read.
func (t *Tracker) Tainted() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count > 0
}

// Sources returns the recorded sources, first read first.
func (t *Tracker) Sources() []Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Source(nil), t.sources...)
}

// Reads is how many untrusted reads were recorded.
func (t *Tracker) Reads() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Describe lists the sources for a reason text, e.g.
// "mail_read (<a@b>), web_fetch (https://x.test/)".
func (t *Tracker) Describe() string {
	src := t.Sources()
	parts := make([]string, len(src))
	for i, s := range src {
		parts[i] = s.String()
	}
	out := strings.Join(parts, ", ")
	if n := t.Reads(); n > len(src) {
		out += fmt.Sprintf(" (%d untrusted reads in all)", n)
	}
	return out
}

type ctxKey struct{}

// WithTracker attaches a turn's tracker to ctx.
func WithTracker(ctx context.Context, t *Tracker) context.Context {
	return context.WithValue(ctx, ctxKey{}, t)
}

// From returns the tracker attached to ctx, or nil.
func From(ctx context.Context) *Tracker {
	t, _ := ctx.Value(ctxKey{}).(*Tracker)
	return t
}

// Sensitive reports whether a tool's calls must be gated in a tainted turn:
// it writes (anything not read-only), or it sends data off the machine
// (Egress), or it declares nothing about itself (unknown risk). A nil tool
// (unknown to the registry) is sensitive.
func Sensitive(t tools.Tool) bool {
	if t == nil {
		return true
	}
	s := t.Spec()
	return !s.ReadOnly || s.Egress || s.Risk == tools.RiskUnknown
}

// Untrusted reports whether a tool's output is untrusted content, or
// instructions from someone other than the user (Spec.Steers): either
// taints the turn that reads it.
func Untrusted(t tools.Tool) bool {
	if t == nil {
		return false
	}
	s := t.Spec()
	return s.UntrustedOutput || s.Steers
}
