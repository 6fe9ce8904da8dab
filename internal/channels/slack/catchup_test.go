package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
	"github.com/hestia-dev/hestia/internal/devices"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/store"
)

// Catch-up tests wait generously: they must hold on a loaded machine.
const catchUpWait = 30 * time.Second

func waitLong(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(catchUpWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openStore opens (or reopens: a restart) channels.db at path.
func openStore(t *testing.T, path string) (*channels.Store, func()) {
	t.Helper()
	db, err := store.Open(context.Background(), path, channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeDB := func() { once.Do(func() { db.Close() }) }
	t.Cleanup(closeDB)
	return channels.NewStore(db, nil), closeDB
}

func mapConv(t *testing.T, st *channels.Store, conv string) {
	t.Helper()
	if err := st.SetChat(context.Background(), channels.Mapping{Channel: "slack", Conv: conv, Sender: owner, ChatID: "chat-" + conv}); err != nil {
		t.Fatal(err)
	}
}

// newAdapterOn is another adapter on the same fake Slack (the daemon
// after a restart), logging to logs.
func newAdapterOn(t *testing.T, s *slacktest.Server, logs *syncBuffer) *Adapter {
	t.Helper()
	a, err := New(Config{APIURL: s.APIURL, BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: ModeSocket},
		&http.Client{Timeout: 10 * time.Second}, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// running is one Receive whose updates are recorded.
type running struct {
	ch     chan channels.Update
	cancel context.CancelFunc
	done   chan error
}

func run(t *testing.T, a *Adapter) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{ch: make(chan channels.Update, 200), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- a.Receive(ctx, func(_ context.Context, u channels.Update) { r.ch <- u })
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Receive at shutdown = %v", err)
		}
		r.done <- nil // a second stop returns at once
	case <-time.After(catchUpWait):
		t.Error("Receive did not return after its context ended")
	}
}

func (r *running) next(t *testing.T) channels.Update {
	t.Helper()
	select {
	case u := <-r.ch:
		return u
	case <-time.After(catchUpWait):
		t.Fatal("no update came")
	}
	return channels.Update{}
}

// upTo reads updates until the marker with ts arrives (a live message
// sent after the catch-up began), returning those before it: anything the
// catch-up delivers comes first, so nothing later can slip in. Markers
// are left out: one sent while a catch-up was reading comes both ways
// (the relay drops the second).
func (r *running) upTo(t *testing.T, ts string) []channels.Update {
	t.Helper()
	var out []channels.Update
	for {
		u := r.next(t)
		switch {
		case u.ID == dm+"/"+ts:
			return out
		case u.Text != "marker":
			out = append(out, u)
		}
	}
}

func texts(us []channels.Update) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Text)
	}
	return out
}

