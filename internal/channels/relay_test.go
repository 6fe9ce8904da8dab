package channels_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/channeltest"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

const (
	owner   = "U_OWNER"
	contact = "U_CONTACT"
	dm      = "D1"
)

// fakeAgent plays a turn on the real bus and broker: it streams the reply
// and, when gate is set, first asks for an approval.
type fakeAgent struct {
	bus    *events.Bus
	broker *approval.Broker
	gate   atomic.Bool
	ask    atomic.Bool
	long   atomic.Bool
	mu     sync.Mutex
	subs   []channels.Submit
	texts  []string
	writes atomic.Int32
}

func (f *fakeAgent) Submit(ctx context.Context, chatID, text string, o channels.Submit) error {
	f.mu.Lock()
	f.texts = append(f.texts, text)
	f.subs = append(f.subs, o)
	n := len(f.texts)
	f.mu.Unlock()
	go func() {
		turn := fmt.Sprintf("t_%d", n)
		reply := "You said: " + text
		if f.gate.Load() {
			req := approval.Request{ChatID: chatID, TurnID: turn, Tool: "write_file", Preview: "write <x.txt>", Risk: "medium"}
			if f.ask.Load() {
				req = approval.Request{ChatID: chatID, TurnID: turn, Kind: approval.KindQuestion, Question: "Which colour?", Choices: []string{"red", "blue"}}
			}
			_, d := f.broker.Ask(context.Background(), req, false)
			switch {
			case d.Outcome == approval.Answer:
				reply = "Colour: " + d.Answer
			case d.Runs():
				f.writes.Add(1)
			default:
				reply = "Not written: " + string(d.Outcome)
			}
		}
		if f.long.Load() {
			reply = strings.Repeat("word ", 300) + "END"
		}
		for i := 0; i < len(reply); i += 40 {
			f.bus.Publish("message.delta", chatID, map[string]any{"turn_id": turn, "step": 0, "text": reply[i:min(i+40, len(reply))]})
			time.Sleep(2 * time.Millisecond)
		}
		f.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": turn, "ok": true, "text": reply}})
	}()
	return nil
}

func (f *fakeAgent) submits() ([]string, []channels.Submit) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...), append([]channels.Submit(nil), f.subs...)
}

type fakeChats struct{ n atomic.Int32 }

func (c *fakeChats) Create(ctx context.Context, title string) (string, error) {
	return fmt.Sprintf("c_%d", c.n.Add(1)), nil
}
func (c *fakeChats) Exists(ctx context.Context, id string) (bool, error) { return true, nil }

type notifier struct{ bus *events.Bus }

func (n notifier) Requested(r approval.Request) {
	n.bus.Publish("approval.requested", r.ChatID, map[string]any{"approval": r})
}
func (n notifier) Resolved(r approval.Request, d approval.Decision) {
	n.bus.Publish("approval.resolved", r.ChatID, map[string]any{"id": r.ID, "kind": r.Kind, "decision": d.Outcome})
}

type auditLog struct {
	mu    sync.Mutex
	types []string
	data  []any
}

func (a *auditLog) record(ctx context.Context, typ, chatID, summary string, data any) {
	a.mu.Lock()
	a.types = append(a.types, typ)
	a.data = append(a.data, data)
	a.mu.Unlock()
}

// of returns the data of the events of one type, in order.
func (a *auditLog) of(typ string) []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []map[string]any
	for i, t := range a.types {
		if t == typ {
			m, _ := a.data[i].(map[string]any)
			out = append(out, m)
		}
	}
	return out
}

func (a *auditLog) count(typ string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, t := range a.types {
		if t == typ {
			n++
		}
	}
	return n
}

type harness struct {
	p      *channeltest.Platform
	bus    *events.Bus
	broker *approval.Broker
	agent  *fakeAgent
	store  *channels.Store
	relay  *channels.Relay
	audit  *auditLog
	stop   func()
}

type hopts struct {
	platform channels.Platform // default: the plain fake
	stt      channels.Transcriber
	tts      channels.Speaker
	agent    channels.Agent // default: the fake agent
	// inbox, when set, receives files; the limits are the relay's.
	inbox               string
	maxFile, maxMessage int64
	clock               func() time.Time
}

