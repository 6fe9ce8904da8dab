package discord

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/discord/discordtest"
)

var (
	owner    = discordtest.User{ID: "2100000000000000001", Name: "Anna"}
	stranger = discordtest.User{ID: "2100000000000000002", Name: "Mallory"}
	otherBot = discordtest.User{ID: "2100000000000000003", Name: "Spambot", Bot: true}
)

// syncBuf is a log sink tests read while the adapter writes.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type harness struct {
	srv     *discordtest.Server
	a       *Adapter
	logs    *syncBuf
	updates chan channels.Update
	// handle, when set, runs for each update before it is recorded.
	handle func(ctx context.Context, u channels.Update)
	cancel context.CancelFunc
	done   chan error
}

func newAdapter(t *testing.T, srv *discordtest.Server, token string) (*Adapter, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	a, err := New(Config{Name: "discord", Token: token, APIURL: srv.API, Backoff: 20 * time.Millisecond}, nil,
		slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	return a, logs
}

// start runs Receive against a fake whose heartbeat interval is interval
// and waits for READY.
func start(t *testing.T, interval time.Duration, setup ...func(*harness)) *harness {
	t.Helper()
	srv := discordtest.New(t)
	srv.SetHeartbeatInterval(interval)
	a, logs := newAdapter(t, srv, discordtest.Token)
	h := &harness{srv: srv, a: a, logs: logs, updates: make(chan channels.Update, 100), done: make(chan error, 1)}
	for _, f := range setup {
		f(h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		h.done <- a.Receive(ctx, func(ctx context.Context, u channels.Update) {
			if h.handle != nil {
				h.handle(ctx, u)
			}
			h.updates <- u
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Receive at shutdown: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Receive did not return after cancel")
		}
		if strings.Contains(logs.String(), discordtest.Token) {
			t.Error("the bot token was logged")
		}
	})
	h.waitReady(t)
	return h
}

func (h *harness) waitReady(t *testing.T) {
	t.Helper()
	waitFor(t, "READY", func() bool {
		id, _ := h.a.self()
		return id == discordtest.BotID && h.srv.Ready()
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) next(t *testing.T) channels.Update {
	t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no update arrived")
	}
	return channels.Update{}
}

// none checks no update is waiting (after the fake and adapter settle on
// a marker: a DM sent after the events under test arrives first).
func (h *harness) expectOnlyMarker(t *testing.T) {
	t.Helper()
	id := h.srv.DM(owner, "marker")
	u := h.next(t)
	if u.ID != id {
		t.Fatalf("expected only the marker, got %+v", u)
	}
}

func TestReceiveDirectMessage(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	id := h.srv.DM(owner, "hello **there**")
	u := h.next(t)
	want := channels.Update{ID: id, Conv: h.srv.DMChannel(owner), Sender: owner.ID, SenderName: "Anna", Private: true, Text: "hello **there**"}
	if u.ID != want.ID || u.Conv != want.Conv || u.Sender != want.Sender || u.SenderName != want.SenderName || !u.Private || u.Text != want.Text || u.Action != nil || u.ReplyTo != "" {
		t.Fatalf("update %+v, want %+v", u, want)
	}
	// Identify asked for exactly the two unprivileged intents.
	d := h.srv.IdentifyPayload()
	if got := int(d["intents"].(float64)); got != discordtest.IntentDirectMessages|discordtest.IntentGuildMessages {
		t.Errorf("intents %d", got)
	}
	// The channel's type was looked up once, not per message.
	h.srv.DM(owner, "again")
	h.next(t)
	if n := h.srv.Calls("GET /channels/{cid}"); n != 1 {
		t.Errorf("channel looked up %d times, want 1", n)
	}
}

func TestOwnAndBotMessagesSkipped(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ch := h.srv.DMChannel(owner)
	if _, err := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "k1", Text: "I am the bot"}); err != nil {
		t.Fatal(err)
	}
	h.srv.DM(otherBot, "beep")
	h.srv.Dispatch("MESSAGE_CREATE", map[string]any{"id": "3000000000000000001", "channel_id": ch, "type": 7, "content": "", "author": map[string]any{"id": owner.ID, "username": "anna"}})
	h.srv.Dispatch("MESSAGE_CREATE", map[string]any{"id": "3000000000000000002", "channel_id": ch, "type": 0, "content": "via hook", "webhook_id": "3000000000000000003", "author": map[string]any{"id": "3000000000000000003", "username": "hook"}})
	h.srv.DM(owner, "   ") // nothing to read
	h.expectOnlyMarker(t)
}

func TestGuildMessages(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	gc := h.srv.GuildChannel("4000000000000000001")
	h.srv.Post(stranger, gc, "just chatting")                                                // not addressed to the bot: skipped
	h.srv.Post(otherBot, gc, "<@"+discordtest.BotID+"> hi", discordtest.BotID)               // bots skipped
	id := h.srv.Post(stranger, gc, "<@"+discordtest.BotID+"> what's up?", discordtest.BotID) // addressed
	u := h.next(t)
	if u.ID != id || u.Private || u.Sender != stranger.ID || u.Text != "what's up?" || u.ReplyTo != id || u.SenderName != "Mallory (nick)" {
		t.Fatalf("guild update %+v", u)
	}
	// The answer quotes the message it answers.
	ref, err := h.a.Send(context.Background(), gc, channels.Outgoing{Key: "g1", Text: "I only talk in DMs.", ReplyTo: u.ReplyTo})
	if err != nil {
		t.Fatal(err)
	}
	if msgs := h.srv.Messages(gc); len(msgs) != 1 || msgs[0].ReplyTo != id || gc+"/"+msgs[0].ID != ref {
		t.Fatalf("reply %+v", msgs)
	}
	h.expectOnlyMarker(t)
}

func TestButtonPressRoundTrip(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute, func(h *harness) {
		h.handle = func(ctx context.Context, u channels.Update) {
			if u.Action != nil {
				u.Action.Ack(ctx, "✅ Approved")
			}
		}
	})
	ch := h.srv.DMChannel(owner)
	ref, err := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "p1", Text: "Run `rm -rf build`?\n\nReply **K7QF approve**",
		Prompt: &channels.Prompt{ApprovalID: "a_0123456789abcdef0123", Code: "K7QF"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := h.srv.Messages(ch)
	if len(msgs) != 1 || len(msgs[0].Buttons) != 3 {
		t.Fatalf("prompt %+v", msgs)
	}
	var ids []string
	for _, b := range msgs[0].Buttons {
		ids = append(ids, b.CustomID)
	}
	if strings.Join(ids, " ") != "a:a_0123456789abcdef0123:approve a:a_0123456789abcdef0123:deny a:a_0123456789abcdef0123:allow_10m" {
		t.Fatalf("custom ids %v", ids)
	}
	for _, verb := range []channels.Verb{channels.VerbApprove, channels.VerbAllow10m, channels.VerbDeny} {
		iid := h.srv.Press(owner, ref, "a:a_0123456789abcdef0123:"+string(verb))
		u := h.next(t)
		if u.ID != iid || u.Sender != owner.ID || !u.Private || u.Conv != ch || u.Action == nil ||
			u.Action.Ref != ref || u.Action.ApprovalID != "a_0123456789abcdef0123" || u.Action.Verb != verb {
			t.Fatalf("press update %+v action %+v", u, u.Action)
		}
		waitFor(t, "the press answered", func() bool { return h.srv.Interaction(iid).Response != nil })
		r := h.srv.Interaction(iid).Response
		if r.Type != callbackMessage || r.Content != "✅ Approved" || r.Flags != flagEphemeral || r.At > 3*time.Second {
			t.Fatalf("answer %+v", r)
		}
	}
	// Closing the prompt removes its buttons.
	if err := h.a.Edit(context.Background(), ch, ref, channels.Outgoing{Text: "Run it? — approved", Prompt: &channels.Prompt{ApprovalID: "a_0123456789abcdef0123", Closed: true}}); err != nil {
		t.Fatal(err)
	}
	if m := h.srv.Messages(ch)[0]; len(m.Buttons) != 0 || m.Content != "Run it? — approved" || m.Edits != 1 {
		t.Fatalf("closed prompt %+v", m)
	}
}

func TestQuestionPromptHasOneButton(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ch := h.srv.DMChannel(owner)
	if _, err := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "q1", Text: "Which colour?", Prompt: &channels.Prompt{ApprovalID: "a_q", Question: true}}); err != nil {
		t.Fatal(err)
	}
	b := h.srv.Messages(ch)[0].Buttons
	if len(b) != 1 || b[0].CustomID != "a:a_q:deny" || b[0].Label != "Decline to answer" {
		t.Fatalf("question buttons %+v", b)
	}
}

