package matrix_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/matrix"
	"github.com/hestia-dev/hestia/internal/channels/matrix/matrixtest"
)

const (
	owner    = "@me:fake.test"
	contact  = "@anna:fake.test"
	stranger = "@eve:evil.test"
)

var names = map[string]string{owner: "Owner", contact: "Anna", stranger: "Owner"} // eve spoofs the owner's display name

type opts struct {
	stateFile string
	inviters  []string
	now       func() time.Time
	logs      *strings.Builder
}

func newAdapter(t *testing.T, srv *matrixtest.Server, o opts) *matrix.Adapter {
	t.Helper()
	if o.inviters == nil {
		o.inviters = []string{owner, contact}
	}
	log := slog.New(slog.DiscardHandler)
	if o.logs != nil {
		log = slog.New(slog.NewTextHandler(&lockedWriter{b: o.logs}, nil))
	}
	a, err := matrix.New(matrix.Config{Name: "matrix", Homeserver: srv.URL, Token: matrixtest.Token, Inviters: o.inviters,
		StateFile: o.stateFile, PollTimeout: 300 * time.Millisecond, Now: o.now}, srv.Client(), log)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// receiver runs Receive in the background and collects updates.
type receiver struct {
	t       *testing.T
	updates chan channels.Update
	done    chan error
	cancel  context.CancelFunc
	once    sync.Once
}

func receive(t *testing.T, srv *matrixtest.Server, a *matrix.Adapter) *receiver {
	t.Helper()
	syncs := len(srv.Syncs())
	ctx, cancel := context.WithCancel(context.Background())
	r := &receiver{t: t, updates: make(chan channels.Update, 256), done: make(chan error, 1), cancel: cancel}
	go func() {
		r.done <- a.Receive(ctx, func(_ context.Context, u channels.Update) { r.updates <- u })
	}()
	t.Cleanup(func() { r.stop() })
	// Posts made before the first sync is handled would be history to a
	// first start; the second sync starting means the first was handled.
	waitFor(t, "the first sync", func() bool { return len(srv.Syncs()) >= syncs+2 })
	return r
}

// stop ends Receive and checks it returned nil.
func (r *receiver) stop() {
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				r.t.Errorf("Receive returned %v at shutdown", err)
			}
		case <-time.After(5 * time.Second):
			r.t.Error("Receive did not return after cancel")
		}
	})
}

func (r *receiver) next() channels.Update {
	r.t.Helper()
	select {
	case u := <-r.updates:
		return u
	case err := <-r.done:
		r.t.Fatalf("Receive ended: %v", err)
	case <-time.After(5 * time.Second):
		r.t.Fatal("no update")
	}
	return channels.Update{}
}

// quiet checks nothing more arrives for a while.
func (r *receiver) quiet(d time.Duration) {
	r.t.Helper()
	select {
	case u := <-r.updates:
		r.t.Fatalf("unexpected update %+v", u)
	case <-time.After(d):
	}
}

func dm(srv *matrixtest.Server, who string) string {
	return srv.CreateRoom(matrixtest.RoomOptions{Creator: who, Names: names, JoinBot: true})
}