func newHarness(t *testing.T, dbPath string, p *channeltest.Platform, o hopts) *harness {
	t.Helper()
	db, err := store.Open(context.Background(), dbPath, channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus(nil, 0, 0)
	broker := approval.New(approval.Options{Timeout: time.Minute, ApproversFor: bus.ApproversFor, Notify: notifier{bus}})
	h := &harness{p: p, bus: bus, broker: broker, store: channels.NewStore(db, nil), audit: &auditLog{}}
	h.agent = &fakeAgent{bus: bus, broker: broker}
	var ag channels.Agent = h.agent
	if o.agent != nil {
		ag = o.agent
	}
	plat := o.platform
	if plat == nil {
		plat = p
	}
	h.relay = channels.New(channels.Config{
		Label:  "Fake",
		Users:  map[string][]devices.Scope{owner: {devices.Chat, devices.Approve, devices.Read}, contact: {devices.Chat, devices.Read}},
		Owners: []string{owner}, InboxDir: o.inbox, MaxFileBytes: o.maxFile, MaxMessageBytes: o.maxMessage,
	}, channels.Deps{Platform: plat, Store: h.store, Agent: ag, Chats: &fakeChats{}, Approvals: broker, Bus: bus,
		Audit: h.audit.record, Transcriber: o.stt, Speaker: o.tts, Clock: o.clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.relay.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("relay: %v", err)
			}
			bus.Close()
			db.Close()
		})
	}
	t.Cleanup(h.stop)
	return h
}

var updates atomic.Int64

func msg(sender, conv, text string) channels.Update {
	return channels.Update{ID: fmt.Sprintf("u%d", updates.Add(1)), Conv: conv, Sender: sender, SenderName: "Anna", Private: true, Text: text}
}

func dbPath(t *testing.T) string { return filepath.Join(t.TempDir(), "channels.db") }

func TestOwnerMessageStreamsAndFinishesOnce(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	p.Deliver(msg(owner, dm, "hello there"))
	channeltest.WaitFor(t, "the final reply", func() bool {
		m, ok := p.FindText(dm, "You said: hello there")
		return ok && m.Text == "You said: hello there"
	})
	time.Sleep(50 * time.Millisecond)
	msgs := p.Messages(dm)
	if len(msgs) != 1 {
		t.Fatalf("want one streamed-then-finalised message, got %d: %+v", len(msgs), msgs)
	}
	if msgs[0].Edits == 0 {
		t.Errorf("the reply was not streamed by edits: %+v", msgs[0])
	}
	texts, subs := h.agent.submits()
	if len(texts) != 1 || texts[0] != "hello there" || subs[0].Label != "Fake" || len(subs[0].Provenance) != 0 {
		t.Errorf("owner turn = %q %+v; want one untainted turn labelled Fake", texts, subs)
	}
}

func TestLongReplyIsSplitUnderTheLimit(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	p.Lim.Edit = false // no streaming: the final parts only
	h := newHarness(t, dbPath(t), p, hopts{})
	h.agent.long.Store(true)
	p.Deliver(msg(owner, dm, "tell me a lot"))
	channeltest.WaitFor(t, "the last part", func() bool { _, ok := p.FindText(dm, "END"); return ok })
	msgs := p.Messages(dm)
	if len(msgs) < 3 {
		t.Fatalf("1,500 characters over a 500 limit came as %d messages", len(msgs))
	}
	total := 0
	for _, m := range msgs {
		if n := len([]rune(m.Text)); n > 500 {
			t.Errorf("a part of %d characters", n)
		}
		total += strings.Count(m.Text, "word")
	}
	if total != 300 {
		t.Errorf("%d of 300 words arrived", total)
	}
}

func TestStrangerRefusedOnceAndAuditedEveryTime(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	p.Deliver(msg("U_STRANGER", "D9", "hi, send me the owner's mail"))
	p.Deliver(msg("U_STRANGER", "D9", "again"))
	channeltest.WaitFor(t, "two refusals audited", func() bool { return h.audit.count("channel.refused") == 2 })
	channeltest.WaitFor(t, "the refusal reply", func() bool { _, ok := p.FindText("D9", "private assistant"); return ok })
	time.Sleep(30 * time.Millisecond)
	if n := len(p.Messages("D9")); n != 1 {
		t.Errorf("the stranger got %d replies, want the one refusal", n)
	}
	if texts, _ := h.agent.submits(); len(texts) != 0 {
		t.Errorf("a stranger started turns: %q", texts)
	}
}

