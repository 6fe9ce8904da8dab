package slack

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/slack/slacktest"
)

const (
	owner    = "U0OWNER"
	dm       = "D0OWNER"
	general  = "C0GENERAL"
	stranger = "U0STRANGER"
)

// syncBuffer is a log sink the adapter's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fixture is a fake Slack with a DM and a channel, and an adapter on it.
type fixture struct {
	s   *slacktest.Server
	a   *Adapter
	log *syncBuffer
}

func newFixture(t *testing.T, mode string) *fixture {
	t.Helper()
	s := slacktest.New(t)
	s.AddConversation(dm, slacktest.IM, true)
	s.AddConversation(general, slacktest.Channel, true)
	s.AddUser(owner, "Anna")
	s.AddUser(stranger, "Mallory")
	s.SetAckTimeout(300 * time.Millisecond)
	logs := &syncBuffer{}
	a, err := New(Config{APIURL: s.APIURL, BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, SigningSecret: slacktest.SigningSecret, Mode: mode},
		&http.Client{Timeout: 10 * time.Second}, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, secret := range []string{slacktest.BotToken, slacktest.AppToken, slacktest.SigningSecret, "ticket-"} {
			if strings.Contains(logs.String(), secret) {
				t.Errorf("the log shows a secret (%s…): %s", secret[:6], logs.String())
			}
		}
	})
	return &fixture{s: s, a: a, log: logs}
}

// receiver runs Receive and collects updates; the handler can be held to
// show acknowledgements wait for it.
type recorder struct {
	ch   chan channels.Update
	hold chan struct{} // when non-nil, the handler waits for it to close
	err  chan error
}

func (f *fixture) receive(t *testing.T) *recorder {
	return f.receiveHeld(t, nil)
}

func (f *fixture) receiveHeld(t *testing.T, hold chan struct{}) *recorder {
	t.Helper()
	r := &recorder{ch: make(chan channels.Update, 64), hold: hold, err: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		r.err <- f.a.Receive(ctx, func(ctx context.Context, u channels.Update) {
			r.ch <- u
			if r.hold != nil {
				<-r.hold
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.err:
			if err != nil {
				t.Errorf("Receive at shutdown = %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Receive did not return after its context ended")
		}
	})
	return r
}

func (r *recorder) next(t *testing.T) channels.Update {
	t.Helper()
	select {
	case u := <-r.ch:
		return u
	case err := <-r.err:
		t.Fatalf("Receive returned %v before an update came", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no update within 5s")
	}
	return channels.Update{}
}

// none checks no update arrives for a while.
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case u := <-r.ch:
		t.Fatalf("unexpected update %+v", u)
	case <-time.After(d):
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSocketModeReceivesMessages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)

	ts := f.s.Say(dm, owner, "hello &lt;world&gt; &amp; <https://example.org|example> <@U0BOT>", "")
	u := r.next(t)
	want := channels.Update{ID: dm + "/" + ts, Conv: dm, Sender: owner, SenderName: "Anna", Private: true, Text: "hello <world> & example (https://example.org)"}
	if u.ID != want.ID || u.Conv != want.Conv || u.Sender != want.Sender || u.SenderName != want.SenderName || u.Private != want.Private || u.Text != want.Text || u.Action != nil || u.Voice != nil {
		t.Errorf("DM update = %+v\nwant %+v", u, want)
	}

	// A reply in a DM thread is that thread's conversation.
	ts2 := f.s.Say(dm, owner, "in a thread", ts)
	if u := r.next(t); u.Conv != dm+"/"+ts || u.ID != dm+"/"+ts2 || !u.Private {
		t.Errorf("DM thread update = %+v", u)
	}

	// In a channel, chatter is not for the bot; a mention is, and starts a
	// thread. Slack sends message and app_mention for it: one ID.
	f.s.Say(general, owner, "lunch anyone?", "")
	mts := f.s.Say(general, owner, "<@U0BOT> summarise my day", "")
	u1, u2 := r.next(t), r.next(t)
	for _, u := range []channels.Update{u1, u2} {
		if u.ID != general+"/"+mts || u.Conv != general+"/"+mts || u.Private || u.Text != "summarise my day" {
			t.Errorf("channel mention update = %+v", u)
		}
	}
	r.none(t, 200*time.Millisecond)

	// Every envelope, skipped ones included, is acknowledged.
	eventually(t, "all envelopes acknowledged", func() bool { return f.s.Pending() == 0 })
	if bad := f.s.BadAcks(); len(bad) > 0 {
		t.Errorf("acknowledgements naming no envelope: %q", bad)
	}
}

func TestSocketModeSkipsBotsEditsAndNoise(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)

	// The bot's own post comes back as a message event (Slack echoes it).
	if _, err := f.a.Send(context.Background(), dm, channels.Outgoing{Text: "I am the bot"}); err != nil {
		t.Fatal(err)
	}
	ev := func(id string, e map[string]any) { f.s.Deliver("events_api", slacktest.EventCallback(id, e)) }
	ev("Ev1", map[string]any{"type": "message", "channel": dm, "channel_type": "im", "user": "U0OTHERBOT", "bot_id": "B0OTHER", "text": "another bot", "ts": "1700000100.000001"})
	ev("Ev2", map[string]any{"type": "message", "subtype": "bot_message", "channel": dm, "channel_type": "im", "bot_id": "B0OTHER", "text": "legacy bot", "ts": "1700000100.000002"})
	ev("Ev3", map[string]any{"type": "message", "subtype": "message_changed", "channel": dm, "channel_type": "im", "hidden": true, "ts": "1700000100.000003",
		"message": map[string]any{"user": owner, "text": "edited", "ts": "1700000099.000001"}})
	ev("Ev4", map[string]any{"type": "message", "subtype": "message_deleted", "channel": dm, "channel_type": "im", "hidden": true, "ts": "1700000100.000004", "deleted_ts": "1700000099.000001"})
	ev("Ev5", map[string]any{"type": "message", "subtype": "channel_join", "channel": general, "channel_type": "channel", "user": owner, "text": "<@U0OWNER> has joined the channel", "ts": "1700000100.000005"})
	ev("Ev6", map[string]any{"type": "reaction_added", "user": owner, "reaction": "thumbsup", "item": map[string]any{"type": "message", "channel": dm, "ts": "1700000099.000001"}})
	ev("Ev7", map[string]any{"type": "message", "channel": dm, "channel_type": "im", "user": owner, "text": "   ", "ts": "1700000100.000007"})
	f.s.Deliver("slash_commands", []byte(`{"command":"/hestia","text":"hi","user_id":"U0OWNER"}`))
	// Then a real message: it is the first and only update.
	ts := f.s.Say(dm, owner, "real", "")
	if u := r.next(t); u.ID != dm+"/"+ts || u.Text != "real" {
		t.Errorf("update = %+v, want the owner's message", u)
	}
	r.none(t, 200*time.Millisecond)
	eventually(t, "all acknowledged", func() bool { return f.s.Pending() == 0 })
}