func TestCatchUpDeliversWhatWasMissedAfterARestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	f.s.SetAckTimeout(10 * time.Second) // no redelivery on a slow machine: every update below is counted
	path := filepath.Join(t.TempDir(), "channels.db")
	st, closeDB := openStore(t, path)
	mapConv(t, st, dm)

	// Before the stop: one message delivered live.
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	r := run(t, f.a)
	waitLong(t, "the first catch-up", func() bool { return strings.Contains(f.log.String(), "slack catch-up done") })
	liveTS := f.s.Say(dm, owner, "live before the stop", "")
	if u := r.next(t); u.Text != "live before the stop" {
		t.Fatalf("live update = %+v", u)
	}
	waitLong(t, "the live message acknowledged", func() bool { return f.s.Pending() == 0 })
	r.stop(t)
	closeDB()

	// While stopped: the owner writes at the top level and in a thread
	// that has its own chat; the bot and another app post too. Slack
	// delivers none of it to an app that is not connected.
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "one"})
	f.s.AddMessage(slacktest.Message{Channel: dm, User: slacktest.BotUserID, BotID: slacktest.BotID, Text: "the bot's own"})
	f.s.AddMessage(slacktest.Message{Channel: dm, User: "U0OTHERAPP", BotID: "B0OTHER", Text: "another app"})
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "in the thread", ThreadTS: liveTS})
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "two"})

	// The restart: a new adapter, the same channels.db.
	st2, _ := openStore(t, path)
	mapConv(t, st2, dm+"/"+liveTS)
	logs := &syncBuffer{}
	a2 := newAdapterOn(t, f.s, logs)
	a2.CatchUpWith(channels.NewCursors(st2, "slack", ""))
	r2 := run(t, a2)
	waitLong(t, "connected", f.s.Connected)
	got := r2.upTo(t, marker(f.s))

	var top, thread []string
	for _, u := range got {
		switch u.Conv {
		case dm:
			top = append(top, u.Text)
		case dm + "/" + liveTS:
			thread = append(thread, u.Text)
		default:
			t.Errorf("update in an unexpected conversation: %+v", u)
		}
		if !u.Private || u.Sender != owner || !strings.HasPrefix(u.ID, dm+"/") {
			t.Errorf("caught-up update = %+v", u)
		}
	}
	if !slices.Equal(top, []string{"one", "two"}) || !slices.Equal(thread, []string{"in the thread"}) {
		t.Errorf("caught up %q at the top level and %q in the thread; want [one two] and [in the thread], once each, in order, "+
			"without the live one or any bot's", top, thread)
	}
	if cur, _ := st2.Cursor(context.Background(), "slack", dm); cur == "" || tsLess(cur, got[len(got)-1].ID[len(dm)+1:]) {
		t.Errorf("cursor of %s = %q after the catch-up", dm, cur)
	}
	if !strings.Contains(logs.String(), "slack catch-up done") {
		t.Errorf("no catch-up line in the log:\n%s", logs.String())
	}
}

// marker sends a live message after whatever the catch-up delivers and
// returns its ts.
func marker(s *slacktest.Server) string {
	return s.Say(dm, owner, "marker", "")
}

func TestCatchUpIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	f.s.SetAckTimeout(10 * time.Second)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, dm)
	ctx := context.Background()
	// The last delivered message was 30 hours ago.
	if err := st.SetCursor(ctx, "slack", dm, slacktest.TS(time.Now().Add(-30*time.Hour))); err != nil {
		t.Fatal(err)
	}
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "26 hours ago", TS: slacktest.TS(time.Now().Add(-26 * time.Hour))})
	var want []string
	for i := range 55 {
		text := fmt.Sprintf("m%02d", i)
		f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: text})
		if i == 30 {
			f.s.AddMessage(slacktest.Message{Channel: dm, User: slacktest.BotUserID, BotID: slacktest.BotID, Text: "the bot's own"})
			f.s.AddMessage(slacktest.Message{Channel: dm, User: "U0OTHERAPP", BotID: "B0OTHER", Text: "another app"})
		}
		// 57 messages in the window: the newest 50 are read, two of
		// them the bots'.
		if i >= 7 {
			want = append(want, text)
		}
	}
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	r := run(t, f.a)
	// The marker must not be among the 50 read.
	waitLong(t, "the catch-up", func() bool { return strings.Contains(f.log.String(), "slack catch-up done") })
	got := texts(r.upTo(t, marker(f.s)))
	if !slices.Equal(got, want) {
		t.Errorf("caught up %d messages %q\nwant the newest 50 read, bots' skipped: %q", len(got), got, want)
	}
	for _, line := range []string{"only the last 24 hours are read", "the older ones are skipped"} {
		if !strings.Contains(f.log.String(), line) {
			t.Errorf("the log does not say %q:\n%s", line, f.log.String())
		}
	}
}

func TestCatchUpWaitsOutARateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	f.s.SetAckTimeout(10 * time.Second)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, dm)
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "missed"})
	f.s.Throttle("conversations.history", 1)
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	start := time.Now()
	r := run(t, f.a)
	if u := r.next(t); u.Text != "missed" || u.Conv != dm {
		t.Fatalf("update = %+v, want the missed message", u)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("the message came %s after start, before Retry-After's second", waited)
	}
	if n := f.s.Calls("conversations.history"); n != 2 {
		t.Errorf("conversations.history called %d times, want 2 (429, then the answer)", n)
	}
	if !strings.Contains(f.log.String(), "rate limited; waiting") {
		t.Errorf("the wait is not logged:\n%s", f.log.String())
	}
}

func TestCatchUpFailureLeavesLiveReceiving(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	f.s.SetAckTimeout(10 * time.Second)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, dm)
	mapConv(t, st, dm+"/1700000000.000001") // a thread Slack no longer has
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "missed"})
	f.s.Fail("conversations.history", "internal_error")
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	r := run(t, f.a)
	waitLong(t, "connected", f.s.Connected)
	if got := r.upTo(t, marker(f.s)); len(got) != 0 {
		t.Errorf("updates from a failed catch-up: %+v", got)
	}
	f.s.Say(dm, owner, "still here", "")
	if u := r.next(t); u.Text != "still here" {
		t.Errorf("live update after a failed catch-up = %+v", u)
	}
	if n := f.s.Connects(); n != 1 {
		t.Errorf("%d connections; a failed catch-up must not cost the connection", n)
	}
	for _, w := range []string{"internal_error", "thread_not_found", "live messages still arrive"} {
		if !strings.Contains(f.log.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, f.log.String())
		}
	}
	// The next connection tries again and finds the message.
	f.s.Disconnect("refresh_requested")
	waitLong(t, "a second connection", func() bool { return f.s.Connects() == 2 && f.s.Connected() })
	// The live message did not move the cursor past what was missed, so
	// it comes again too (the relay drops it).
	if got := texts(r.upTo(t, marker(f.s))); !slices.Equal(got, []string{"missed", "still here"}) {
		t.Errorf("after reconnecting, caught up %q; want [missed still here]", got)
	}
}

func TestCatchUpOnEveryNewConnection(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	f.s.SetAckTimeout(10 * time.Second)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, dm)
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	r := run(t, f.a)
	waitLong(t, "the first catch-up", func() bool { return strings.Contains(f.log.String(), "slack catch-up done") })
	f.s.Say(dm, owner, "hello", "")
	r.next(t)
	// Posted while Slack was moving the app to a new connection, and
	// never delivered.
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "between connections"})
	f.s.Disconnect("refresh_requested")
	waitLong(t, "a second connection", func() bool { return f.s.Connects() == 2 && f.s.Connected() })
	if got := texts(r.upTo(t, marker(f.s))); !slices.Equal(got, []string{"between connections"}) {
		t.Errorf("caught up %q; want [between connections] (and not hello again)\n%s", got, f.log.String())
	}
}

func TestCatchUpInEventsAPIMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeEvents)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, dm)
	f.s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "while the daemon was down"})
	f.a.CatchUpWith(channels.NewCursors(st, "slack", ""))
	r := run(t, f.a)
	if u := r.next(t); u.Text != "while the daemon was down" || u.Conv != dm || !u.Private {
		t.Errorf("update = %+v", u)
	}
}

func TestTSOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"1700000000.000001", "1700000000.000002", true},
		{"1700000000.000002", "1700000000.000001", false},
		{"999999999.900000", "1700000000.000001", true},
		{"1700000000.1", "1700000000.000002", false},
		{"1700000000.000001", "1700000000.000001", false},
	} {
		if got := tsLess(c.a, c.b); got != c.less {
			t.Errorf("tsLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// The relay end to end: a message that arrives both live and by
// catch-up is answered once, and one answered before the stop is not
// answered again.

type answeringAgent struct {
	bus   *events.Bus
	mu    sync.Mutex
	texts []string
}

func (g *answeringAgent) Submit(ctx context.Context, chatID, text string, _ channels.Submit) error {
	g.mu.Lock()
	g.texts = append(g.texts, text)
	g.mu.Unlock()
	// Turn ids are unique across restarts, as the agent's are: the reply's
	// outbox key is made from one.
	g.bus.Publish("turn.finished", chatID, map[string]any{"result": map[string]any{"turn_id": "turn-" + text, "ok": true, "text": "You said: " + text}})
	return nil
}

func (g *answeringAgent) submitted() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.texts)
}

type oneChat struct{}

func (oneChat) Create(context.Context, string) (string, error) { return "chat-1", nil }
func (oneChat) Exists(context.Context, string) (bool, error)   { return true, nil }

type noApprovals struct{}

func (noApprovals) Decide(string, approval.Decision) (approval.Decision, error) {
	return approval.Decision{}, errors.New("no approvals here")
}

// startRelay runs a relay for a new adapter on s over channels.db at
// path; stop ends it and closes the database.
func startRelay(t *testing.T, s *slacktest.Server, path string, logs *syncBuffer) (*answeringAgent, func()) {
	t.Helper()
	st, closeDB := openStore(t, path)
	bus := events.NewBus(nil, 0, 0)
	agent := &answeringAgent{bus: bus}
	a := newAdapterOn(t, s, logs)
	relay := channels.New(channels.Config{Label: "Slack", Users: map[string][]devices.Scope{owner: {devices.Chat, devices.Approve, devices.Read}}, Owners: []string{owner}},
		channels.Deps{Platform: a, Store: st, Agent: agent, Chats: oneChat{}, Approvals: noApprovals{}, Bus: bus,
			Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- relay.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("relay: %v", err)
				}
			case <-time.After(catchUpWait):
				t.Error("the relay did not stop")
			}
			bus.Close()
			closeDB()
		})
	}
	t.Cleanup(stop)
	return agent, stop
}

// replies returns the texts the bot posted in the DM.
func replies(s *slacktest.Server) []string {
	var out []string
	for _, m := range s.Messages(dm) {
		if m.BotID == slacktest.BotID {
			out = append(out, m.Text)
		}
	}
	return out
}

func TestCatchUpThroughTheRelayAnswersOnce(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	s.AddConversation(dm, slacktest.IM, true)
	s.AddUser(owner, "Anna")
	s.SetAckTimeout(time.Second) // a slow catch-up has the live copy sent again: still one answer
	path := filepath.Join(t.TempDir(), "channels.db")

	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	agent, stop := startRelay(t, s, path, logs)
	waitLong(t, "connected", s.Connected)
	s.Say(dm, owner, "first", "")
	waitLong(t, "the first answer", func() bool { return slices.Contains(replies(s), "You said: first") })
	waitLong(t, "every envelope acknowledged", func() bool { return s.Pending() == 0 })
	stop()
	if got := agent.submitted(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("before the stop: turns %q", got)
	}

	// While the daemon is down: one message Slack never delivers, and one
	// it still holds for the next connection (it is in the history too).
	s.AddMessage(slacktest.Message{Channel: dm, User: owner, Text: "second"})
	s.Say(dm, owner, "third", "")

	agent2, _ := startRelay(t, s, path, logs)
	waitLong(t, "both answered", func() bool {
		r := replies(s)
		return slices.Contains(r, "You said: second") && slices.Contains(r, "You said: third") && s.Pending() == 0
	})
	if got := agent2.submitted(); !slices.Equal(got, []string{"second", "third"}) {
		t.Errorf("after the restart: turns %q, want [second third] (the first not again, the third once)", got)
	}
	want := []string{"You said: first", "You said: second", "You said: third"}
	if got := replies(s); !slices.Equal(got, want) {
		t.Errorf("the bot posted %q, want %q", got, want)
	}
}