func TestReceiveMessages(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	group := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, Members: []string{contact}, Names: names, JoinBot: true})
	a := newAdapter(t, srv, opts{})
	r := receive(t, srv, a)

	id := srv.Say(d, owner, "hello **there**")
	u := r.next()
	if u.ID != id || u.Conv != d || u.Sender != owner || u.SenderName != "Owner" || !u.Private || u.Text != "hello **there**" || u.Action != nil || u.Voice != nil {
		t.Errorf("dm update = %+v", u)
	}
	srv.Say(group, owner, "in the group")
	if u := r.next(); u.Conv != group || u.Private || u.Text != "in the group" {
		t.Errorf("group update = %+v", u)
	}

	// Not answered: the bot's own message, a notice, an edit, a redacted
	// message, state. Each is followed by a marker that is.
	srv.Post(d, matrixtest.Bot, "m.room.message", map[string]any{"msgtype": "m.text", "body": "my own"})
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.notice", "body": "a bot's notice"})
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "* hello", "m.new_content": map[string]any{"msgtype": "m.text", "body": "hello"},
		"m.relates_to": map[string]any{"rel_type": "m.replace", "event_id": id}})
	srv.Post(d, owner, "m.room.message", map[string]any{})
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": 42})
	srv.Say(d, owner, "marker 1")
	if u := r.next(); u.Text != "marker 1" {
		t.Errorf("expected only the marker, got %+v", u)
	}

	// A reply's quote is stripped; a thread is answered in its thread; an
	// image arrives without text so the relay can say what it reads.
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "> <@hestia:fake.test> earlier\n> more\n\nmy answer",
		"m.relates_to": map[string]any{"m.in_reply_to": map[string]any{"event_id": id}}})
	if u := r.next(); u.Text != "my answer" {
		t.Errorf("reply text = %q", u.Text)
	}
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "in a thread",
		"m.relates_to": map[string]any{"rel_type": "m.thread", "event_id": id, "is_falling_back": true, "m.in_reply_to": map[string]any{"event_id": id}}})
	if u := r.next(); u.Text != "in a thread" || u.ReplyTo != id {
		t.Errorf("thread update = %+v", u)
	}
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.image", "body": "cat.png", "url": "mxc://fake.test/cat"})
	if u := r.next(); u.Text != "" || u.Voice != nil || u.Action != nil || u.Sender != owner {
		t.Errorf("image update = %+v", u)
	}

	// A stranger who names themself "Owner" is still the stranger, and a
	// room of three is not private even when one of them left later.
	eve := srv.CreateRoom(matrixtest.RoomOptions{Creator: stranger, Names: names, JoinBot: true})
	srv.Say(eve, stranger, "I am the owner")
	if u := r.next(); u.Sender != stranger || !u.Private {
		t.Errorf("stranger update = %+v", u)
	}
	srv.Join(d, contact)
	srv.Say(d, owner, "now three of us")
	if u := r.next(); u.Private {
		t.Errorf("a room of three is private: %+v", u)
	}
	srv.Leave(d, contact)
	srv.Say(d, owner, "two again")
	if u := r.next(); !u.Private {
		t.Errorf("a room of two is not private: %+v", u)
	}
	if a.UserID() != matrixtest.Bot {
		t.Errorf("UserID = %q", a.UserID())
	}
	// The filter asks only for what is read.
	f := srv.Filters()[0]
	for _, want := range []string{`"m.room.message"`, `"m.reaction"`, `"m.room.encrypted"`, `"lazy_load_members":true`, `"presence"`} {
		if !strings.Contains(f, want) {
			t.Errorf("filter %s lacks %s", f, want)
		}
	}
}

func TestHistoryIsNotReplayedOnFirstStart(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	srv.PostAt(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "last week"}, time.Now().Add(-7*24*time.Hour))
	srv.PostAt(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "a minute ago"}, time.Now().Add(-time.Minute))
	r := receive(t, srv, newAdapter(t, srv, opts{}))
	r.quiet(400 * time.Millisecond)
	srv.Say(d, owner, "new")
	if u := r.next(); u.Text != "new" {
		t.Errorf("first update = %+v", u)
	}
}

func TestPositionSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	state := filepath.Join(t.TempDir(), "state", "matrix.json")
	r := receive(t, srv, newAdapter(t, srv, opts{stateFile: state}))
	srv.Say(d, owner, "before")
	if u := r.next(); u.Text != "before" {
		t.Fatalf("update = %+v", u)
	}
	waitFor(t, "the state file", func() bool { _, err := os.Stat(state); return err == nil })
	r.stop()
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v %v", fi, err)
	}
	// Written while Hestia was down, with a timestamp from before the new
	// process starts: still answered, because the position says it is new.
	srv.PostAt(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "while down"}, time.Now().Add(-time.Hour))
	syncs := len(srv.Syncs())
	r2 := receive(t, srv, newAdapter(t, srv, opts{stateFile: state}))
	u := r2.next()
	if u.Text == "before" {
		// Stopped between handling the batch and saving its position:
		// read again, and dropped by the relay's deduplication by ID.
		u = r2.next()
	}
	if u.Text != "while down" {
		t.Errorf("after restart = %+v", u)
	}
	r2.quiet(300 * time.Millisecond)
	if first := srv.Syncs()[syncs]; first == "" {
		t.Error("the restarted adapter synced without the saved position")
	}
}

