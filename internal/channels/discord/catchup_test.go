package discord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
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
	if err := st.SetChat(context.Background(), channels.Mapping{Channel: "discord", Conv: conv, Sender: owner.ID, ChatID: "chat-" + conv}); err != nil {
		t.Fatal(err)
	}
}

// running is one Receive of an adapter whose updates are recorded.
type running struct {
	a      *Adapter
	srv    *discordtest.Server
	logs   *syncBuf
	ch     chan channels.Update
	cancel context.CancelFunc
	done   chan error
}

// runWith starts a new adapter (the daemon, perhaps after a restart) on
// srv, catching up with cs, and waits for its session.
func runWith(t *testing.T, srv *discordtest.Server, cs *channels.Cursors) *running {
	t.Helper()
	a, logs := newAdapter(t, srv, discordtest.Token)
	a.CatchUpWith(cs)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{a: a, srv: srv, logs: logs, ch: make(chan channels.Update, 200), cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- a.Receive(ctx, func(_ context.Context, u channels.Update) { r.ch <- u })
	}()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	waitLong(t, "READY", func() bool { id, _ := a.self(); return id == discordtest.BotID && srv.Ready() })
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

// upTo sends a live marker and returns the updates before it: the
// session's catch-up is queued ahead of its events, so whatever it
// delivers comes first. Markers are left out: one sent while a catch-up
// was reading comes both ways (the relay drops the second).
func (r *running) upTo(t *testing.T) []string {
	t.Helper()
	id := r.srv.DM(owner, "marker")
	var out []string
	for {
		u := r.next(t)
		switch {
		case u.ID == id:
			return out
		case u.Text != "marker":
			out = append(out, u.Text)
		}
	}
}

func (r *running) logged(what string) func() bool {
	return func() bool { return strings.Contains(r.logs.String(), what) }
}

var hestiaBot = discordtest.User{ID: discordtest.BotID, Name: "hestia", Bot: true}

func TestCatchUpDeliversWhatWasMissedAfterARestart(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	path := filepath.Join(t.TempDir(), "channels.db")
	st, closeDB := openStore(t, path)
	mapConv(t, st, ch)

	// Before the stop: one message delivered live.
	r := runWith(t, srv, channels.NewCursors(st, "discord", ""))
	waitLong(t, "the first catch-up", r.logged("discordCatchUpDone"))
	live := srv.DM(owner, "live before the stop")
	if u := r.next(t); u.ID != live {
		t.Fatalf("live update = %+v", u)
	}
	r.stop(t)
	closeDB()

	// While stopped: the owner writes (to a session nobody will resume),
	// and the bot and another bot post.
	srv.DM(owner, "one")
	srv.AddMessage(hestiaBot, ch, "the bot's own", time.Now())
	srv.AddMessage(otherBot, ch, "beep", time.Now())
	srv.DM(owner, "two")

	// The restart: a new adapter and session, the same channels.db.
	st2, _ := openStore(t, path)
	r2 := runWith(t, srv, channels.NewCursors(st2, "discord", ""))
	if got := r2.upTo(t); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("caught up %q; want [one two] once each, in order, without the live one or any bot's", got)
	}
	if n := srv.Identifies(); n != 2 {
		t.Errorf("%d sessions identified, want 2 (nothing was resumed)", n)
	}
	if cur, _ := st2.Cursor(context.Background(), "discord", ch); cur == "" || idLess(cur, live) {
		t.Errorf("cursor %q after the catch-up", cur)
	}
}

