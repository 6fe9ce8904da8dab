// Package approval holds pending approval requests (gated tool calls) and
// questions (ask_user), and resolves each exactly once: by a user decision,
// by timeout, by cancellation, or at once when nobody is attached who could
// answer. Every resolution that is not an explicit approval means the call
// does not run.
package approval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/taint"
)

// Kind distinguishes approvals from questions.
type Kind string

// Kinds.
const (
	KindApproval Kind = "approval"
	KindQuestion Kind = "question"
)

// Outcome is how a request was resolved.
type Outcome string

// Outcomes. Only Approve and Edit let a call run; Answer answers a question.
const (
	Approve    Outcome = "approve"
	Edit       Outcome = "edit"
	Deny       Outcome = "deny"
	Revise     Outcome = "revise"
	Answer     Outcome = "answer"
	Timeout    Outcome = "timeout"
	NoApprover Outcome = "no_approver"
	Cancelled  Outcome = "cancelled"
)

// Request is a pending approval or question.
type Request struct {
	ID      string          `json:"id"`
	Kind    Kind            `json:"kind"`
	ChatID  string          `json:"chat_id"`
	TurnID  string          `json:"turn_id"`
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Risk    string          `json:"risk,omitempty"`
	Preview string          `json:"preview,omitempty"`
	// Diff is a unified diff of the change, for tools that edit text.
	Diff      string          `json:"diff,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Question  string          `json:"question,omitempty"`
	Choices   []string        `json:"choices,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	ExpiresAt time.Time       `json:"expires_at"`
	// Validate checks edited arguments and returns them canonical; an
	// error leaves the request pending. Not serialised.
	Validate func(json.RawMessage) (json.RawMessage, error) `json:"-"`
	// TaintedBy names the untrusted content this turn read before the
	// call was proposed (internal/taint); the card shows it.
	TaintedBy []taint.Source `json:"tainted_by,omitempty"`
	// NoExpiry marks a background request (a scheduled job, an Action
	// Center item): it waits for the user however long it takes and is
	// not denied because nobody is attached right now.
	NoExpiry bool `json:"no_expiry,omitempty"`
	// Origin says what started the call ("watch 3: train 9612", "Action
	// Center item 12", "MCP client claude-desktop"); empty for the chat
	// the card is shown in (internal/authority).
	Origin string `json:"origin,omitempty"`
	// Grant names the user's pre-approval the call was checked against,
	// when one matched but could not lift the gate.
	Grant string `json:"grant,omitempty"`
}

// Decision is how a request was resolved.
type Decision struct {
	Outcome Outcome         `json:"decision"`
	Args    json.RawMessage `json:"args,omitempty"` // effective arguments for Approve/Edit
	Note    string          `json:"note,omitempty"`
	Answer  string          `json:"answer,omitempty"`
	// Mode asks for a temporary mode alongside an approval
	// (allow_10m / allow_chat); the caller applies it.
	Mode string `json:"mode,omitempty"`
}

// Runs reports whether the call may run.
func (d Decision) Runs() bool { return d.Outcome == Approve || d.Outcome == Edit }

// Errors from Decide.
var (
	ErrNotFound       = errors.New("approval request not found")
	ErrAlreadyDecided = errors.New("approval request already decided")
	ErrInvalid        = errors.New("invalid decision")
)

// Notifier is told about new and resolved requests (the event bus).
type Notifier interface {
	Requested(r Request)
	Resolved(r Request, d Decision)
}

// Broker keeps the pending requests.
type Broker struct {
	clock     func() time.Time
	timeout   time.Duration
	approvers func() int // how many clients could answer; nil means one
	// approversFor counts the clients that could answer for one chat;
	// when set it is asked instead of approvers.
	approversFor func(chatID string) int
	notify       Notifier

	mu      sync.Mutex // guards pending and decided
	pending map[string]*pending
	decided map[string]Outcome // recently resolved ids, for 409 vs 404
	order   []string           // decided ids, oldest first, bounded
}

type pending struct {
	req  Request
	done chan Decision // buffered 1; the first resolution wins
}