func TestStateOfAnotherAccountIsIgnored(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	state := filepath.Join(t.TempDir(), "matrix.json")
	if err := os.WriteFile(state, []byte(`{"since":"s0","user_id":"@other:fake.test","homeserver":"`+srv.URL+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.PostAt(d, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "old"}, time.Now().Add(-time.Hour))
	r := receive(t, srv, newAdapter(t, srv, opts{stateFile: state}))
	r.quiet(400 * time.Millisecond)
	if s := srv.Syncs(); len(s) == 0 || s[0] != "" {
		t.Errorf("syncs = %q", s)
	}
}

func TestGapIsFilled(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	state := filepath.Join(t.TempDir(), "matrix.json")
	r := receive(t, srv, newAdapter(t, srv, opts{stateFile: state}))
	srv.Say(d, owner, "first")
	r.next()
	waitFor(t, "the state file", func() bool { _, err := os.Stat(state); return err == nil })
	r.stop()
	const n = 130 // more than a sync's timeline holds
	for i := range n {
		srv.Say(d, owner, "m"+strconv.Itoa(i))
	}
	r2 := receive(t, srv, newAdapter(t, srv, opts{stateFile: state}))
	for i := range n {
		if u := r2.next(); u.Text != "m"+strconv.Itoa(i) {
			t.Fatalf("message %d = %q", i, u.Text)
		}
	}
	r2.quiet(300 * time.Millisecond)
	if srv.Calls("messages") == 0 {
		t.Error("the gap was not filled from /messages")
	}
}

func TestInvites(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	logs := &strings.Builder{}
	r := receive(t, srv, newAdapter(t, srv, opts{logs: logs}))

	// History from before the invite is not read as new messages.
	mine := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, Names: names})
	srv.PostAt(mine, owner, "m.room.message", map[string]any{"msgtype": "m.text", "body": "before the invite"}, time.Now().Add(-time.Hour))
	time.Sleep(5 * time.Millisecond)
	srv.Invite(mine, owner)
	waitFor(t, "the bot to join", func() bool { return srv.Membership(mine, matrixtest.Bot) == "join" })
	srv.Say(mine, owner, "welcome")
	if u := r.next(); u.Text != "welcome" || u.Conv != mine || !u.Private {
		t.Errorf("after join = %+v", u)
	}

	evil := srv.CreateRoom(matrixtest.RoomOptions{Creator: stranger, Names: names})
	srv.Invite(evil, stranger)
	waitFor(t, "the invite to be declined", func() bool { return srv.Membership(evil, matrixtest.Bot) == "leave" })
	if !strings.Contains(logs.String(), "declined an invite") || !strings.Contains(logs.String(), stranger) {
		t.Errorf("the declined invite was not logged: %s", logs)
	}

	// An encrypted room from the owner: joined, and told once why the bot
	// cannot read it.
	enc := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, Names: names, Encrypted: true})
	srv.Invite(enc, owner)
	waitFor(t, "the encryption notice", func() bool { return len(srv.BotMessages(enc)) == 1 })
	n := srv.BotMessages(enc)[0]
	if n.MsgType != "m.notice" || !strings.Contains(n.Body, "encrypted") || !strings.Contains(n.Body, "encryption off") {
		t.Errorf("notice = %+v", n)
	}
	r.quiet(200 * time.Millisecond)
	if strings.Contains(logs.String(), matrixtest.Token) {
		t.Error("the token was logged")
	}
}