func TestSlowPressIsDeferredThenFollowedUp(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute, func(h *harness) {
		h.a.ackAfter = 50 * time.Millisecond
		h.handle = func(ctx context.Context, u channels.Update) {
			time.Sleep(300 * time.Millisecond)
			u.Action.Ack(ctx, "Denied")
			u.Action.Ack(ctx, "twice") // only the first notice counts
		}
	})
	ch := h.srv.DMChannel(owner)
	ref, err := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "s1", Text: "ok?", Prompt: &channels.Prompt{ApprovalID: "a_s"}})
	if err != nil {
		t.Fatal(err)
	}
	iid := h.srv.Press(owner, ref, "a:a_s:deny")
	h.next(t)
	in := h.srv.Interaction(iid)
	if in.Response == nil || in.Response.Type != callbackDeferredUpdate {
		t.Fatalf("response %+v", in.Response)
	}
	if len(in.FollowUps) != 1 || in.FollowUps[0].Content != "Denied" || in.FollowUps[0].Flags != flagEphemeral {
		t.Fatalf("follow-ups %+v", in.FollowUps)
	}
}

func TestPressWithoutAckStillAnswered(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ch := h.srv.DMChannel(owner)
	ref, _ := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "n1", Text: "ok?", Prompt: &channels.Prompt{ApprovalID: "a_n"}})
	iid := h.srv.Press(owner, ref, "a:a_n:approve")
	h.next(t)
	waitFor(t, "a deferred answer", func() bool {
		r := h.srv.Interaction(iid).Response
		return r != nil && r.Type == callbackDeferredUpdate
	})
}