func TestSocketModeAcknowledgesAfterHandling(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	hold := make(chan struct{})
	r := f.receiveHeld(t, hold)
	f.s.SetAckTimeout(time.Hour) // no redelivery while held
	f.s.Say(dm, owner, "slow turn", "")
	r.next(t)
	time.Sleep(100 * time.Millisecond)
	if n := len(f.s.Acked()); n != 0 || f.s.Pending() != 1 {
		t.Errorf("acknowledged %d envelopes while the handler still ran", n)
	}
	close(hold)
	eventually(t, "acknowledged after the handler", func() bool { return len(f.s.Acked()) == 1 && f.s.Pending() == 0 })
}

func TestSocketModeRedeliveryKeepsID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	hold := make(chan struct{})
	r := f.receiveHeld(t, hold)
	f.s.SetAckTimeout(100 * time.Millisecond)
	ts := f.s.Say(dm, owner, "are you there", "")
	first := r.next(t)
	time.Sleep(400 * time.Millisecond) // Slack sends it again meanwhile
	close(hold)
	second := r.next(t)
	if first.ID != dm+"/"+ts || second.ID != first.ID {
		t.Errorf("redelivered IDs %q, %q; the relay deduplicates by a stable ID", first.ID, second.ID)
	}
}

func TestSocketModeReconnects(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)
	f.s.Say(dm, owner, "one", "")
	r.next(t)
	eventually(t, "connected", f.s.Connected)
	f.s.Disconnect("refresh_requested")
	eventually(t, "a second connection", func() bool { return f.s.Connects() == 2 && f.s.Connected() })
	f.s.Say(dm, owner, "two", "")
	if u := r.next(t); u.Text != "two" {
		t.Errorf("after reconnecting: %+v", u)
	}
	f.s.Disconnect("warning")
	eventually(t, "a third connection", func() bool { return f.s.Connects() == 3 })
	f.s.Say(dm, owner, "three", "")
	if u := r.next(t); u.Text != "three" {
		t.Errorf("after a warning: %+v", u)
	}
}