func TestEncryptedMessages(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	enc := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner, Members: []string{stranger}, Names: names, JoinBot: true, Encrypted: true})
	r := receive(t, srv, newAdapter(t, srv, opts{}))
	ciphertext := map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAC", "session_id": "x", "device_id": "D"}
	srv.Post(enc, owner, "m.room.encrypted", ciphertext)
	srv.Post(enc, owner, "m.room.encrypted", ciphertext)
	// A stranger's encrypted message reaches the relay, which refuses and
	// audits strangers; the owner's only got the notice.
	id := srv.Post(enc, stranger, "m.room.encrypted", ciphertext)
	if u := r.next(); u.ID != id || u.Sender != stranger || u.Text != "" || u.Private {
		t.Errorf("stranger's encrypted message = %+v", u)
	}
	r.quiet(200 * time.Millisecond)
	if got := srv.BotMessages(enc); len(got) != 1 || got[0].MsgType != "m.notice" {
		t.Errorf("notices = %+v", got)
	}
}

func TestReactionsAnswerPrompts(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	r := receive(t, srv, a)
	ctx := context.Background()

	ref, err := a.Send(ctx, d, channels.Outgoing{Key: "matrix:card:A1", Text: "🔐 **Approval needed**: `write_file`\nReply \"K7QF approve\" or \"K7QF deny\".",
		Prompt: &channels.Prompt{ApprovalID: "A1", Code: "K7QF"}})
	if err != nil {
		t.Fatal(err)
	}
	msgs := srv.BotMessages(d)
	if len(msgs) != 1 || msgs[0].ID != ref || !strings.Contains(msgs[0].Body, "K7QF approve") || !strings.Contains(msgs[0].Body, "react with 👍") {
		t.Fatalf("prompt = %+v", msgs)
	}
	// The bot offers both reactions; its own are not actions.
	rs := srv.Reactions(d, ref)
	if len(rs) != 2 || rs[0].Key != "👍" || rs[1].Key != "👎" || rs[0].Sender != matrixtest.Bot {
		t.Errorf("offered reactions = %+v", rs)
	}
	id := srv.React(d, owner, ref, "👍")
	if u := r.next(); u.ID != id || u.Action == nil || u.Action.Ref != ref || u.Action.Verb != channels.VerbApprove || u.Sender != owner || u.Conv != d || !u.Private {
		t.Errorf("approve = %+v %+v", u, u.Action)
	}
	srv.React(d, owner, ref, "🎉")  // not a choice: nothing
	srv.React(d, owner, ref, "👎️") // with the variation selector
	if u := r.next(); u.Action == nil || u.Action.Verb != channels.VerbDeny {
		t.Errorf("deny = %+v", u)
	}
	srv.React(d, owner, ref, "👍🏽") // a skin tone
	if u := r.next(); u.Action == nil || u.Action.Verb != channels.VerbApprove {
		t.Errorf("skin tone = %+v", u)
	}
	srv.React(d, owner, ref, "✅")
	if u := r.next(); u.Action == nil || u.Action.Verb != channels.VerbApprove {
		t.Errorf("check mark = %+v", u)
	}
	srv.React(d, owner, ref, "❌")
	if u := r.next(); u.Action == nil || u.Action.Verb != channels.VerbDeny {
		t.Errorf("cross = %+v", u)
	}
	r.quiet(200 * time.Millisecond)

	// Resending the prompt (the outbox retrying) posts nothing new, nor
	// new reactions.
	ref2, err := a.Send(ctx, d, channels.Outgoing{Key: "matrix:card:A1", Text: "🔐 **Approval needed**: `write_file`\nReply \"K7QF approve\" or \"K7QF deny\".",
		Prompt: &channels.Prompt{ApprovalID: "A1", Code: "K7QF"}})
	if err != nil || ref2 != ref || len(srv.BotMessages(d)) != 1 || len(srv.Reactions(d, ref)) != 2+6 {
		t.Errorf("resend: ref %q (was %q), %v, %d messages, %d reactions", ref2, ref, err, len(srv.BotMessages(d)), len(srv.Reactions(d, ref)))
	}

	// Closing the prompt edits the hint away; a question offers only 👎.
	if err := a.Edit(ctx, d, ref, channels.Outgoing{Key: "matrix:closed:A1", Text: "🔐 **Approval needed**\n\n**✅ Approved**",
		Prompt: &channels.Prompt{ApprovalID: "A1", Code: "K7QF", Closed: true}}); err != nil {
		t.Fatal(err)
	}
	if m := srv.BotMessages(d)[0]; strings.Contains(m.Body, "react") || !strings.Contains(m.Body, "Approved") || m.Edits != 1 {
		t.Errorf("closed prompt = %+v", m)
	}
	q, err := a.Send(ctx, d, channels.Outgoing{Key: "matrix:card:Q1", Text: "❓ Which one?", Prompt: &channels.Prompt{ApprovalID: "Q1", Code: "ABCD", Question: true}})
	if err != nil {
		t.Fatal(err)
	}
	if rs := srv.Reactions(d, q); len(rs) != 1 || rs[0].Key != "👎" {
		t.Errorf("question reactions = %+v", rs)
	}
}