func TestCatchUpIsBounded(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, ch)
	// The last delivered message was 30 hours ago.
	if err := st.SetCursor(context.Background(), "discord", ch, snowflakeAt(time.Now().Add(-30*time.Hour))); err != nil {
		t.Fatal(err)
	}
	srv.AddMessage(owner, ch, "26 hours ago", time.Now().Add(-26*time.Hour))
	var want []string
	base := time.Now().Add(-time.Hour)
	for i := range 55 {
		text := fmt.Sprintf("m%02d", i)
		srv.AddMessage(owner, ch, text, base.Add(time.Duration(2*i)*time.Second))
		if i == 30 {
			srv.AddMessage(hestiaBot, ch, "the bot's own", base.Add(time.Duration(2*i+1)*time.Second))
			srv.AddMessage(otherBot, ch, "beep", base.Add(time.Duration(2*i+1)*time.Second))
		}
		// 57 messages in the window: the newest 50 are read, two of
		// them the bots'.
		if i >= 7 {
			want = append(want, text)
		}
	}
	r := runWith(t, srv, channels.NewCursors(st, "discord", ""))
	// The marker must not be among the 50 read.
	waitLong(t, "the catch-up", r.logged("discordCatchUpDone"))
	if got := r.upTo(t); !slices.Equal(got, want) {
		t.Errorf("caught up %d messages %q\nwant the newest 50 read, bots' skipped: %q", len(got), got, want)
	}
	for _, line := range []string{"discordCatchUpWindow", "discordCatchUpTruncated", "skipped=7"} {
		if !strings.Contains(r.logs.String(), line) {
			t.Errorf("the log does not say %q:\n%s", line, r.logs.String())
		}
	}
}

func TestCatchUpOnANewSessionOnly(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, ch)
	r := runWith(t, srv, channels.NewCursors(st, "discord", ""))
	const list = "GET /channels/{cid}/messages"
	if got := r.upTo(t); len(got) != 0 || srv.Calls(list) != 1 {
		t.Fatalf("first catch-up: %q, %d reads", got, srv.Calls(list))
	}

	// A drop is resumed: Discord replays what was missed, nothing is read.
	srv.Drop()
	srv.DM(owner, "during the drop")
	waitLong(t, "the resume", func() bool { return srv.Resumes() == 1 && srv.Ready() })
	if got := r.upTo(t); !slices.Equal(got, []string{"during the drop"}) || srv.Calls(list) != 1 {
		t.Errorf("after a resume: %q, %d reads; want the replayed message and no catch-up", got, srv.Calls(list))
	}

	// An invalidated session: the new one replays nothing; the catch-up
	// finds what was missed.
	srv.AddMessage(owner, ch, "missed", time.Now())
	srv.InvalidateNextResume()
	srv.Drop()
	waitLong(t, "a new session", func() bool { return srv.Identifies() == 2 && srv.Ready() })
	if got := r.upTo(t); !slices.Equal(got, []string{"missed"}) || srv.Calls(list) != 2 {
		t.Errorf("after a new session: %q, %d reads; want [missed] and a second catch-up", got, srv.Calls(list))
	}
}

func TestCatchUpWaitsOutARateLimit(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, ch)
	srv.AddMessage(owner, ch, "missed", time.Now())
	srv.Throttle("GET /channels/{cid}/messages", 1)
	start := time.Now()
	r := runWith(t, srv, channels.NewCursors(st, "discord", ""))
	if u := r.next(t); u.Text != "missed" || u.Conv != ch || !u.Private {
		t.Fatalf("update = %+v, want the missed message", u)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("the message came %s after start, before retry_after's second", waited)
	}
	if n := srv.Calls("GET /channels/{cid}/messages"); n != 2 {
		t.Errorf("messages read %d times, want 2 (429, then the answer)", n)
	}
	if !strings.Contains(r.logs.String(), "discordCatchUpRateLimited") {
		t.Errorf("the wait is not logged:\n%s", r.logs.String())
	}
}

func TestCatchUpFailureLeavesLiveReceiving(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	st, _ := openStore(t, filepath.Join(t.TempDir(), "channels.db"))
	mapConv(t, st, ch)
	mapConv(t, st, "4000000000000000009") // a channel Discord no longer has
	srv.AddMessage(owner, ch, "missed", time.Now())
	// Both conversations' reads fail, whichever goes first.
	srv.Fail("GET /channels/{cid}/messages", 500, 0, "Internal Server Error")
	srv.Fail("GET /channels/{cid}/messages", 500, 0, "Internal Server Error")
	r := runWith(t, srv, channels.NewCursors(st, "discord", ""))
	if got := r.upTo(t); len(got) != 0 {
		t.Errorf("updates from a failed catch-up: %q", got)
	}
	id := srv.DM(owner, "still here")
	if u := r.next(t); u.ID != id {
		t.Errorf("live update after a failed catch-up = %+v", u)
	}
	if n := srv.Identifies(); n != 1 {
		t.Errorf("%d sessions; a failed catch-up must not cost the session", n)
	}
	for _, w := range []string{"discordCatchUpFailed", "HTTP 500"} {
		if !strings.Contains(r.logs.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, r.logs.String())
		}
	}
	// The live messages did not move the cursor past what was missed:
	// the next session finds it.
	srv.InvalidateNextResume()
	srv.Drop()
	waitLong(t, "a new session", func() bool { return srv.Identifies() == 2 && srv.Ready() })
	got := r.upTo(t)
	if len(got) == 0 || got[0] != "missed" {
		t.Errorf("the next session caught up %q; want missed first (then what was already delivered, for the relay to drop)", got)
	}
	if !strings.Contains(r.logs.String(), "Unknown Channel") {
		t.Errorf("the vanished channel is not logged:\n%s", r.logs.String())
	}
}