func TestContactTurnIsTaintedAndGroupsRefused(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	p.Deliver(msg(contact, "D2", "what is on the owner's calendar?"))
	group := msg(owner, "G1", "hello group")
	group.Private = false
	p.Deliver(group)
	channeltest.WaitFor(t, "the contact's turn", func() bool { texts, _ := h.agent.submits(); return len(texts) == 1 })
	channeltest.WaitFor(t, "the group refusal", func() bool { _, ok := p.FindText("G1", "private conversation"); return ok })
	_, subs := h.agent.submits()
	if len(subs[0].Provenance) != 1 || subs[0].Provenance[0].Tool != "channel:fake" || !strings.Contains(subs[0].Provenance[0].Detail, contact) {
		t.Errorf("a contact's message must taint its turn: %+v", subs[0].Provenance)
	}
}

func TestDuplicateUpdatesAreHandledOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	p := channeltest.New()
	h := newHarness(t, path, p, hopts{})
	u := msg(owner, dm, "once only")
	p.Deliver(u)
	p.Deliver(u)
	channeltest.WaitFor(t, "the reply", func() bool { _, ok := p.FindText(dm, "You said: once only"); return ok })
	h.stop()
	h2 := newHarness(t, path, p, hopts{})
	p.Deliver(u) // the platform redelivers after the restart
	p.Deliver(msg(owner, dm, "next"))
	channeltest.WaitFor(t, "the next reply", func() bool { _, ok := p.FindText(dm, "You said: next"); return ok })
	if texts, _ := h2.agent.submits(); len(texts) != 1 || texts[0] != "next" {
		t.Errorf("after the restart the turns were %q, want only \"next\"", texts)
	}
	if texts, _ := h.agent.submits(); len(texts) != 1 {
		t.Errorf("before the restart the turns were %q", texts)
	}
}

func cardOf(t *testing.T, p *channeltest.Platform, conv string) channeltest.Msg {
	t.Helper()
	var card channeltest.Msg
	channeltest.WaitFor(t, "the approval prompt", func() bool {
		for _, m := range p.Messages(conv) {
			if m.Prompt != nil {
				card = m
				return true
			}
		}
		return false
	})
	return card
}

func TestButtonApprovesOnceAndClosesThePrompt(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	h.agent.gate.Store(true)
	p.Deliver(msg(owner, dm, "write it"))
	card := cardOf(t, p, dm)
	if card.Prompt.Code == "" || !strings.Contains(card.Text, card.Prompt.Code+" approve") || !strings.Contains(card.Text, "write_file") {
		t.Fatalf("the prompt must name the tool and its request code: %q %+v", card.Text, card.Prompt)
	}
	// A press on the right message naming another approval, and a press
	// by a contact, decide nothing.
	p.Deliver(channels.Update{ID: "a1", Conv: dm, Sender: owner, Private: true, Action: &channels.Action{Ref: card.Ref, ApprovalID: "ap_other", Verb: channels.VerbApprove, Ack: p.Ack()}})
	p.Deliver(channels.Update{ID: "a2", Conv: dm, Sender: contact, Private: true, Action: &channels.Action{Ref: card.Ref, ApprovalID: card.Prompt.ApprovalID, Verb: channels.VerbApprove, Ack: p.Ack()}})
	channeltest.WaitFor(t, "two refusals", func() bool { return h.audit.count("channel.action_refused") == 2 })
	if h.agent.writes.Load() != 0 {
		t.Fatal("a refused press approved the call")
	}
	press := channels.Update{ID: "a3", Conv: dm, Sender: owner, Private: true, Action: &channels.Action{Ref: card.Ref, ApprovalID: card.Prompt.ApprovalID, Verb: channels.VerbApprove, Ack: p.Ack()}}
	p.Deliver(press)
	channeltest.WaitFor(t, "the write", func() bool { return h.agent.writes.Load() == 1 })
	channeltest.WaitFor(t, "the closed prompt", func() bool {
		m, _ := p.FindText(dm, "Approval needed")
		return m.Prompt != nil && m.Prompt.Closed && strings.Contains(m.Text, "Approved")
	})
	// The same press again (a new delivery id) is refused as decided.
	press.ID = "a4"
	p.Deliver(press)
	channeltest.WaitFor(t, "the replay refused", func() bool { return h.audit.count("channel.action_refused") == 3 })
	if h.audit.count("channel.decision") != 1 || h.agent.writes.Load() != 1 {
		t.Errorf("decisions %d, writes %d; want 1 and 1", h.audit.count("channel.decision"), h.agent.writes.Load())
	}
}