func TestSendRendersAndIsIdempotent(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	ctx := context.Background()
	md := "Done, I wrote **note.txt** <script>alert(1)</script> & `x<y`\n\n- one\n- two\n\n```go\nfmt.Println(\"<hi>\")\n```\n@room see [docs](https://example.org/a?b=1&c=2)"
	ref, err := a.Send(ctx, d, channels.Outgoing{Key: "k1", Text: md})
	if err != nil {
		t.Fatal(err)
	}
	m := srv.BotMessages(d)[0]
	if m.ID != ref || m.Body != md || m.MsgType != "m.text" {
		t.Errorf("message = %+v", m)
	}
	for _, want := range []string{"<strong>note.txt</strong>", "&lt;script&gt;", "<code>x&lt;y</code>", "<ul><li>one</li><li>two</li></ul>",
		`<pre><code class="language-go">fmt.Println(&#34;&lt;hi&gt;&#34;)</code></pre>`, `<a href="https://example.org/a?b=1&amp;c=2">docs</a>`} {
		if !strings.Contains(m.HTML, want) {
			t.Errorf("html %q lacks %q", m.HTML, want)
		}
	}
	if mentions, ok := m.Content["m.mentions"].(map[string]any); !ok || len(mentions) != 0 {
		t.Errorf("m.mentions = %#v (nothing the model writes may ping)", m.Content["m.mentions"])
	}
	if m.Content["format"] != "org.matrix.custom.html" {
		t.Errorf("format = %v", m.Content["format"])
	}
	// Plain text goes without HTML, like a typed message.
	if _, err := a.Send(ctx, d, channels.Outgoing{Key: "k2", Text: "just words"}); err != nil {
		t.Fatal(err)
	}
	if m := srv.BotMessages(d)[1]; m.HTML != "" || m.Content["format"] != nil {
		t.Errorf("plain = %+v", m)
	}
	// The same key again (a retry after a lost answer): the same event.
	again, err := a.Send(ctx, d, channels.Outgoing{Key: "k1", Text: md})
	if err != nil || again != ref || len(srv.BotMessages(d)) != 2 {
		t.Errorf("retry: %q %v, %d messages", again, err, len(srv.BotMessages(d)))
	}
	// A reply to a message in a thread stays in the thread.
	root := srv.Say(d, owner, "thread root")
	if _, err := a.Send(ctx, d, channels.Outgoing{Key: "k3", Text: "in thread", ReplyTo: root}); err != nil {
		t.Fatal(err)
	}
	last := srv.BotMessages(d)[2]
	if rel, _ := last.Content["m.relates_to"].(map[string]any); rel["rel_type"] != "m.thread" || rel["event_id"] != root {
		t.Errorf("thread relation = %#v", last.Content["m.relates_to"])
	}
}