// DefaultTimeout is how long a request waits for an answer.
const DefaultTimeout = 5 * time.Minute

// Options configure a Broker.
type Options struct {
	Clock   func() time.Time
	Timeout time.Duration
	// Approvers counts clients able to answer; with none, requests resolve
	// at once to NoApprover.
	Approvers func() int
	// ApproversFor, when set, counts the clients able to answer for one
	// chat (a client watching another chat never sees the request).
	ApproversFor func(chatID string) int
	Notify       Notifier
}

// New builds a broker.
func New(o Options) *Broker {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &Broker{clock: o.Clock, timeout: o.Timeout, approvers: o.Approvers, approversFor: o.ApproversFor, notify: o.Notify,
		pending: map[string]*pending{}, decided: map[string]Outcome{}}
}

// SetNotifier installs the notifier (wiring order).
func (b *Broker) SetNotifier(n Notifier) { b.notify = n }

// SetApprovers installs the approver counter (wiring order).
func (b *Broker) SetApprovers(fn func() int) { b.approvers = fn }

// Timeout returns the configured request timeout.
func (b *Broker) Timeout() time.Duration { return b.timeout }

// Ask registers req and waits for its resolution. It returns NoApprover at
// once when nobody can answer or when noApprover is set, Timeout when the
// timeout passes, Cancelled when ctx ends. The returned request carries the
// assigned id and times.
func (b *Broker) Ask(ctx context.Context, req Request, noApprover bool) (Request, Decision) {
	req.ID = newID()
	req.CreatedAt = b.clock().UTC()
	if !req.NoExpiry {
		req.ExpiresAt = req.CreatedAt.Add(b.timeout)
	}
	if req.Kind == "" {
		req.Kind = KindApproval
	}
	if noApprover || (!req.NoExpiry && b.nobodyCanAnswer(req.ChatID)) {
		d := Decision{Outcome: NoApprover}
		b.remember(req.ID, d.Outcome)
		if b.notify != nil {
			b.notify.Requested(req)
			b.notify.Resolved(req, d)
		}
		return req, d
	}
	p := &pending{req: req, done: make(chan Decision, 1)}
	b.mu.Lock()
	b.pending[req.ID] = p
	b.mu.Unlock()
	if b.notify != nil {
		b.notify.Requested(req)
	}
	var expired <-chan time.Time // nil for NoExpiry: never fires
	if !req.NoExpiry {
		timer := time.NewTimer(b.timeout)
		defer timer.Stop()
		expired = timer.C
	}
	var d Decision
	select {
	case d = <-p.done:
	case <-expired:
		d = b.resolveInternal(p, Decision{Outcome: Timeout})
	case <-ctx.Done():
		d = b.resolveInternal(p, Decision{Outcome: Cancelled})
	}
	return req, d
}

func (b *Broker) nobodyCanAnswer(chatID string) bool {
	if b.approversFor != nil {
		return b.approversFor(chatID) == 0
	}
	return b.approvers != nil && b.approvers() == 0
}

// resolveInternal resolves on timeout or cancel unless a user decision won
// the race, in which case that decision is returned.
func (b *Broker) resolveInternal(p *pending, d Decision) Decision {
	b.mu.Lock()
	cur, ok := b.pending[p.req.ID]
	won := ok && cur == p
	if won {
		delete(b.pending, p.req.ID)
		b.rememberLocked(p.req.ID, d.Outcome)
	}
	b.mu.Unlock()
	if !won {
		// A user decision was recorded first; it is waiting in the channel.
		return <-p.done
	}
	if b.notify != nil {
		b.notify.Resolved(p.req, d)
	}
	return d
}

func (b *Broker) remember(id string, o Outcome) {
	b.mu.Lock()
	b.rememberLocked(id, o)
	b.mu.Unlock()
}

func (b *Broker) rememberLocked(id string, o Outcome) {
	b.decided[id] = o
	b.order = append(b.order, id)
	if len(b.order) > 1000 {
		delete(b.decided, b.order[0])
		b.order = b.order[1:]
	}
}