func TestRequestCodeDecidesWithoutButtonsOrEdits(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	p.Lim = channels.Limits{MaxText: 500} // no edits, no buttons (like Signal by SMS-ish apps)
	h := newHarness(t, dbPath(t), p, hopts{})
	h.agent.gate.Store(true)
	p.Deliver(msg(owner, dm, "write it"))
	card := cardOf(t, p, dm)
	code := card.Prompt.Code
	// The code in another conversation, or by the contact, decides nothing.
	p.Deliver(msg(owner, "D7", code+" approve"))
	p.Deliver(msg(contact, dm, code+" approve"))
	time.Sleep(50 * time.Millisecond)
	if h.agent.writes.Load() != 0 {
		t.Fatal("a code from the wrong conversation or person approved the call")
	}
	p.Deliver(msg(owner, dm, strings.ToLower(code)+" deny"))
	channeltest.WaitFor(t, "the denial", func() bool { _, ok := p.FindText(dm, "Not written: deny"); return ok })
	if _, ok := p.FindText(dm, code+": ❌ Denied"); !ok {
		t.Errorf("without edits the outcome comes as its own line: %+v", p.Messages(dm))
	}
	// A message that merely looks like a code is an ordinary message.
	h.agent.gate.Store(false)
	p.Deliver(msg(owner, dm, "ZZZZ no thanks"))
	channeltest.WaitFor(t, "an ordinary turn", func() bool { _, ok := p.FindText(dm, "You said: ZZZZ no thanks"); return ok })
}

func TestDecisionElsewhereWithdrawsThePrompt(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	h.agent.gate.Store(true)
	p.Deliver(msg(owner, dm, "write it"))
	card := cardOf(t, p, dm)
	if _, err := h.broker.Decide(card.Prompt.ApprovalID, approval.Decision{Outcome: approval.Approve}); err != nil {
		t.Fatal(err)
	}
	channeltest.WaitFor(t, "the withdrawn prompt", func() bool {
		m, _ := p.FindText(dm, "Approval needed")
		return m.Prompt != nil && m.Prompt.Closed
	})
	// Pressing the old button now is refused as decided: first decision wins.
	p.Deliver(channels.Update{ID: "late", Conv: dm, Sender: owner, Private: true, Action: &channels.Action{Ref: card.Ref, ApprovalID: card.Prompt.ApprovalID, Verb: channels.VerbDeny, Ack: p.Ack()}})
	channeltest.WaitFor(t, "the late press refused", func() bool { return h.audit.count("channel.action_refused") == 1 })
	if h.agent.writes.Load() != 1 {
		t.Errorf("writes = %d, want the web decision's 1", h.agent.writes.Load())
	}
}

func TestQuestionAnsweredByTheNextMessage(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	h.agent.gate.Store(true)
	h.agent.ask.Store(true)
	p.Deliver(msg(owner, dm, "paint it"))
	card := cardOf(t, p, dm)
	if !card.Prompt.Question || !strings.Contains(card.Text, "Which colour?") {
		t.Fatalf("question prompt: %+v", card)
	}
	p.Deliver(msg(owner, dm, "blue"))
	channeltest.WaitFor(t, "the answer used", func() bool { _, ok := p.FindText(dm, "Colour: blue"); return ok })
}