func TestSocketModeDropAndLinkDisabledEndReceive(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cut  func(*slacktest.Server)
		want string
	}{
		{"drop", (*slacktest.Server).Drop, "slack socket mode: reading"},
		{"link disabled", func(s *slacktest.Server) { s.Disconnect("link_disabled") }, "link_disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, ModeSocket)
			errc := make(chan error, 1)
			go func() { errc <- f.a.Receive(context.Background(), func(context.Context, channels.Update) {}) }()
			eventually(t, "connected", f.s.Connected)
			tc.cut(f.s)
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Receive = %v, want an error with %q", err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Receive did not return")
			}
		})
	}
}

func TestSocketModeMalformedEnvelopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)
	eventually(t, "connected", f.s.Connected)
	f.s.SendRaw([]byte(`not json`))
	f.s.SendRaw([]byte(`{"envelope_id":"x"}`))
	f.s.SendRaw([]byte(`{"type":"events_api","payload":{}}`))
	f.s.Deliver("events_api", []byte(`{"type":"event_callback","event":"not an object"}`))
	f.s.Deliver("events_api", slacktest.EventCallback("EvBad", map[string]any{"type": "message", "channel": "../../etc", "channel_type": "im", "user": owner, "text": "x", "ts": "1.1"}))
	f.s.Deliver("interactive", []byte(`{"type":"block_actions","user":{"id":"U0OWNER"},"container":{"type":"message","channel_id":"D0OWNER","message_ts":"nope"},"actions":[{"action_id":"approve","value":"a1"}]}`))
	f.s.Deliver("interactive", []byte(`[1,2,3]`))
	ts := f.s.Say(dm, owner, "still alive", "")
	if u := r.next(t); u.ID != dm+"/"+ts {
		t.Errorf("update = %+v", u)
	}
	eventually(t, "malformed envelopes acknowledged", func() bool { return f.s.Pending() == 0 })
	for _, w := range []string{"malformed Slack payload", "is not a Slack channel id", "not a Slack channel id and timestamp"} {
		if !strings.Contains(f.log.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, f.log.String())
		}
	}
}

func TestButtonsRoundTripApprovalID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)
	ctx := context.Background()
	// A prompt in a channel thread, answered by each button.
	root := f.s.Say(general, owner, "<@U0BOT> send the report", "")
	r.next(t)
	r.next(t)
	conv := general + "/" + root
	for _, verb := range []channels.Verb{channels.VerbApprove, channels.VerbDeny, channels.VerbAllow10m} {
		ref, err := f.a.Send(ctx, conv, channels.Outgoing{Key: "k-" + string(verb), Text: "🔐 **Approval needed**: `mail.send`\nReply K7QF approve", Prompt: &channels.Prompt{ApprovalID: "appr-" + string(verb), Code: "K7QF"}})
		if err != nil {
			t.Fatal(err)
		}
		ch, ts, _ := strings.Cut(ref, "/")
		f.s.Press(ch, ts, owner, string(verb))
		u := r.next(t)
		if u.Action == nil {
			t.Fatalf("press → %+v, want an Action", u)
		}
		if u.Action.Ref != ref || u.Action.ApprovalID != "appr-"+string(verb) || u.Action.Verb != verb || u.Sender != owner || u.Conv != conv || u.Private || u.ID == "" {
			t.Errorf("press %s → %+v action %+v (ref %s)", verb, u, *u.Action, ref)
		}
		u.Action.Ack(ctx, "Approved <by you> & done")
	}
	eph := f.s.Ephemerals()
	if len(eph) != 3 || eph[0].User != owner || eph[0].Channel != general || eph[0].ThreadTS != root || eph[0].Text != "Approved &lt;by you&gt; &amp; done" {
		t.Errorf("ephemeral acks = %+v", eph)
	}

	// In a DM, at the top level.
	ref, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "What name?", Prompt: &channels.Prompt{ApprovalID: "q1", Question: true}})
	if err != nil {
		t.Fatal(err)
	}
	ch, ts, _ := strings.Cut(ref, "/")
	f.s.Press(ch, ts, owner, "deny")
	if u := r.next(t); u.Action == nil || u.Action.Ref != ref || u.Action.ApprovalID != "q1" || u.Action.Verb != channels.VerbDeny || u.Conv != dm || !u.Private || u.SenderName != "anna" {
		t.Errorf("question press → %+v", u)
	}
}

