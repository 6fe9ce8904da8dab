package telegram

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

const owner = 42

// fakeAgent plays a turn on the real bus and broker: it streams the reply
// and, when asked to, first requests an approval and "writes" on approve.
type fakeAgent struct {
	bus     *events.Bus
	broker  *approval.Broker
	gate    bool
	ask     bool // ask a question instead of an approval
	writes  atomic.Int32
	burst   int           // publish this many one-character deltas in a tight loop
	pace    time.Duration // pause between deltas (a model streaming slowly)
	mu      sync.Mutex
	texts   []string
	decided chan approval.Decision
}

func (f *fakeAgent) Submit(ctx context.Context, chatID, text string, _ channels.Submit) error {
	f.mu.Lock()
	f.texts = append(f.texts, text)
	n := len(f.texts)
	f.mu.Unlock()
	go func() {
		turn := fmt.Sprintf("t_%d", n)
		f.bus.Publish("turn.started", chatID, map[string]any{"turn_id": turn})
		reply := "You said: " + text
		final := reply
		if f.gate {
			req := approval.Request{ChatID: chatID, TurnID: turn, Tool: "write_file", Preview: "write <x.txt>", Risk: "medium"}
			if f.ask {
				req = approval.Request{ChatID: chatID, TurnID: turn, Kind: approval.KindQuestion, Question: "Which colour?", Choices: []string{"red", "blue"}}
			}
			_, d := f.broker.Ask(context.Background(), req, false)
			if f.decided != nil {
				f.decided <- d
			}
			if d.Runs() {
				f.writes.Add(1)
			} else {
				reply = "Not written: " + string(d.Outcome)
				final = reply
			}
		}
		if f.burst > 0 {
			// Thousands of deltas in a tight loop: more than any reader
			// keeps up with, so the bus sheds the follower mid-turn.
			reply = ""
			for i := 0; i < f.burst; i++ {
				c := string(rune('a' + i%26))
				reply += c
				f.bus.Publish("message.delta", chatID, map[string]any{"turn_id": turn, "step": 0, "text": c})
			}
			final = reply
			reply = ""
		}
		// A few dozen deltas, as a model streams; far fewer than the
		// bus buffers for one subscriber.
		for len(reply) > 0 {
			n := min(len(reply), 200)
			f.bus.Publish("message.delta", chatID, map[string]any{"turn_id": turn, "step": 0, "text": reply[:n]})
			reply = reply[n:]
			if f.pace > 0 {
				time.Sleep(f.pace)
			}
		}
		f.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": turn, "ok": true, "text": final}})
	}()
	return nil
}

func (f *fakeAgent) Texts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.texts...)
}

type fakeChats struct{ n atomic.Int32 }

func (c *fakeChats) Create(ctx context.Context, title string) (string, error) {
	return fmt.Sprintf("c_%d", c.n.Add(1)), nil
}
func (c *fakeChats) Exists(ctx context.Context, id string) (bool, error) { return true, nil }

type fakeSTT struct{ calls atomic.Int32 }

func (s *fakeSTT) Transcribe(ctx context.Context, audio []byte, filename, mime string) (string, error) {
	s.calls.Add(1)
	return "remind me to buy milk", nil
}

type harness struct {
	bus    *events.Bus
	tg     *tgtest.Server
	agent  *fakeAgent
	broker *approval.Broker
	store  *Store
	stt    *fakeSTT
	bot    *Bot
	stop   func()
}

func newHarness(t *testing.T, dbPath string, tg *tgtest.Server, withSTT bool) *harness {
	t.Helper()
	return newHarnessWith(t, dbPath, tg, hopts{stt: withSTT})
}

// hopts vary the harness: the subscriber buffer of the bus, and the
// bot's config and dependencies.
type hopts struct {
	stt  bool
	bufN int
	cfg  func(*Config)
	deps func(*Deps)
}