func TestSnowflakeOrder(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := snowflakeAt(at); got != fmt.Sprint(uint64(at.UnixMilli()-discordEpoch)<<22) {
		t.Errorf("snowflakeAt = %s", got)
	}
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"999", "1000", true},
		{"1200000000000000001", "1200000000000000002", true},
		{"1200000000000000002", "1200000000000000001", false},
		{"99999999999999999", "1200000000000000001", true},
		{"18446744073709551615", "9999999999999999999", false},
		{"5", "5", false},
	} {
		if got := idLess(c.a, c.b); got != c.less {
			t.Errorf("idLess(%s, %s) = %v", c.a, c.b, got)
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

// startRelay runs a relay for a new adapter on srv over channels.db at
// path and waits for its session; stop ends it and closes the database.
func startRelay(t *testing.T, srv *discordtest.Server, path string, logs *syncBuf) (*answeringAgent, func()) {
	t.Helper()
	st, closeDB := openStore(t, path)
	bus := events.NewBus(nil, 0, 0)
	agent := &answeringAgent{bus: bus}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := New(Config{Name: "discord", Token: discordtest.Token, APIURL: srv.API, Backoff: 20 * time.Millisecond}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	relay := channels.New(channels.Config{Label: "Discord", Users: map[string][]devices.Scope{owner.ID: {devices.Chat, devices.Approve, devices.Read}}, Owners: []string{owner.ID}},
		channels.Deps{Platform: a, Store: st, Agent: agent, Chats: oneChat{}, Approvals: noApprovals{}, Bus: bus, Log: log})
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
	waitLong(t, "READY", func() bool { id, _ := a.self(); return id == discordtest.BotID && srv.Ready() })
	return agent, stop
}

// botReplies returns the texts the bot posted in a channel.
func botReplies(srv *discordtest.Server, ch string) []string {
	var out []string
	for _, m := range srv.Messages(ch) {
		out = append(out, m.Content)
	}
	return out
}

func TestCatchUpThroughTheRelayAnswersOnce(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(time.Minute)
	ch := srv.DMChannel(owner)
	path := filepath.Join(t.TempDir(), "channels.db")
	logs := &syncBuf{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})

	agent, stop := startRelay(t, srv, path, logs)
	srv.DM(owner, "first")
	waitLong(t, "the first answer", func() bool { return slices.Contains(botReplies(srv, ch), "You said: first") })
	stop()
	if got := agent.submitted(); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("before the stop: turns %q", got)
	}

	// While the daemon is down the owner writes; after the restart, while
	// the catch-up waits out a rate limit, they write again, live — a
	// message the catch-up then reads too.
	srv.DM(owner, "second")
	srv.Throttle("GET /channels/{cid}/messages", 1)
	agent2, _ := startRelay(t, srv, path, logs)
	waitLong(t, "the catch-up rate limited", func() bool { return srv.Calls("GET /channels/{cid}/messages") >= 1 })
	srv.DM(owner, "third")
	waitLong(t, "both answered", func() bool {
		r := botReplies(srv, ch)
		return slices.Contains(r, "You said: second") && slices.Contains(r, "You said: third")
	})
	waitLong(t, "the live copy dropped", func() bool { return strings.Contains(logs.String(), "update already handled; skipped") })
	if got := agent2.submitted(); !slices.Equal(got, []string{"second", "third"}) {
		t.Errorf("after the restart: turns %q, want [second third] (the first not again, the third once)", got)
	}
	want := []string{"You said: first", "You said: second", "You said: third"}
	if got := botReplies(srv, ch); !slices.Equal(got, want) {
		t.Errorf("the bot posted %q, want %q", got, want)
	}
}