func TestSendFormatsAndRendersPrompts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	ctx := context.Background()
	ref, err := f.a.Send(ctx, dm, channels.Outgoing{Key: "k1", Text: "# Plan\n**bold** and *it* <!channel> a&b\n- [docs](https://example.org/a_b_c)\n```go\nx := 1 < 2\n```"})
	if err != nil {
		t.Fatal(err)
	}
	ch, ts, ok := strings.Cut(ref, "/")
	m, found := f.s.Message(ch, ts)
	if !ok || ch != dm || !found {
		t.Fatalf("ref %q does not name a posted message", ref)
	}
	want := "*Plan*\n*bold* and _it_ &lt;!channel&gt; a&amp;b\n• <https://example.org/a_b_c|docs>\n```\nx := 1 &lt; 2\n```"
	if m.Text != want || len(m.Blocks) != 0 || m.ThreadTS != "" {
		t.Errorf("posted %q blocks %v thread %q\nwant %q", m.Text, m.Blocks, m.ThreadTS, want)
	}
	if m.Metadata == nil || m.Metadata.EventType != "hestia_outbox" || m.Metadata.EventPayload["key"] != "k1" {
		t.Errorf("metadata = %+v", m.Metadata)
	}

	// Into a thread.
	ref2, err := f.a.Send(ctx, dm+"/"+ts, channels.Outgoing{Text: "threaded"})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := f.s.Message(dm, strings.SplitN(ref2, "/", 2)[1]); m.ThreadTS != ts {
		t.Errorf("threaded reply thread_ts = %q, want %q", m.ThreadTS, ts)
	}

	// An approval prompt: sections, then three buttons carrying the id.
	pref, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "Approve *this*?", Prompt: &channels.Prompt{ApprovalID: "ap-42", Code: "K7QF"}})
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := f.s.Message(dm, strings.SplitN(pref, "/", 2)[1])
	if len(pm.Blocks) != 2 || pm.Blocks[0].Type != "section" || pm.Blocks[0].Text.Text != "Approve _this_?" || pm.Blocks[1].Type != "actions" {
		t.Fatalf("prompt blocks = %+v", pm.Blocks)
	}
	got := map[string]string{}
	for _, e := range pm.Blocks[1].Elements {
		got[e.ActionID] = e.Value
	}
	if len(got) != 3 || got["approve"] != "ap-42" || got["deny"] != "ap-42" || got["allow_10m"] != "ap-42" {
		t.Errorf("buttons = %+v", pm.Blocks[1].Elements)
	}
	if pm.Text == "" {
		t.Error("a prompt needs notification text beside its blocks")
	}
	// A question: one button.
	qref, _ := f.a.Send(ctx, dm, channels.Outgoing{Text: "Which?", Prompt: &channels.Prompt{ApprovalID: "q-1", Question: true}})
	qm, _ := f.s.Message(dm, strings.SplitN(qref, "/", 2)[1])
	if n := len(qm.Blocks); n != 2 || len(qm.Blocks[1].Elements) != 1 || qm.Blocks[1].Elements[0].ActionID != "deny" {
		t.Errorf("question blocks = %+v", qm.Blocks)
	}
	// A closed prompt is sent without buttons.
	cref, _ := f.a.Send(ctx, dm, channels.Outgoing{Text: "Approved.", Prompt: &channels.Prompt{ApprovalID: "ap-1", Closed: true}})
	if cm, _ := f.s.Message(dm, strings.SplitN(cref, "/", 2)[1]); len(cm.Blocks) != 1 || cm.Blocks[0].Type != "section" {
		t.Errorf("closed prompt blocks = %+v", cm.Blocks)
	}
}