func newHarnessWith(t *testing.T, dbPath string, tg *tgtest.Server, o hopts) *harness {
	t.Helper()
	withSTT := o.stt
	db, err := store.Open(context.Background(), dbPath, Schema)
	if err != nil {
		t.Fatal(err)
	}
	chdb, err := store.Open(context.Background(), strings.TrimSuffix(dbPath, ".db")+"-channels.db", channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus(nil, 0, o.bufN)
	broker := approval.New(approval.Options{Timeout: time.Minute, ApproversFor: bus.ApproversFor, Notify: notifier{bus}})
	h := &harness{bus: bus, tg: tg, broker: broker, store: NewStore(db), stt: &fakeSTT{}}
	h.agent = &fakeAgent{bus: bus, broker: broker}
	d := Deps{API: NewClient(tg.URL, tgtest.Token), Store: h.store, Channels: channels.NewStore(chdb, nil), Agent: h.agent, Chats: &fakeChats{}, Approvals: broker, Bus: bus}
	if withSTT {
		d.Transcriber = h.stt
	}
	cfg := Config{Owner: owner, Users: map[int64][]devices.Scope{owner: {devices.Chat, devices.Approve, devices.Read}}, PollTimeout: time.Second, EditInterval: 20 * time.Millisecond, MaxVoiceBytes: 1 << 20}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if o.deps != nil {
		o.deps(&d)
	}
	h.bot = New(cfg, d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.bot.Run(ctx) }()
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("bot: %v", err)
			}
			bus.Close()
			db.Close()
			chdb.Close()
		})
	}
	t.Cleanup(h.stop)
	return h
}

// notifier publishes broker events as the agent's Notifier does.
type notifier struct{ bus *events.Bus }

func (n notifier) Requested(r approval.Request) {
	n.bus.Publish("approval.requested", r.ChatID, map[string]any{"approval": r})
}
func (n notifier) Resolved(r approval.Request, d approval.Decision) {
	n.bus.Publish("approval.resolved", r.ChatID, map[string]any{"id": r.ID, "kind": r.Kind, "decision": d.Outcome})
}

func TestOffsetPersistsAcrossRestart(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "telegram.db")
	tg := tgtest.New(t)
	h := newHarness(t, dbPath, tg, false)
	tg.SendText(owner, "one")
	last := tg.SendText(owner, "two")
	tgtest.WaitFor(t, "both replies", func() bool {
		_, ok := findMsg(tg, owner, "You said: two")
		return ok
	})
	h.stop()
	// A new bot on the same database asks for the next update only, so
	// nothing is answered twice.
	h2 := newHarness(t, dbPath, tg, false)
	tg.SendText(owner, "three")
	tgtest.WaitFor(t, "the third reply", func() bool {
		_, ok := findMsg(tg, owner, "You said: three")
		return ok
	})
	if got := h2.agent.Texts(); len(got) != 1 || got[0] != "three" {
		t.Fatalf("restarted bot handled %v", got)
	}
	offs := tg.Offsets()
	resumed := false
	for _, o := range offs {
		resumed = resumed || o == last+1
	}
	if !resumed {
		t.Fatalf("offsets %v never resumed at %d", offs, last+1)
	}
}

func findMsg(tg *tgtest.Server, chat int64, s string) (tgtest.Sent, bool) {
	msgs := tg.Messages(chat)
	for i := len(msgs) - 1; i >= 0; i-- {
		if strings.Contains(msgs[i].Text, s) {
			return msgs[i], true
		}
	}
	return tgtest.Sent{}, false
}

// A card decided elsewhere (the web app) loses its buttons, and a later
// press on it is refused without a second decision.
func TestCardWithdrawnWhenDecidedElsewhere(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	h := newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
	h.agent.gate = true
	h.agent.decided = make(chan approval.Decision, 1)
	tg.SendText(owner, "write it")
	var card tgtest.Sent
	tgtest.WaitFor(t, "the card", func() bool {
		var ok bool
		card, ok = findMsg(tg, owner, "Approval needed")
		return ok
	})
	pending := h.broker.Pending("")
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	if _, err := h.broker.Decide(pending[0].ID, approval.Decision{Outcome: approval.Deny}); err != nil {
		t.Fatal(err)
	}
	if d := <-h.agent.decided; d.Outcome != approval.Deny {
		t.Fatalf("decision %v", d)
	}
	tgtest.WaitFor(t, "the buttons to go", func() bool {
		c, _ := findMsg(tg, owner, "Approval needed")
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Denied")
	})
	id := tg.Press(owner, owner, card.MessageID, "a:"+pending[0].ID+":ok")
	tgtest.WaitFor(t, "the late press answer", func() bool { _, ok := tg.Answer(id); return ok })
	if n, _ := tg.Answer(id); !strings.Contains(n, "Already decided") {
		t.Fatalf("late press answered %q", n)
	}
	if h.agent.writes.Load() != 0 {
		t.Fatal("a denied write ran")
	}
	// Malformed and unknown callback data are refused too.
	for _, data := range []string{"", "a::ok", "a:a_nope:ok", "a:" + pending[0].ID + ":sudo", "x:y:z"} {
		id := tg.Press(owner, owner, card.MessageID, data)
		tgtest.WaitFor(t, "answer to "+data, func() bool { _, ok := tg.Answer(id); return ok })
	}
}