func TestEditStreams(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	ctx := context.Background()
	key := "matrix:stream:T1:0"
	ref, err := a.Send(ctx, d, channels.Outgoing{Key: key, Text: "Hel"})
	if err != nil {
		t.Fatal(err)
	}
	// Streaming edits share the key; each new text is a new edit, a
	// repeat of one is not.
	for _, text := range []string{"Hello wor", "Hello world, **done**", "Hello world, **done**"} {
		if err := a.Edit(ctx, d, ref, channels.Outgoing{Key: key, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	m := srv.BotMessages(d)
	if len(m) != 1 || m[0].Body != "Hello world, **done**" || m[0].HTML != "Hello world, <strong>done</strong>" || m[0].Edits != 2 {
		t.Fatalf("after edits = %+v", m)
	}
	edits := srv.Events(d, "m.room.message")
	last := edits[len(edits)-1].Content
	if last["body"] != "* Hello world, **done**" {
		t.Errorf("fallback body = %q", last["body"])
	}
	if nc, _ := last["m.new_content"].(map[string]any); nc["m.relates_to"] != nil || nc["body"] != "Hello world, **done**" {
		t.Errorf("m.new_content = %#v", nc)
	}
	// Edits that can never apply are permanent, so the relay posts anew.
	var pe *channels.PermanentError
	if err := a.Edit(ctx, d, "$missing", channels.Outgoing{Key: "x", Text: "y"}); !errors.As(err, &pe) {
		t.Errorf("edit of an unknown event: %v", err)
	}
	if err := a.Edit(ctx, d, "not-an-event", channels.Outgoing{Key: "x", Text: "y"}); !errors.As(err, &pe) {
		t.Errorf("edit of a bad ref: %v", err)
	}
}

func TestOversizedTextIsShrunkNotRefused(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	ctx := context.Background()
	if a.Limits().MaxText <= 0 || !a.Limits().Idempotent || !a.Limits().Reactions || a.Limits().Buttons || !a.Limits().Edit {
		t.Errorf("limits = %+v", a.Limits())
	}
	huge := strings.Repeat("**🦊 fox** ", 9000) // 4-byte runes with markup: far over 64 KiB as HTML
	ref, err := a.Send(ctx, d, channels.Outgoing{Key: "big", Text: huge})
	if err != nil {
		t.Fatalf("send refused: %v", err)
	}
	if err := a.Edit(ctx, d, ref, channels.Outgoing{Key: "big", Text: huge + " more"}); err != nil {
		t.Fatalf("edit refused: %v", err)
	}
	m := srv.BotMessages(d)[0]
	if m.Edits != 1 || !strings.HasPrefix(m.Body, "**🦊 fox**") || !strings.HasSuffix(m.Body, "…") {
		t.Errorf("shrunk message: %d edits, body %q…%q", m.Edits, m.Body[:20], m.Body[len(m.Body)-10:])
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	ctx := context.Background()
	srv.Throttle("send", 1500)
	_, err := a.Send(ctx, d, channels.Outgoing{Key: "k", Text: "hi"})
	var ra *channels.RetryAfterError
	if !errors.As(err, &ra) || ra.After != 1500*time.Millisecond || !strings.Contains(err.Error(), "M_LIMIT_EXCEEDED") {
		t.Fatalf("err = %v", err)
	}
	if _, err := a.Send(ctx, d, channels.Outgoing{Key: "k", Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	srv.Throttle("send", 2000)
	if err := a.Edit(ctx, d, srv.BotMessages(d)[0].ID, channels.Outgoing{Key: "k", Text: "hi!"}); !errors.As(err, &ra) || ra.After != 2*time.Second {
		t.Errorf("edit err = %v", err)
	}
	// A rate-limited sync waits and goes on.
	srv.Throttle("sync", 100, 100)
	r := receive(t, srv, a)
	srv.Say(d, owner, "after the limit")
	if u := r.next(); u.Text != "after the limit" {
		t.Errorf("update = %+v", u)
	}
}

func TestPermanentAndTransientErrors(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	notMine := srv.CreateRoom(matrixtest.RoomOptions{Creator: owner})
	a := newAdapter(t, srv, opts{})
	ctx := context.Background()
	var pe *channels.PermanentError
	var ra *channels.RetryAfterError

	_, err := a.Send(ctx, notMine, channels.Outgoing{Key: "k", Text: "hi"})
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "M_FORBIDDEN") || !strings.Contains(err.Error(), "sending a message") {
		t.Errorf("not in room: %v", err)
	}
	if _, err := a.Send(ctx, "general", channels.Outgoing{Key: "k", Text: "hi"}); !errors.As(err, &pe) {
		t.Errorf("bad room id: %v", err)
	}
	srv.Fail("send", 502)
	_, err = a.Send(ctx, d, channels.Outgoing{Key: "k", Text: "hi"})
	if err == nil || errors.As(err, &pe) || errors.As(err, &ra) {
		t.Errorf("a 502 must be retried: %v", err)
	}
	srv.RevokeToken()
	_, err = a.Send(ctx, d, channels.Outgoing{Key: "k", Text: "hi"})
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "M_UNKNOWN_TOKEN") || !strings.Contains(err.Error(), "channels.matrix.token") || strings.Contains(err.Error(), matrixtest.Token) {
		t.Errorf("revoked token: %v", err)
	}
	if err := a.Receive(ctx, func(context.Context, channels.Update) { t.Error("handler called") }); err == nil || !strings.Contains(err.Error(), "access token") {
		t.Errorf("Receive with a revoked token: %v", err)
	}
}

func TestTokenOfAnOwnerIsRefused(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	a := newAdapter(t, srv, opts{inviters: []string{matrixtest.Bot}})
	err := a.Receive(context.Background(), func(context.Context, channels.Update) {})
	if err == nil || !strings.Contains(err.Error(), "account of its own") {
		t.Errorf("err = %v", err)
	}
	if _, err := a.Check(context.Background()); err == nil {
		t.Error("Check accepted an owner's token")
	}
}

func TestVoice(t *testing.T) {
	t.Parallel()
	srv := matrixtest.New(t)
	d := dm(srv, owner)
	a := newAdapter(t, srv, opts{})
	r := receive(t, srv, a)
	ogg := append([]byte("OggS"), make([]byte, 60)...)
	mxc := srv.AddMedia(ogg, "audio/ogg")
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.audio", "body": "Voice message.ogg", "url": mxc,
		"info": map[string]any{"mimetype": "audio/ogg", "size": len(ogg)}, "org.matrix.msc3245.voice": map[string]any{}})
	u := r.next()
	if u.Voice == nil || u.Voice.Mime != "audio/ogg" || u.Voice.Size != int64(len(ogg)) || u.Voice.Filename != "Voice message.ogg" || u.Text != "" {
		t.Fatalf("voice update = %+v", u)
	}
	got, err := u.Voice.Fetch(context.Background())
	if err != nil || string(got) != string(ogg) {
		t.Errorf("fetch = %q, %v", got, err)
	}
	// A broken or foreign URL never reaches a fetch.
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.audio", "body": "x", "url": "https://evil.test/x"})
	if u := r.next(); u.Voice != nil {
		t.Errorf("a non-mxc url became a voice note: %+v", u.Voice)
	}
	srv.Post(d, owner, "m.room.message", map[string]any{"msgtype": "m.audio", "body": "x", "url": "mxc://fake.test/gone", "info": map[string]any{"mimetype": "audio/ogg"}})
	if u := r.next(); u.Voice == nil {
		t.Error("no voice")
	} else if _, err := u.Voice.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "M_NOT_FOUND") {
		t.Errorf("missing media: %v", err)
	}

	var vs channels.VoiceSender = a
	if err := vs.SendVoice(context.Background(), d, ogg, "audio/ogg"); err != nil {
		t.Fatal(err)
	}
	m := srv.BotMessages(d)[0]
	if m.MsgType != "m.audio" || m.Content["org.matrix.msc3245.voice"] == nil {
		t.Fatalf("voice message = %+v", m)
	}
	data, ct, ok := srv.Media(m.Content["url"].(string))
	if !ok || ct != "audio/ogg" || string(data) != string(ogg) {
		t.Errorf("uploaded %q %q %v", data, ct, ok)
	}
}

// A homeserver (or something posing as one) answering nonsense: Receive
// fails with a clear error and hands nothing on.
func TestMalformedSync(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"not json":        "<html>502 Bad Gateway</html>",
		"no next_batch":   `{"rooms":{"join":{}}}`,
		"wrong types":     `{"next_batch":5}`,
		"truncated":       `{"next_batch":"s1","rooms":{"join":{"!a:b":{"timeline":{"events":[{"type":"m.room.mess`,
		"rooms not a map": `{"next_batch":"s1","rooms":{"join":[1,2]}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" {
					w.WriteHeader(401)
					return
				}
				if strings.HasSuffix(r.URL.Path, "/whoami") {
					w.Write([]byte(`{"user_id":"@bot:x.test"}`))
					return
				}
				w.Write([]byte(body))
			}))
			defer srv.Close()
			a, err := matrix.New(matrix.Config{Homeserver: srv.URL, Token: "tok"}, srv.Client(), nil)
			if err != nil {
				t.Fatal(err)
			}
			err = a.Receive(context.Background(), func(context.Context, channels.Update) { t.Error("handler called") })
			if err == nil || !strings.Contains(err.Error(), "sync") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestMalformedEventsAreSkipped(t *testing.T) {
	t.Parallel()
	// Events a broken or hostile server could send: bad ids, bad content,
	// reactions without targets. None may crash or become an update, and
	// a good event after them still arrives.
	batch := `{"next_batch":"s9","rooms":{"join":{"!r:x.test":{"timeline":{"events":[
		{"type":"m.room.message","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"msgtype":"m.text","body":"no id"}},
		{"type":"m.room.message","event_id":"$a","sender":"me","origin_server_ts":9999999999999,"content":{"msgtype":"m.text","body":"bad sender"}},
		{"type":"m.room.message","event_id":"$b","sender":"@me:x.test","origin_server_ts":9999999999999,"content":"a string"},
		{"type":"m.room.message","event_id":"$c","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"msgtype":"m.text","body":["x"]}},
		{"type":"m.reaction","event_id":"$d","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"m.relates_to":{"rel_type":"m.annotation","key":"👍"}}},
		{"type":"m.reaction","event_id":"$e","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"m.relates_to":{"rel_type":"m.annotation","event_id":"../../x","key":"👍"}}},
		{"type":"m.room.message","event_id":"$ok","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"msgtype":"m.text","body":"fine"}}
	]}}, "bad room": {"timeline":{"events":[{"type":"m.room.message","event_id":"$z","sender":"@me:x.test","origin_server_ts":9999999999999,"content":{"msgtype":"m.text","body":"bad room"}}]}}}}}`
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/whoami"):
			w.Write([]byte(`{"user_id":"@bot:x.test"}`))
		case strings.HasSuffix(r.URL.Path, "/joined_members"):
			w.Write([]byte(`{"joined":{"@me:x.test":{"display_name":"Me"},"@bot:x.test":{}}}`))
		case strings.HasSuffix(r.URL.Path, "/sync"):
			sent := false
			once.Do(func() { w.Write([]byte(batch)); sent = true })
			if !sent {
				<-r.Context().Done()
			}
		}
	}))
	defer srv.Close()
	a, err := matrix.New(matrix.Config{Homeserver: srv.URL, Token: "tok", PollTimeout: time.Second}, srv.Client(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []channels.Update
	done := make(chan error)
	go func() {
		done <- a.Receive(ctx, func(_ context.Context, u channels.Update) {
			got = append(got, u)
			cancel()
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}
	if len(got) != 1 || got[0].ID != "$ok" || !got[0].Private || got[0].SenderName != "Me" {
		t.Errorf("updates = %+v", got)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []matrix.Config{{Homeserver: "matrix.example.org", Token: "t"}, {Homeserver: "https://m.example.org"}} {
		if _, err := matrix.New(c, nil, nil); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