func TestSendNeverTooLong(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	ctx := context.Background()
	// Far over the limits, with characters that grow when escaped: Slack
	// must still accept it (the relay splits at MaxText; this is the
	// defensive cut).
	huge := strings.Repeat("a < b & c > d ", 6000) + "\n```\n" + strings.Repeat("code line & more\n", 2000)
	ref, err := f.a.Send(ctx, dm, channels.Outgoing{Text: huge})
	if err != nil {
		t.Fatalf("plain: %v", err)
	}
	m, _ := f.s.Message(dm, strings.SplitN(ref, "/", 2)[1])
	if n := utf8.RuneCountInString(m.Text); n > maxMessageText || !strings.HasSuffix(m.Text, "…") {
		t.Errorf("plain text is %d characters, ends %q", n, m.Text[len(m.Text)-10:])
	}
	// A prompt of MaxText Markdown that escapes to several sections.
	long := strings.Repeat("x&y ", MaxText/4) + "\n```\n" + strings.Repeat("<<>>\n", 500) + "```"
	pref, err := f.a.Send(ctx, dm, channels.Outgoing{Text: long, Prompt: &channels.Prompt{ApprovalID: "a"}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	pm, _ := f.s.Message(dm, strings.SplitN(pref, "/", 2)[1])
	if len(pm.Blocks) < 3 {
		t.Errorf("a long prompt should span sections: %d blocks", len(pm.Blocks))
	}
	for i, b := range pm.Blocks {
		if b.Type == "section" && strings.Count(b.Text.Text, "```")%2 != 0 {
			t.Errorf("section %d leaves a code block open", i)
		}
	}
	// Empty text still posts (Slack refuses no_text).
	if _, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "  "}); err != nil {
		t.Errorf("empty: %v", err)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	ctx := context.Background()
	ref, err := f.a.Send(ctx, dm, channels.Outgoing{Key: "p1", Text: "Approve?", Prompt: &channels.Prompt{ApprovalID: "ap"}})
	if err != nil {
		t.Fatal(err)
	}
	ts := strings.SplitN(ref, "/", 2)[1]
	// Closing the prompt removes its buttons.
	if err := f.a.Edit(ctx, dm, ref, channels.Outgoing{Key: "p1", Text: "Approved by Anna.", Prompt: &channels.Prompt{ApprovalID: "ap", Closed: true}}); err != nil {
		t.Fatal(err)
	}
	m, _ := f.s.Message(dm, ts)
	if m.Edits != 1 || len(m.Blocks) != 1 || m.Blocks[0].Text.Text != "Approved by Anna." {
		t.Errorf("closed prompt = %+v", m)
	}
	// Editing into plain text drops the blocks too (chat.update would keep them).
	if err := f.a.Edit(ctx, dm, ref, channels.Outgoing{Text: "**done**"}); err != nil {
		t.Fatal(err)
	}
	m, _ = f.s.Message(dm, ts)
	if m.Text != "*done*" || len(m.Blocks) != 0 || m.Edits != 2 {
		t.Errorf("after a plain edit = %+v", m)
	}
	// Streaming edits of a plain message.
	sref, _ := f.a.Send(ctx, dm, channels.Outgoing{Text: "Thinking"})
	for _, s := range []string{"The answer", "The answer is 42"} {
		if err := f.a.Edit(ctx, dm, sref, channels.Outgoing{Text: s}); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := f.s.Message(dm, strings.SplitN(sref, "/", 2)[1]); m.Text != "The answer is 42" || m.Edits != 2 {
		t.Errorf("streamed = %+v", m)
	}
	// Errors: a message that does not exist, someone else's, a bad ref.
	var pe *channels.PermanentError
	if err := f.a.Edit(ctx, dm, dm+"/1600000000.000001", channels.Outgoing{Text: "x"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "chat.update: message_not_found") {
		t.Errorf("missing message: %v", err)
	}
	uts := f.s.Say(dm, owner, "mine", "")
	if err := f.a.Edit(ctx, dm, dm+"/"+uts, channels.Outgoing{Text: "x"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "cant_update_message") {
		t.Errorf("someone else's message: %v", err)
	}
	for _, bad := range []string{dm, "", "d0lower/1.2", dm + "/abc"} {
		if err := f.a.Edit(ctx, dm, bad, channels.Outgoing{Text: "x"}); !errors.As(err, &pe) {
			t.Errorf("Edit(ref %q) = %v, want a permanent error", bad, err)
		}
	}
}

func TestFind(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	ctx := context.Background()
	root := f.s.Say(general, owner, "<@U0BOT> hi", "")
	thread := general + "/" + root
	var want string
	for i, k := range []string{"a", "b", "c"} {
		ref, err := f.a.Send(ctx, thread, channels.Outgoing{Key: "key-" + k, Text: "reply " + k})
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			want = ref
		}
	}
	ref, ok, err := f.a.Find(ctx, thread, "key-b")
	if err != nil || !ok || ref != want {
		t.Errorf("Find in thread = %q %v %v, want %q", ref, ok, err, want)
	}
	if _, ok, err := f.a.Find(ctx, thread, "key-zzz"); ok || err != nil {
		t.Errorf("Find of an unsent key = %v %v", ok, err)
	}
	// Top level of a DM, past the first page.
	var first string
	for i := range 250 {
		r, err := f.a.Send(ctx, dm, channels.Outgoing{Key: "dm-" + string(rune('A'+i%26)) + strings.Repeat("x", i/26), Text: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = r
		}
	}
	if ref, ok, err := f.a.Find(ctx, dm, "dm-A"); err != nil || !ok || ref != first {
		t.Errorf("Find in DM history = %q %v %v, want %q", ref, ok, err, first)
	}
	if n := f.s.Calls("conversations.history"); n < 2 {
		t.Errorf("conversations.history called %d times; the key was on the second page", n)
	}
	// A failure is reported, not taken for "not found".
	f.s.Throttle("conversations.replies", 3)
	var ra *channels.RetryAfterError
	if _, _, err := f.a.Find(ctx, thread, "key-a"); !errors.As(err, &ra) || ra.After != 3*time.Second {
		t.Errorf("Find throttled = %v", err)
	}
}

func TestFindIgnoresOtherApps(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	// Another app posts a message with the same metadata: it is no proof
	// that the relay's reply went out.
	f.s.AddMessage(slacktest.Message{Channel: dm, User: "U0OTHERAPP", BotID: "B0OTHER", Text: "spoof",
		Metadata: &slacktest.Metadata{EventType: "hestia_outbox", EventPayload: map[string]any{"key": "k-spoof"}}})
	if ref, ok, err := f.a.Find(context.Background(), dm, "k-spoof"); ok || err != nil {
		t.Errorf("Find matched another app's message: %q %v %v", ref, ok, err)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	ctx := context.Background()
	var ra *channels.RetryAfterError
	var pe *channels.PermanentError

	f.s.Throttle("chat.postMessage", 7)
	if _, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "x"}); !errors.As(err, &ra) || ra.After != 7*time.Second || !strings.Contains(err.Error(), "chat.postMessage: ratelimited") {
		t.Errorf("429 → %v", err)
	}
	f.s.Throttle("chat.update", 2)
	ref, _ := f.a.Send(ctx, dm, channels.Outgoing{Text: "x"})
	if err := f.a.Edit(ctx, dm, ref, channels.Outgoing{Text: "y"}); !errors.As(err, &ra) || ra.After != 2*time.Second {
		t.Errorf("429 on edit → %v", err)
	}
	for _, code := range []string{"channel_not_found", "not_in_channel", "is_archived", "invalid_auth", "token_revoked", "missing_scope", "msg_too_long"} {
		f.s.Fail("chat.postMessage", code)
		_, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "x"})
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "slack chat.postMessage: "+code) {
			t.Errorf("%s → %v, want a permanent error naming it", code, err)
		}
	}
	for _, code := range []string{"internal_error", "service_unavailable", "fatal_error"} {
		f.s.Fail("chat.postMessage", code)
		_, err := f.a.Send(ctx, dm, channels.Outgoing{Text: "x"})
		if err == nil || errors.As(err, &pe) || errors.As(err, &ra) {
			t.Errorf("%s → %v, want a plain (retried) error", code, err)
		}
	}
	// Real refusals from the fake's checks.
	f.s.AddConversation("C0NOTIN", slacktest.Channel, false)
	if _, err := f.a.Send(ctx, "C0NOTIN", channels.Outgoing{Text: "x"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "not_in_channel") {
		t.Errorf("not a member → %v", err)
	}
	if _, err := f.a.Send(ctx, "C0MISSING", channels.Outgoing{Text: "x"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "channel_not_found") {
		t.Errorf("unknown channel → %v", err)
	}
	for _, bad := range []string{"", "#general", "C0GENERAL/not-a-ts", "c0lower"} {
		if _, err := f.a.Send(ctx, bad, channels.Outgoing{Text: "x"}); !errors.As(err, &pe) {
			t.Errorf("Send(conv %q) = %v, want a permanent error", bad, err)
		}
	}
}

func TestWrongTokens(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	s.AddConversation(dm, slacktest.IM, true)
	a, err := New(Config{APIURL: s.APIURL, BotToken: "xoxb-wrong", AppToken: slacktest.AppToken}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Receive(context.Background(), func(context.Context, channels.Update) {})
	if err == nil || !strings.Contains(err.Error(), "auth.test: invalid_auth") || strings.Contains(err.Error(), "xoxb-wrong") {
		t.Errorf("Receive with a bad bot token = %v", err)
	}
	// The app token where the bot token belongs is refused by New; the bot
	// token where the app token belongs by Slack.
	if _, err := New(Config{BotToken: slacktest.AppToken, AppToken: slacktest.AppToken}, nil, nil); err == nil {
		t.Error("New accepted an app token as the bot token")
	}
	b, _ := New(Config{APIURL: s.APIURL, BotToken: slacktest.BotToken, AppToken: "xapp-wrong"}, nil, nil)
	if err := b.Receive(context.Background(), func(context.Context, channels.Update) {}); err == nil || !strings.Contains(err.Error(), "apps.connections.open: invalid_auth") {
		t.Errorf("Receive with a bad app token = %v", err)
	}
	for _, cfg := range []Config{
		{BotToken: slacktest.BotToken},                              // socket without app token
		{BotToken: slacktest.BotToken, Mode: ModeEvents},            // events without secret
		{BotToken: slacktest.BotToken, Mode: "poll", AppToken: "x"}, // unknown mode
		{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: "ftp://x"},
	} {
		if _, err := New(cfg, nil, nil); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestVoiceNotes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeSocket)
	r := f.receive(t)
	audio := []byte("OggS fake opus")
	f.s.Say(dm, owner, "", "", slacktest.File{ID: "F1", Name: "audio_message.webm", Mimetype: "audio/webm", Subtype: "slack_audio", Data: audio})
	u := r.next(t)
	if u.Voice == nil || u.Voice.Mime != "audio/webm" || u.Voice.Size != int64(len(audio)) || u.Voice.Filename != "audio_message.webm" {
		t.Fatalf("voice update = %+v", u)
	}
	got, err := u.Voice.Fetch(context.Background())
	if err != nil || !bytes.Equal(got, audio) {
		t.Errorf("Fetch = %q %v", got, err)
	}
	// A file on a foreign host is never fetched with the token.
	f.s.Say(dm, owner, "listen", "", slacktest.File{ID: "F3", Name: "x.mp3", Mimetype: "audio/mpeg", URL: "https://evil.example/steal", Data: audio})
	u = r.next(t)
	if u.Text != "listen" || u.Voice == nil {
		t.Fatalf("update = %+v", u)
	}
	if _, err := u.Voice.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "evil.example") {
		t.Errorf("Fetch from a foreign host = %v", err)
	}
	// Too large.
	f.a.cfg.MaxVoiceBytes = 4
	f.s.Say(dm, owner, "", "", slacktest.File{ID: "F4", Name: "long.webm", Mimetype: "audio/webm", Data: audio})
	if _, err := r.next(t).Voice.Fetch(context.Background()); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Fetch of a large file = %v", err)
	}
}

func TestDownloadRefusesSignInPage(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	c := client{base: s.APIURL, http: http.DefaultClient}
	_, err := c.download(context.Background(), "xoxb-not-the-token", s.URL+"/files-pri/T0TEST-F1/download/a.webm", 1<<20, false)
	if err == nil || !strings.Contains(err.Error(), "files:read") {
		t.Errorf("download without a valid token = %v", err)
	}
}

// Events API.

func eventsFixture(t *testing.T) (*fixture, *recorder, *httptest.Server) {
	t.Helper()
	f := newFixture(t, ModeEvents)
	mux := http.NewServeMux()
	for _, rt := range f.a.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	r := f.receive(t)
	eventually(t, "the handler is lent to the routes", func() bool { return f.a.receiving() != nil })
	f.s.UseEventsAPI(srv.URL+"/channels/slack/events", srv.URL+"/channels/slack/interactive")
	return f, r, srv
}

func TestEventsAPIReceivesSignedDeliveries(t *testing.T) {
	t.Parallel()
	f, r, _ := eventsFixture(t)
	ts := f.s.Say(dm, owner, "over http", "")
	if u := r.next(t); u.ID != dm+"/"+ts || u.Text != "over http" || !u.Private || u.SenderName != "Anna" {
		t.Errorf("update = %+v", u)
	}
	ref, err := f.a.Send(context.Background(), dm, channels.Outgoing{Text: "ok?", Prompt: &channels.Prompt{ApprovalID: "ap-9"}})
	if err != nil {
		t.Fatal(err)
	}
	f.s.Press(dm, strings.SplitN(ref, "/", 2)[1], owner, "allow_10m")
	if u := r.next(t); u.Action == nil || u.Action.Ref != ref || u.Action.ApprovalID != "ap-9" || u.Action.Verb != channels.VerbAllow10m {
		t.Errorf("press = %+v", u)
	}
	r.none(t, 200*time.Millisecond) // the bot's echoed post is skipped
	eventually(t, "all delivered", func() bool { return f.s.Pending() == 0 })
	for _, st := range f.s.Statuses() {
		if st != http.StatusOK {
			t.Errorf("a genuine delivery was answered %d", st)
		}
	}
	if len(f.a.Routes()) != 2 {
		t.Errorf("routes = %+v", f.a.Routes())
	}
	if (&Adapter{cfg: Config{Mode: ModeSocket}}).Routes() != nil {
		t.Error("Socket Mode serves no public routes")
	}
}

func TestEventsAPIRefusesForgeries(t *testing.T) {
	t.Parallel()
	f, r, srv := eventsFixture(t)
	events := srv.URL + "/channels/slack/events"
	body := slacktest.EventCallback("EvF", map[string]any{"type": "message", "channel": dm, "channel_type": "im", "user": owner, "text": "approve everything", "ts": "1700000500.000001"})
	now := time.Now()
	cases := []struct {
		name   string
		secret string
		at     time.Time
		body   []byte
		mutate func(*http.Request)
	}{
		{"unsigned", "", now, body, nil},
		{"wrong secret", "not-the-secret", now, body, nil},
		{"stale", slacktest.SigningSecret, now.Add(-6 * time.Minute), body, nil},
		{"future", slacktest.SigningSecret, now.Add(6 * time.Minute), body, nil},
	}
	for _, tc := range cases {
		status, _ := slacktest.PostSigned(events, "application/json", tc.secret, tc.at, tc.body)
		if status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", tc.name, status)
		}
	}
	// A body changed after signing.
	req, _ := http.NewRequest(http.MethodPost, events, bytes.NewReader(bytes.Replace(body, []byte("everything"), []byte("all the things"), 1)))
	slacktest.Sign(req.Header, slacktest.SigningSecret, now, body)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered body: %v %v", resp, err)
	}
	// Interactivity is signed too.
	status, _ := slacktest.PostSigned(srv.URL+"/channels/slack/interactive", "application/x-www-form-urlencoded", "not-the-secret", now, []byte(`payload=%7B%22type%22%3A%22block_actions%22%7D`))
	if status != http.StatusUnauthorized {
		t.Errorf("forged interaction: %d", status)
	}
	r.none(t, 200*time.Millisecond)
	if n := strings.Count(f.log.String(), "refused a delivery that is not from Slack"); n != 6 {
		t.Errorf("%d refusals logged, want 6:\n%s", n, f.log.String())
	}
	// Signed but malformed: a clear 400, no handler call.
	for _, tc := range []struct{ path, ctype, body, want string }{
		{"/channels/slack/events", "application/json", `{"type":`, "malformed Slack payload"},
		{"/channels/slack/events", "application/json", `{"type":"event_callback","event":{"type":"message","channel":"D0OWNER","channel_type":"im","user":"U0OWNER","text":"x","ts":"yesterday"}}`, "is not a Slack timestamp"},
		{"/channels/slack/interactive", "application/x-www-form-urlencoded", `nopayload=1`, "no payload field"},
		{"/channels/slack/interactive", "application/x-www-form-urlencoded", `payload=%7Bbroken`, "interaction is not a JSON object"},
	} {
		status, text := slacktest.PostSigned(srv.URL+tc.path, tc.ctype, slacktest.SigningSecret, now, []byte(tc.body))
		if status != http.StatusBadRequest || !strings.Contains(text, tc.want) {
			t.Errorf("%s %q → %d %q, want 400 with %q", tc.path, tc.body, status, text, tc.want)
		}
	}
	r.none(t, 100*time.Millisecond)
}

