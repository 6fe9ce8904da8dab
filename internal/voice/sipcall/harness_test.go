package sipcall

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/agent"
	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/speech"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// fakeAgent answers each turn with a scripted reply streamed as deltas;
// a reply may first ask the broker to approve a gated "write_file". As
// the agent does, it runs one turn at a time, and a new turn interrupts
// the one running (its approval cancelled) unless
// it is submitted with NoInterrupt, when it waits its turn.
type fakeAgent struct {
	bus    *events.Bus
	broker *approval.Broker

	mu          sync.Mutex
	texts       []string
	labels      []string // each turn's origin label
	queued      []bool   // each turn's NoInterrupt
	replies     []reply
	ran         []string // gated actions that ran
	interrupted []string // turns a newer one interrupted
	n           int
	last        *fakeTurn // the latest turn submitted
}

type fakeTurn struct {
	id     string
	cancel context.CancelFunc
	done   chan struct{}
}

type reply struct {
	gated    string // a preview: ask for approval first
	question string // ask the user first; the answer ends the reply
	text     string
	// pieces, when set, are streamed one every every instead of text in
	// two halves at once: a long reply still running while it is spoken.
	pieces []string
	every  time.Duration
}

func (a *fakeAgent) Submit(ctx context.Context, chatID, text string, o agent.Options) error {
	a.mu.Lock()
	a.texts = append(a.texts, text)
	a.labels = append(a.labels, o.OriginLabel)
	a.queued = append(a.queued, o.NoInterrupt)
	r := reply{text: "I heard you."}
	if len(a.replies) > 0 {
		r, a.replies = a.replies[0], a.replies[1:]
	}
	a.n++
	tctx, cancel := context.WithCancel(context.Background())
	t := &fakeTurn{id: fmt.Sprintf("t%d", a.n), cancel: cancel, done: make(chan struct{})}
	prev := a.last
	a.last = t
	if prev != nil && !o.NoInterrupt {
		prev.cancel()
	}
	a.mu.Unlock()
	go func() {
		defer close(t.done)
		defer cancel()
		if prev != nil {
			<-prev.done // one turn at a time
		}
		a.run(tctx, chatID, t.id, r)
	}()
	return nil
}

// run plays one scripted turn; a cancelled one ends as the agent's
// interrupted turns do (aborted, code interrupted).
func (a *fakeAgent) run(ctx context.Context, chatID, turn string, r reply) {
	var streamed string
	interrupted := func() {
		a.mu.Lock()
		a.interrupted = append(a.interrupted, turn)
		a.mu.Unlock()
		a.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": turn, "ok": false, "aborted": true,
			"error": map[string]any{"code": "interrupted", "message": "the turn was interrupted by a newer message"}}})
	}
	if ctx.Err() != nil {
		interrupted()
		return
	}
	if r.question != "" {
		_, d := a.broker.Ask(ctx, approval.Request{Kind: approval.KindQuestion, ChatID: chatID, TurnID: turn, Question: r.question}, false)
		r.text += " You said: " + d.Answer + "."
	}
	if r.gated != "" {
		_, d := a.broker.Ask(ctx, approval.Request{ChatID: chatID, TurnID: turn, Tool: "write_file", Preview: r.gated}, false)
		if d.Runs() {
			a.mu.Lock()
			a.ran = append(a.ran, r.gated)
			a.mu.Unlock()
		} else {
			r.text = "Not done: " + string(d.Outcome) + "."
		}
	}
	pieces := r.pieces
	if len(pieces) == 0 {
		half := len(r.text) / 2
		pieces = []string{r.text[:half], r.text[half:]}
	}
	for i, p := range pieces {
		if i > 0 && r.every > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(r.every):
			}
		}
		if ctx.Err() != nil {
			interrupted()
			return
		}
		a.bus.Publish("message.delta", chatID, map[string]any{"turn_id": turn, "step": 0, "text": p})
		streamed += p
	}
	a.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": turn, "ok": true, "text": streamed}})
}

// interruptions lists the turns a newer one interrupted.
func (a *fakeAgent) interruptions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.interrupted...)
}

// noInterrupt lists each turn's NoInterrupt option.
func (a *fakeAgent) noInterrupt() []bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]bool(nil), a.queued...)
}

func (a *fakeAgent) submitted() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.texts...)
}

func (a *fakeAgent) origins() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.labels...)
}

func (a *fakeAgent) actions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ran...)
}

type fakeChats struct {
	mu    sync.Mutex
	notes []string
	n     int
}

func (c *fakeChats) Create(ctx context.Context, title string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("chat-%d", c.n), nil
}

func (c *fakeChats) Exists(ctx context.Context, id string) (bool, error) {
	return strings.HasPrefix(id, "chat-"), nil
}

func (c *fakeChats) Note(ctx context.Context, chatID, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, chatID+": "+text)
	return nil
}

func (c *fakeChats) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.notes...)
}

type auditRow struct {
	typ, chat, summary string
	data               any
}

type rig struct {
	m      *Manager
	agent  *fakeAgent
	chats  *fakeChats
	speech *siptest.Speech
	broker *approval.Broker

	mu    sync.Mutex
	audit []auditRow
}

func (r *rig) audits() []auditRow {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]auditRow(nil), r.audit...)
}

// newRig builds a Manager calling cfg.To with fakes around it; cfg's
// timeouts default to short ones.
func newRig(t *testing.T, cfg Config, transcripts ...string) *rig {
	t.Helper()
	return newRigClock(t, cfg, nil, transcripts...)
}

// newRigClock is newRig with the Manager's clock (nil: time.Now).
func newRigClock(t *testing.T, cfg Config, clock func() time.Time, transcripts ...string) *rig {
	t.Helper()
	bus := events.NewBus(time.Now, 0, 0)
	broker := approval.New(approval.Options{Timeout: 20 * time.Second, ApproversFor: bus.ApproversFor, Notify: agent.Notifier{Events: bus}})
	r := &rig{agent: &fakeAgent{bus: bus, broker: broker}, chats: &fakeChats{}, speech: siptest.NewSpeech(t, transcripts...), broker: broker}
	if cfg.RingTimeout == 0 {
		cfg.RingTimeout = 5 * time.Second
	}
	if cfg.ResponseTimeout == 0 {
		cfg.ResponseTimeout = 3 * time.Second
	}
	if cfg.RTPTimeout == 0 {
		cfg.RTPTimeout = 5 * time.Second
	}
	cfg.VAD.EndSilence = 400 * time.Millisecond
	cl := func() *speech.Client {
		return &speech.Client{BaseURL: r.speech.URL, Model: "m", HTTP: &http.Client{Timeout: 10 * time.Second}}
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("SIPCALL_DEBUG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	m, err := New(cfg, Deps{Agent: r.agent, Chats: r.chats, Approvals: broker, Bus: bus, STT: cl(), TTS: cl(), Log: log, Clock: clock,
		Audit: func(ctx context.Context, typ, chatID, summary string, data any) {
			r.mu.Lock()
			r.audit = append(r.audit, auditRow{typ, chatID, summary, data})
			r.mu.Unlock()
		},
		Alert: func(ctx context.Context, title, body string) {
			r.mu.Lock()
			r.audit = append(r.audit, auditRow{"alert", "", title + ": " + body, nil})
			r.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = m.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	r.m = m
	return r
}

// waitResult waits for c to end.
func waitResult(t *testing.T, c *Call, d time.Duration) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	res, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("the call did not end within %s (state %s)", d, c.State())
	}
	return res
}