func TestForgedPressesRefused(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ch := h.srv.DMChannel(owner)
	ref, _ := h.a.Send(context.Background(), ch, channels.Outgoing{Key: "f1", Text: "ok?", Prompt: &channels.Prompt{ApprovalID: "a_f"}})
	userMsg := h.srv.DM(owner, "my own message")
	h.next(t)

	refused := []string{
		h.srv.Press(owner, ch+"/"+userMsg, "a:a_f:approve"), // not the bot's message
		h.srv.Press(owner, ref, "a:a_f:nuke"),               // unknown verb
		h.srv.Press(owner, ref, "x:a_f:approve"),            // not an approval payload
		h.srv.Press(owner, ref, "a::approve"),               // no approval id
	}
	// Another application's interaction.
	h.srv.PressRaw(map[string]any{"id": "5000000000000000001", "application_id": "5000000000000000999", "type": 3, "token": "tok-1",
		"channel_id": ch, "user": map[string]any{"id": owner.ID}, "data": map[string]any{"custom_id": "a:a_f:approve", "component_type": 2},
		"message": map[string]any{"id": strings.Split(ref, "/")[1], "channel_id": ch, "author": map[string]any{"id": discordtest.BotID}}})
	refused = append(refused, "5000000000000000001")
	// A slash command, not a button.
	h.srv.PressRaw(map[string]any{"id": "5000000000000000002", "application_id": discordtest.AppID, "type": 2, "token": "tok-2",
		"channel_id": ch, "user": map[string]any{"id": owner.ID}, "data": map[string]any{"name": "approve"}})
	refused = append(refused, "5000000000000000002")
	// A token that would change the callback path is dropped unanswered.
	h.srv.PressRaw(map[string]any{"id": "5000000000000000003", "application_id": discordtest.AppID, "type": 3, "token": "../../channels/1/messages",
		"channel_id": ch, "user": map[string]any{"id": owner.ID}, "data": map[string]any{"custom_id": "a:a_f:approve", "component_type": 2}})

	for _, iid := range refused {
		waitFor(t, "refusal of "+iid, func() bool { return h.srv.Interaction(iid).Response != nil })
		if r := h.srv.Interaction(iid).Response; r.Type != callbackMessage || r.Flags != flagEphemeral || !strings.Contains(r.Content, "not one of mine") {
			t.Errorf("press %s answered %+v", iid, r)
		}
	}
	h.expectOnlyMarker(t)
	if !strings.Contains(h.logs.String(), "discordBadInteraction") {
		t.Error("the malformed interaction was not logged")
	}
}

func TestMalformedPayloadsSkipped(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	ch := h.srv.DMChannel(owner)
	h.srv.Dispatch("MESSAGE_CREATE", "not an object")
	h.srv.Dispatch("MESSAGE_CREATE", map[string]any{"id": "../../gateway", "channel_id": ch, "author": map[string]any{"id": owner.ID}, "content": "x"})
	h.srv.Dispatch("MESSAGE_CREATE", map[string]any{"id": "3000000000000000009", "channel_id": ch, "content": "no author"})
	h.srv.Dispatch("MESSAGE_CREATE", map[string]any{"id": 12, "channel_id": ch})
	h.srv.Dispatch("INTERACTION_CREATE", []int{1, 2})
	h.srv.Dispatch("SOMETHING_NEW", map[string]any{"x": 1})
	h.expectOnlyMarker(t)
	for _, want := range []string{"discordBadMessage", "not snowflakes", "no author id"} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	// A frame that is not JSON drops the connection; the session resumes.
	h.srv.Raw("{not json")
	waitFor(t, "a resume", func() bool { return h.srv.Resumes() == 1 })
	h.expectOnlyMarker(t)
	if h.srv.Identifies() != 1 {
		t.Errorf("identified %d times", h.srv.Identifies())
	}
}