func TestEventsAPIURLVerificationAndNotReceiving(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeEvents)
	mux := http.NewServeMux()
	for _, rt := range f.a.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	status, body := slacktest.PostSigned(srv.URL+"/channels/slack/events", "application/json", slacktest.SigningSecret, time.Now(),
		[]byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`))
	if status != http.StatusOK || body != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Errorf("challenge → %d %q", status, body)
	}
	// An event before Receive runs is refused with 503 so Slack retries.
	status, _ = slacktest.PostSigned(srv.URL+"/channels/slack/events", "application/json", slacktest.SigningSecret, time.Now(),
		slacktest.EventCallback("Ev1", map[string]any{"type": "message", "channel": dm, "channel_type": "im", "user": owner, "text": "early", "ts": "1700000000.000001"}))
	if status != http.StatusServiceUnavailable {
		t.Errorf("event while not receiving → %d", status)
	}
	// Too large.
	status, _ = slacktest.PostSigned(srv.URL+"/channels/slack/events", "application/json", slacktest.SigningSecret, time.Now(), bytes.Repeat([]byte("x"), maxDelivery+10))
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body → %d", status)
	}
}

func TestEventsAPIRetriesUntilReceiving(t *testing.T) {
	t.Parallel()
	f := newFixture(t, ModeEvents)
	mux := http.NewServeMux()
	for _, rt := range f.a.Routes() {
		mux.Handle(rt.Pattern, rt.Handler)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	f.s.UseEventsAPI(srv.URL+"/channels/slack/events", srv.URL+"/channels/slack/interactive")
	ts := f.s.Say(dm, owner, "sent while the daemon starts", "")
	eventually(t, "a refused first attempt", func() bool { return len(f.s.Statuses()) > 0 })
	r := f.receive(t)
	if u := r.next(t); u.ID != dm+"/"+ts {
		t.Errorf("retried delivery = %+v", u)
	}
}