func TestStreamingEditsAndLongReplies(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
	long := strings.Repeat("lorem ipsum ", 800) // ~9600 characters
	tg.SendText(owner, long)
	tgtest.WaitFor(t, "the split reply", func() bool {
		return len(tg.Messages(owner)) >= 3
	})
	total := 0
	tgtest.WaitFor(t, "every word", func() bool {
		total = 0
		for _, m := range tg.Messages(owner) {
			total += strings.Count(m.Text, "lorem")
		}
		return total == 800
	})
}

func TestVoiceNotes(t *testing.T) {
	t.Parallel()
	ogg := append([]byte("OggS"), make([]byte, 200)...)
	t.Run("not configured", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		h := newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
		tg.AddFile("v1", ogg)
		tg.SendVoice(owner, "v1", "audio/ogg", int64(len(ogg)))
		tgtest.WaitFor(t, "the refusal", func() bool { _, ok := findMsg(tg, owner, "not configured"); return ok })
		if len(h.agent.Texts()) != 0 {
			t.Fatal("a turn ran")
		}
	})
	t.Run("refusals and a transcript", func(t *testing.T) {
		t.Parallel()
		tg := tgtest.New(t)
		h := newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, true)
		tg.AddFile("big", ogg)
		tg.SendVoice(owner, "big", "audio/ogg", 50<<20)
		tgtest.WaitFor(t, "the size refusal", func() bool { _, ok := findMsg(tg, owner, "50.0 MB"); return ok })
		tg.AddFile("midi", []byte("MThd\x00\x00\x00\x06"))
		tg.SendVoice(owner, "midi", "audio/midi", 8)
		tgtest.WaitFor(t, "the codec refusal", func() bool { _, ok := findMsg(tg, owner, "audio/midi"); return ok })
		tg.AddFile("fake", []byte("#!/bin/sh\necho not audio"))
		tg.SendVoice(owner, "fake", "audio/ogg", 24)
		tgtest.WaitFor(t, "the content refusal", func() bool { _, ok := findMsg(tg, owner, "not the audio format"); return ok })
		if h.stt.calls.Load() != 0 || len(h.agent.Texts()) != 0 {
			t.Fatal("a refused voice note was transcribed or ran")
		}
		tg.AddFile("ok", ogg)
		tg.SendVoice(owner, "ok", "audio/ogg", int64(len(ogg)))
		tgtest.WaitFor(t, "the reply to the transcript", func() bool { _, ok := findMsg(tg, owner, "You said: remind me to buy milk"); return ok })
		if _, ok := findMsg(tg, owner, "🎤"); !ok {
			t.Fatal("the transcript was not shown")
		}
	})
}

func TestAllowTenMinutesAndQuestions(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	h := newHarness(t, filepath.Join(t.TempDir(), "telegram.db"), tg, false)
	h.agent.gate = true
	h.agent.decided = make(chan approval.Decision, 1)
	tg.SendText(owner, "write it")
	var card tgtest.Sent
	tgtest.WaitFor(t, "the card", func() bool {
		var ok bool
		card, ok = findMsg(tg, owner, "Approval needed")
		return ok
	})
	var allow string
	for _, row := range card.Buttons {
		for _, b := range row {
			if strings.Contains(b.Text, "10 min") {
				allow = b.CallbackData
			}
		}
	}
	if allow == "" || !strings.Contains(card.Text, "write &lt;x.txt&gt;") {
		t.Fatalf("card %+v", card)
	}
	press := tg.Press(owner, owner, card.MessageID, allow)
	if d := <-h.agent.decided; d.Outcome != approval.Approve || d.Mode != "allow_10m" {
		t.Fatalf("decision %+v", d)
	}
	tgtest.WaitFor(t, "the card to close", func() bool {
		c, _ := findMsg(tg, owner, "Approval needed")
		n, _ := tg.Answer(press)
		return len(c.Buttons) == 0 && strings.Contains(c.Text, "Approved") && strings.Contains(n, "10 minutes")
	})
	if h.agent.writes.Load() != 1 {
		t.Fatal("the approved write did not run once")
	}

	// A question is answered by the next message, which starts no turn.
	h.agent.ask = true
	tg.SendText(owner, "paint it")
	tgtest.WaitFor(t, "the question", func() bool { _, ok := findMsg(tg, owner, "Which colour?"); return ok })
	tg.SendText(owner, "blue")
	if d := <-h.agent.decided; d.Outcome != approval.Answer || d.Answer != "blue" {
		t.Fatalf("answer %+v", d)
	}
	if got := h.agent.Texts(); len(got) != 2 {
		t.Fatalf("the answer started a turn: %v", got)
	}
}