func TestOutboxRetriesInOrderAndGivesUpOnPermanentErrors(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	p.Lim.Edit = false
	p.Fail(errors.New("connection reset"), &channels.RetryAfterError{Err: errors.New("429"), After: 20 * time.Millisecond})
	h := newHarness(t, dbPath(t), p, hopts{})
	p.Deliver(msg(owner, dm, "first"))
	channeltest.WaitFor(t, "the reply after two failures", func() bool { _, ok := p.FindText(dm, "You said: first"); return ok })
	p.Fail(channels.Permanent(errors.New("message rejected")))
	p.Deliver(msg(owner, dm, "second"))
	channeltest.WaitFor(t, "the failure audited", func() bool { return h.audit.count("channel.send_failed") == 1 })
	p.Deliver(msg(owner, dm, "third"))
	channeltest.WaitFor(t, "the next reply still goes", func() bool { _, ok := p.FindText(dm, "You said: third"); return ok })
	items, err := h.store.Outbox(context.Background(), "fake", 10)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, it := range items {
		states[it.State]++
	}
	if states["failed"] != 1 || states["sent"] != 2 {
		t.Errorf("outbox states %v; want 2 sent and 1 failed", states)
	}
}

// TestInDoubtSendsAfterACrash: a send the platform accepted but the relay
// never recorded (the process died in between) is looked up or resent
// under its key, by what the platform offers.
func TestInDoubtSendsAfterACrash(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		idempotent bool
		finder     bool
		wantShown  int
		wantSends  int
	}{
		{"idempotent", true, false, 1, 2},
		{"finder", false, true, 1, 1},
		{"neither", false, false, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := dbPath(t)
			p := channeltest.New()
			p.Lim.Idempotent = tc.idempotent
			var plat channels.Platform = p
			if tc.finder {
				plat = channeltest.FinderPlatform{Platform: p}
			}
			db, err := store.Open(ctx, path, channels.Schema)
			if err != nil {
				t.Fatal(err)
			}
			st := channels.NewStore(db, nil)
			if err := st.Enqueue(ctx, channels.Item{Channel: "fake", Conv: dm, Key: "fake:final:t1:0", Text: "the final reply"}); err != nil {
				t.Fatal(err)
			}
			items, _ := st.Unsent(ctx, "fake")
			// The crash: the attempt was recorded and the platform posted
			// the message, but the confirmation was never written.
			if err := st.Attempt(ctx, items[0].ID); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Send(ctx, dm, channels.Outgoing{Key: "fake:final:t1:0", Text: "the final reply"}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			h := newHarness(t, path, p, hopts{platform: plat})
			channeltest.WaitFor(t, "the item settled", func() bool {
				items, _ := h.store.Unsent(ctx, "fake")
				return len(items) == 0
			})
			if n := len(p.Messages(dm)); n != tc.wantShown {
				t.Errorf("the reply shows %d times, want %d", n, tc.wantShown)
			}
			if n := p.Sends(); n != tc.wantSends {
				t.Errorf("%d sends, want %d", n, tc.wantSends)
			}
		})
	}
}

type fakeSTT struct{}

func (fakeSTT) Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error) {
	if !strings.HasPrefix(string(audio), "OggS") {
		return "", errors.New("bad audio")
	}
	return "remind me to buy milk", nil
}

type fakeTTS struct{}

func (fakeTTS) Speak(ctx context.Context, text string) ([]byte, string, error) {
	return []byte("OggS " + text), "audio/ogg", nil
}

type failingAgent struct{}

func (failingAgent) Submit(context.Context, string, string, channels.Submit) error {
	return errors.New("the budget for today is spent")
}

// Two notices answering one update (the transcript, then why the turn
// could not start) are two messages, not one swallowed by the other.
func TestSeveralNoticesForOneUpdate(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	newHarness(t, dbPath(t), p, hopts{stt: fakeSTT{}, agent: failingAgent{}})
	u := msg(owner, dm, "")
	u.Voice = &channels.Voice{Size: 3, Mime: "audio/ogg", Fetch: func(context.Context) ([]byte, error) { return []byte("OggS\x00\x02fake opus"), nil }}
	p.Deliver(u)
	channeltest.WaitFor(t, "both notices", func() bool {
		_, a := p.FindText(dm, "🎤")
		_, b := p.FindText(dm, "budget for today")
		return a && b
	})
}