func TestResumeAfterDropReplaysMissedMessages(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	first := h.srv.DM(owner, "one")
	h.next(t)
	h.srv.Drop()
	missed := h.srv.DM(owner, "sent while disconnected")
	u := h.next(t)
	if u.ID != missed || u.Text != "sent while disconnected" {
		t.Fatalf("replayed %+v (first was %s)", u, first)
	}
	if h.srv.Identifies() != 1 || h.srv.Resumes() != 1 {
		t.Errorf("identifies %d resumes %d", h.srv.Identifies(), h.srv.Resumes())
	}
	if p := h.srv.Paths(); len(p) != 2 || p[0] != "/" || p[1] != "/resume" {
		t.Errorf("connected to %v, want the gateway then resume_gateway_url", p)
	}
}

func TestReconnectRequestResumes(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	h.srv.Reconnect()
	waitFor(t, "a resume", func() bool { return h.srv.Resumes() == 1 })
	h.expectOnlyMarker(t)
}

func TestZombieConnectionIsDropped(t *testing.T) {
	t.Parallel()
	h := start(t, 100*time.Millisecond)
	waitFor(t, "a heartbeat", func() bool { return h.srv.LastHeartbeatSeq() != nil })
	h.srv.StopAcks()
	waitFor(t, "a resume", func() bool { return h.srv.Resumes() == 1 })
	h.expectOnlyMarker(t)
	if !strings.Contains(h.logs.String(), "discordHeartbeatMissed") {
		t.Error("the zombie was not logged")
	}
	// Heartbeats carry the last sequence received: READY 1, RESUMED 2,
	// the marker 3.
	waitFor(t, "a heartbeat carrying sequence 3", func() bool { s := h.srv.LastHeartbeatSeq(); return s != nil && *s == 3 })
}

func TestHeartbeatOnRequest(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute) // the periodic beat is far off
	h.srv.DM(owner, "x")
	h.next(t)
	h.srv.Raw(`{"op":1,"d":null}`)
	waitFor(t, "a requested heartbeat", func() bool { s := h.srv.LastHeartbeatSeq(); return s != nil && *s >= 2 })
}

func TestInvalidSessionIdentifiesAgain(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	h.srv.InvalidateNextResume()
	h.srv.Drop()
	waitFor(t, "a second identify", func() bool { return h.srv.Identifies() == 2 })
	h.waitReady(t)
	h.expectOnlyMarker(t)
	if h.srv.Resumes() != 0 {
		t.Errorf("resumes %d", h.srv.Resumes())
	}
}

func TestSessionTimeoutCloseIdentifiesAgain(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	h.srv.Close(4009, "Session timed out.")
	waitFor(t, "a second identify", func() bool { return h.srv.Identifies() == 2 })
	h.expectOnlyMarker(t)
}

func TestAuthenticationFailedStops(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute, func(h *harness) {})
	h.srv.Close(4004, "Authentication failed.")
	var err error
	select {
	case err = <-h.done:
		h.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Receive kept going after 4004")
	}
	var pe *channels.PermanentError
	if !errors.Is(err, ErrAuth) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "4004") || !strings.Contains(err.Error(), "channels.discord.token") {
		t.Fatalf("error %v", err)
	}
}

func TestBadTokenRefusedBeforeConnecting(t *testing.T) {
	t.Parallel()
	srv := discordtest.New(t)
	a, logs := newAdapter(t, srv, "MTIz.bad.token")
	err := a.Receive(context.Background(), func(context.Context, channels.Update) { t.Error("update with a bad token") })
	var pe *channels.PermanentError
	if !errors.Is(err, ErrAuth) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("error %v", err)
	}
	if strings.Contains(err.Error()+logs.String(), "MTIz.bad.token") {
		t.Error("the token leaked into the error or log")
	}
}

func TestShutdownEndsSession(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	h.cancel()
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("Receive at shutdown: %v", err)
		}
		h.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("Receive did not return")
	}
	waitFor(t, "the fake to see the close", func() bool { return !h.srv.Ready() })
}

func TestVoiceMessage(t *testing.T) {
	t.Parallel()
	h := start(t, time.Minute)
	audio := []byte("OggS\x00fake opus")
	id := h.srv.VoiceDM(owner, audio)
	u := h.next(t)
	if u.ID != id || u.Voice == nil || u.Voice.Mime != "audio/ogg" || u.Voice.Size != int64(len(audio)) || u.Text != "" {
		t.Fatalf("voice update %+v", u)
	}
	data, err := u.Voice.Fetch(context.Background())
	if err != nil || !bytes.Equal(data, audio) {
		t.Fatalf("fetched %q, %v", data, err)
	}
}