// Decide applies a user decision. The first one wins; later ones get
// ErrAlreadyDecided. An invalid decision (edit with bad args, answer on an
// approval, unknown outcome) gets ErrInvalid and leaves the request pending.
func (b *Broker) Decide(id string, d Decision) (Decision, error) {
	b.mu.Lock()
	p, ok := b.pending[id]
	if !ok {
		_, was := b.decided[id]
		b.mu.Unlock()
		if was {
			return Decision{}, fmt.Errorf("%w: %s", ErrAlreadyDecided, id)
		}
		return Decision{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	req := p.req
	b.mu.Unlock()

	// Validate outside the lock: it may touch the filesystem.
	d, err := check(req, d)
	if err != nil {
		return Decision{}, err
	}

	b.mu.Lock()
	p, ok = b.pending[id]
	if !ok {
		b.mu.Unlock()
		return Decision{}, fmt.Errorf("%w: %s", ErrAlreadyDecided, id)
	}
	delete(b.pending, id)
	b.rememberLocked(id, d.Outcome)
	b.mu.Unlock()
	// Announce the decision before the waiting turn can act on it, so
	// approval.resolved always precedes the tool's own events. A timeout
	// or cancel in between finds the request gone and waits for this send
	// (resolveInternal); done has room for it.
	if b.notify != nil {
		b.notify.Resolved(req, d)
	}
	p.done <- d
	return d, nil
}

func check(req Request, d Decision) (Decision, error) {
	if len(d.Note) > 4000 {
		return d, fmt.Errorf("%w: note is longer than 4000 characters", ErrInvalid)
	}
	switch req.Kind {
	case KindQuestion:
		if d.Outcome == Deny {
			return Decision{Outcome: Deny, Note: d.Note}, nil
		}
		if d.Outcome != Answer {
			return d, fmt.Errorf("%w: a question takes decision \"answer\" (or \"deny\"), not %q", ErrInvalid, d.Outcome)
		}
		if len(d.Answer) > 10000 {
			return d, fmt.Errorf("%w: answer is longer than 10000 characters", ErrInvalid)
		}
		return Decision{Outcome: Answer, Answer: d.Answer}, nil
	}
	switch d.Outcome {
	case Approve:
		if len(d.Args) > 0 {
			return d, fmt.Errorf("%w: approve takes no args; use decision \"edit\" to change them", ErrInvalid)
		}
		if d.Mode != "" && d.Mode != "allow_10m" && d.Mode != "allow_chat" {
			return d, fmt.Errorf("%w: mode %q is not allow_10m or allow_chat", ErrInvalid, d.Mode)
		}
		return Decision{Outcome: Approve, Args: req.Args, Note: d.Note, Mode: d.Mode}, nil
	case Edit:
		if len(d.Args) == 0 {
			return d, fmt.Errorf("%w: edit needs the complete replacement args", ErrInvalid)
		}
		args := d.Args
		if req.Validate != nil {
			v, err := req.Validate(args)
			if err != nil {
				return d, fmt.Errorf("%w: %v", ErrInvalid, err)
			}
			args = v
		}
		if d.Mode != "" && d.Mode != "allow_10m" && d.Mode != "allow_chat" {
			return d, fmt.Errorf("%w: mode %q is not allow_10m or allow_chat", ErrInvalid, d.Mode)
		}
		return Decision{Outcome: Edit, Args: args, Note: d.Note, Mode: d.Mode}, nil
	case Deny, Revise:
		return Decision{Outcome: d.Outcome, Note: d.Note}, nil
	}
	return d, fmt.Errorf("%w: decision %q is not one of approve, edit, deny, revise", ErrInvalid, d.Outcome)
}

// Pending lists pending requests, oldest first; chatID filters when set.
func (b *Broker) Pending(chatID string) []Request {
	b.mu.Lock()
	out := make([]Request, 0, len(b.pending))
	for _, p := range b.pending {
		if chatID == "" || p.req.ChatID == chatID {
			out = append(out, p.req)
		}
	}
	b.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func newID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return "a_" + hex.EncodeToString(b[:])
}