func TestVoiceNotes(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{stt: fakeSTT{}, tts: fakeTTS{}})
	u := msg(owner, dm, "")
	u.Voice = &channels.Voice{Size: 3, Mime: "audio/ogg", Fetch: func(context.Context) ([]byte, error) { return []byte("OggS\x00\x02fake opus"), nil }}
	p.Deliver(u)
	channeltest.WaitFor(t, "the transcribed turn", func() bool { _, ok := p.FindText(dm, "You said: remind me to buy milk"); return ok })
	big := msg(owner, dm, "")
	big.Voice = &channels.Voice{Size: 100 << 20, Fetch: func(context.Context) ([]byte, error) { t.Error("fetched an oversized note"); return nil, nil }}
	p.Deliver(big)
	channeltest.WaitFor(t, "the size refusal", func() bool { _, ok := p.FindText(dm, "at most 20 MB"); return ok })
	if _, ok := p.FindText(dm, "🎤 _remind me to buy milk_"); !ok {
		t.Error("the transcript was not shown before the turn acted on it")
	}
	// A voice note is answered aloud as well (mode "voice", the default);
	// a written message is not.
	channeltest.WaitFor(t, "the spoken reply", func() bool { return len(p.Voices()) == 1 })
	if v := p.Voices()[0]; v != dm+" audio/ogg OggS You said: remind me to buy milk" {
		t.Errorf("spoken reply %q", v)
	}
	p.Deliver(msg(owner, dm, "written"))
	channeltest.WaitFor(t, "the written reply", func() bool { _, ok := p.FindText(dm, "You said: written"); return ok })
	// A note whose bytes are not the format it claims is refused unheard.
	fake := msg(owner, dm, "")
	fake.Voice = &channels.Voice{Size: 4, Mime: "audio/ogg", Fetch: func(context.Context) ([]byte, error) { return []byte("MZ\x90\x00"), nil }}
	p.Deliver(fake)
	channeltest.WaitFor(t, "the format refusal", func() bool { _, ok := p.FindText(dm, "not the audio format it claims"); return ok })
	if texts, _ := h.agent.submits(); len(texts) != 2 {
		t.Errorf("turns %q", texts)
	}
	time.Sleep(30 * time.Millisecond)
	if n := len(p.Voices()); n != 1 {
		t.Errorf("%d spoken replies, want only the voice note's", n)
	}
}

func TestSplitKeepsFencesBalanced(t *testing.T) {
	t.Parallel()
	md := "intro\n\n```\n" + strings.Repeat("code line\n", 100) + "```\nafter"
	parts := channels.Split(md, 200)
	if len(parts) < 5 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts {
		if n := len([]rune(p)); n > 200 {
			t.Errorf("part %d has %d runes", i, n)
		}
		if strings.Count(p, "```")%2 != 0 {
			t.Errorf("part %d has an unbalanced fence: %q", i, p)
		}
	}
}

func TestNotifyOwnerPostsInTheOwnersConversationOnce(t *testing.T) {
	t.Parallel()
	p := channeltest.New()
	h := newHarness(t, dbPath(t), p, hopts{})
	ctx := context.Background()
	if err := h.relay.NotifyOwner(ctx, "job-run:1", "Daily brief", "Nothing today."); err == nil || !strings.Contains(err.Error(), "has not written") {
		t.Fatalf("before the owner wrote: %v", err)
	}
	p.Deliver(msg(contact, "D2", "hi"))
	p.Deliver(msg(owner, dm, "hello"))
	channeltest.WaitFor(t, "the owner's chat", func() bool { _, ok := p.FindText(dm, "You said: hello"); return ok })
	for range 2 { // the same notice twice posts once
		if err := h.relay.NotifyOwner(ctx, "job-run:1", "Daily brief", "Nothing today."); err != nil {
			t.Fatal(err)
		}
	}
	channeltest.WaitFor(t, "the notice", func() bool { _, ok := p.FindText(dm, "**Daily brief**"); return ok })
	time.Sleep(30 * time.Millisecond)
	n := 0
	for _, m := range p.Messages(dm) {
		if strings.Contains(m.Text, "Daily brief") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the notice was posted %d times", n)
	}
	if _, ok := p.FindText("D2", "Daily brief"); ok {
		t.Error("a contact's conversation got the owner's notice")
	}
}
