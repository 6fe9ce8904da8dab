package signal

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/channels/signal/signaltest"
)

var (
	anna   = signaltest.Person{Number: "+393471234567", UUID: "7ccae375-cd51-4c82-8b1e-7be3280aa485", Name: "Anna"}
	hidden = signaltest.Person{UUID: "5d2b0c6e-1111-4a4a-9b9b-000000000001", Name: "Bruno"}
)

const family = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="

func newAdapter(t *testing.T, s *signaltest.Server, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := Config{Name: "signal", Account: signaltest.Account, Socket: s.Socket, ConnectWait: 3 * time.Second,
		Identities: []string{anna.Number}}
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// receiving runs Receive until the test ends and hands updates over.
type receiving struct {
	updates chan channels.Update
	done    chan error
	cancel  context.CancelFunc
}

func receive(t *testing.T, a *Adapter) *receiving {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &receiving{updates: make(chan channels.Update, 100), done: make(chan error, 1), cancel: cancel}
	go func() {
		r.done <- a.Receive(ctx, func(_ context.Context, u channels.Update) { r.updates <- u })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Receive after cancel = %v, want nil", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Receive did not return after cancel")
		}
	})
	return r
}

func (r *receiving) next(t *testing.T) channels.Update {
	t.Helper()
	select {
	case u := <-r.updates:
		return u
	case err := <-r.done:
		t.Fatalf("Receive returned %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}
	return channels.Update{}
}

func (r *receiving) none(t *testing.T) {
	t.Helper()
	select {
	case u := <-r.updates:
		t.Fatalf("unexpected update %+v", u)
	case <-time.After(150 * time.Millisecond):
	}
}

func TestReceiveTextAndGroups(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	s.AddGroup(family)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)

	ts := s.Text(anna, "what's on today?")
	u := r.next(t)
	want := channels.Update{ID: anna.UUID + ":" + strconv.FormatInt(ts, 10), Conv: anna.Number, Sender: anna.Number, SenderName: "Anna", Private: true, Text: "what's on today?"}
	if u.ID != want.ID || u.Conv != want.Conv || u.Sender != want.Sender || u.SenderName != want.SenderName || !u.Private || u.Text != want.Text || u.Action != nil || u.Voice != nil {
		t.Errorf("update = %+v, want %+v", u, want)
	}

	s.GroupText(anna, family, "hello all")
	if g := r.next(t); g.Private || g.Conv != "group:"+family || g.Sender != anna.Number || g.Text != "hello all" {
		t.Errorf("group update = %+v", g)
	}

	// Someone who hides their number is known by their account UUID.
	s.Text(hidden, "hi")
	if h := r.next(t); h.Sender != hidden.UUID || h.Conv != hidden.UUID || !h.Private {
		t.Errorf("hidden-number update = %+v", h)
	}
}

func TestReceiveIgnores(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)

	s.Text(signaltest.Person{Number: signaltest.Account, UUID: "2f5a0d4e-8c1b-4e57-9d0a-5b3c1e7f9a21"}, "my own echo")
	s.Envelope(map[string]any{"source": signaltest.Account, "sourceNumber": signaltest.Account, "timestamp": 5,
		"syncMessage": map[string]any{"sentMessage": map[string]any{"destination": anna.Number, "timestamp": 5, "message": "sent from the phone"}}})
	s.Envelope(map[string]any{"sourceNumber": anna.Number, "timestamp": 6, "receiptMessage": map[string]any{"when": 6, "isDelivery": true, "timestamps": []int64{1}}})
	s.Envelope(map[string]any{"sourceNumber": anna.Number, "timestamp": 7, "typingMessage": map[string]any{"action": "STARTED", "timestamp": 7}})
	s.Envelope(map[string]any{"sourceNumber": anna.Number, "timestamp": 8, "dataMessage": map[string]any{"timestamp": 8, "message": nil}}) // profile key
	s.React(anna, 1234, "❤️", "", false)
	s.React(anna, 1234, "👍", "", true)                // removed
	s.React(anna, 1234, "👍", "+4915112345678", false) // someone else's message
	// A daemon serving several accounts: another account's message.
	s.RawLine(`{"jsonrpc":"2.0","method":"receive","params":{"envelope":{"sourceNumber":"+393471234567","timestamp":9,"dataMessage":{"timestamp":9,"message":"for the other number"}},"account":"+15559999999"}}`)
	s.Text(anna, "the only one")
	if u := r.next(t); u.Text != "the only one" {
		t.Fatalf("got %+v", u)
	}
	r.none(t)
}

func TestReceiveMalformedKeepsGoing(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)
	for _, line := range []string{
		`this is not json`,
		`{"jsonrpc":"2.0","method":"receive","params":{"envelope":{"sourceNumber":42,"timestamp":"soon"}}}`,
		`{"jsonrpc":"2.0","method":"receive","params":{"envelope":{"sourceNumber":"+39 347","timestamp":1,"dataMessage":{"message":"x"}}}}`,
		`{"jsonrpc":"2.0","method":"receive","params":{"account":"+15550001111"}}`,
		`{"jsonrpc":"2.0","method":"receive","params":"nope"}`,
		`{"jsonrpc":"2.0","id":"h999","result":{}}`, // an answer nobody waits for
		`{"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","method":"somethingNew","params":{}}`,
		`[1,2,3]`,
	} {
		s.RawLine(line)
	}
	s.Text(anna, "still here")
	if u := r.next(t); u.Text != "still here" {
		t.Fatalf("got %+v", u)
	}
	r.none(t)
}

func TestReceiveAutomaticModeOnce(t *testing.T) {
	t.Parallel()
	// In the daemon's automatic mode a connection gets every message under
	// the automatic subscription and again under its own: once each.
	s := signaltest.New(t)
	s.AutoReceive(true)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)
	s.Text(anna, "once")
	if u := r.next(t); u.Text != "once" {
		t.Fatalf("got %+v", u)
	}
	r.none(t)
}

func TestReceiveWrappedAndOldDaemons(t *testing.T) {
	t.Parallel()
	t.Run("wrapped", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.Wrapped(true)
		r := receive(t, newAdapter(t, s, nil))
		s.WaitSubscribed(1)
		s.Text(anna, "wrapped")
		if u := r.next(t); u.Text != "wrapped" {
			t.Fatalf("got %+v", u)
		}
	})
	t.Run("no subscribeReceive", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.Old()
		s.AutoReceive(true)
		r := receive(t, newAdapter(t, s, nil))
		s.WaitSubscribed(1)
		for s.Calls("subscribeReceive") == 0 { // refused: delivery is automatic
			time.Sleep(10 * time.Millisecond)
		}
		s.Text(anna, "old")
		if u := r.next(t); u.Text != "old" {
			t.Fatalf("got %+v", u)
		}
	})
}

func TestReconnectLosesNothing(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan channels.Update, 10)
	h := func(_ context.Context, u channels.Update) { got <- u }
	done := make(chan error, 1)
	go func() { done <- a.Receive(ctx, h) }()
	s.WaitSubscribed(1)
	s.Restart() // signal-cli restarts
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "signal-cli") {
			t.Fatalf("Receive = %v, want an error naming signal-cli", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not notice the daemon going")
	}
	// While Hestia is away (manual receive mode), messages wait.
	s.Text(anna, "while you were away")
	go func() { done <- a.Receive(ctx, h) }()
	select {
	case u := <-got:
		if u.Text != "while you were away" {
			t.Fatalf("got %+v", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held message never came")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Receive after cancel = %v", err)
	}
}

func TestReceiveNoDaemon(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Account: signaltest.Account, Socket: filepath.Join(t.TempDir(), "none")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Receive(context.Background(), func(context.Context, channels.Update) {})
	if err == nil || !strings.Contains(err.Error(), "is the daemon running") {
		t.Fatalf("Receive = %v", err)
	}
}

func TestSendFormatsAndReturnsTimestamp(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	s.AddGroup(family)
	a := newAdapter(t, s, nil)
	receive(t, a)
	s.WaitSubscribed(1)
	ctx := context.Background()

	ref, err := a.Send(ctx, anna.Number, channels.Outgoing{Key: "k1", Text: "## Today\n- **9:00** dentist 😀\n- `lunch` with _Bruno_"})
	if err != nil {
		t.Fatal(err)
	}
	msgs := s.WaitSent(1)
	m := msgs[0]
	if strconv.FormatInt(m.Timestamp, 10) != ref || m.Recipient != anna.Number {
		t.Fatalf("sent %+v, ref %s", m, ref)
	}
	if m.Text != "Today\n• 9:00 dentist 😀\n• lunch with Bruno" {
		t.Errorf("text = %q", m.Text)
	}
	// The emoji is two UTF-16 units.
	if want := []string{"0:5:BOLD", "8:4:BOLD", "26:5:MONOSPACE", "37:5:ITALIC"}; !slices.Equal(m.Styles, want) {
		t.Errorf("styles = %q, want %q", m.Styles, want)
	}
	req := s.Requests("send")[0].Params
	if req["account"] != signaltest.Account {
		t.Errorf("send without the account: %v", req)
	}

	if _, err := a.Send(ctx, "group:"+family, channels.Outgoing{Key: "k2", Text: "to the group"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctx, hidden.UUID, channels.Outgoing{Key: "k3", Text: "to a UUID"}); err != nil {
		t.Fatal(err)
	}
	msgs = s.WaitSent(3)
	if msgs[1].GroupID != family || msgs[1].Recipient != "" || msgs[2].Recipient != hidden.UUID {
		t.Errorf("sent %+v", msgs[1:])
	}
}

func TestSendLongAndEmpty(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	receive(t, a)
	s.WaitSubscribed(1)
	ctx := context.Background()
	long := strings.Repeat("**word** ", 1000) // 9000 runes of Markdown
	if _, err := a.Send(ctx, anna.Number, channels.Outgoing{Key: "long", Text: long}); err != nil {
		t.Fatal(err)
	}
	m := s.WaitSent(1)[0]
	if n := utf8.RuneCountInString(m.Text); n > maxBody || !strings.HasSuffix(m.Text, "…") {
		t.Errorf("long message is %d runes", n)
	}
	_, err := a.Send(ctx, anna.Number, channels.Outgoing{Key: "empty", Text: "  \n "})
	var pe *channels.PermanentError
	if !errors.As(err, &pe) {
		t.Errorf("empty message: %v", err)
	}
	for _, conv := range []string{"", "anna", "group:", "group:not base64!", "+39 347"} {
		if _, err := a.Send(ctx, conv, channels.Outgoing{Key: "x", Text: "x"}); !errors.As(err, &pe) {
			t.Errorf("conversation %q: %v, want permanent", conv, err)
		}
	}
	if got := s.Calls("send"); got != 1 {
		t.Errorf("%d sends reached signal-cli, want 1", got)
	}
}

func TestPromptsAndReactions(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)
	ctx := context.Background()

	card := channels.Outgoing{Key: "signal:card:ap1", Text: "🔐 **Approval needed**: `write_file`\nReply \"K7QF approve\" or \"K7QF deny\".",
		Prompt: &channels.Prompt{ApprovalID: "ap1", Code: "K7QF"}}
	ref, err := a.Send(ctx, anna.Number, card)
	if err != nil {
		t.Fatal(err)
	}
	m := s.WaitSent(1)[0]
	if !strings.Contains(m.Text, "K7QF approve") || !strings.Contains(m.Text, "react 👍") || !strings.Contains(m.Text, "👎 to deny") {
		t.Errorf("prompt text = %q", m.Text)
	}
	q := channels.Outgoing{Key: "q", Text: "❓ Which one?", Prompt: &channels.Prompt{ApprovalID: "q1", Code: "ABCD", Question: true}}
	if _, err := a.Send(ctx, anna.Number, q); err != nil {
		t.Fatal(err)
	}
	if m := s.WaitSent(2)[1]; !strings.Contains(m.Text, "👎 to this message to decline") || strings.Contains(m.Text, "approve") {
		t.Errorf("question text = %q", m.Text)
	}

	target, _ := strconv.ParseInt(ref, 10, 64)
	s.React(anna, target, "👍🏽", "", false)
	u := r.next(t)
	if u.Action == nil || u.Action.Ref != ref || u.Action.Verb != channels.VerbApprove || u.Sender != anna.Number || u.Conv != anna.Number || u.ID == "" {
		t.Fatalf("reaction update = %+v / %+v", u, u.Action)
	}
	s.React(anna, target, "👎", "", false)
	if u := r.next(t); u.Action == nil || u.Action.Verb != channels.VerbDeny || u.Action.Ref != ref {
		t.Fatalf("deny = %+v", u.Action)
	}

	// The prompt closes by an edit without the hint; a reaction to the
	// edited revision still names the prompt.
	closed := card
	closed.Key = "signal:closed:ap1"
	closed.Text += "\n\n**✅ Approved**"
	closed.Prompt = &channels.Prompt{ApprovalID: "ap1", Code: "K7QF", Closed: true}
	if err := a.Edit(ctx, anna.Number, ref, closed); err != nil {
		t.Fatal(err)
	}
	e := s.WaitEdits(0, 1)
	text, _ := e.Current()
	if strings.Contains(text, "react") || !strings.Contains(text, "✅ Approved") || e.Edits[0].Target != target {
		t.Errorf("closed prompt = %q (target %d)", text, e.Edits[0].Target)
	}
	s.React(anna, e.Edits[0].Timestamp, "👍", "", false)
	if u := r.next(t); u.Action == nil || u.Action.Ref != ref {
		t.Fatalf("reaction to the revision = %+v", u.Action)
	}
}

func TestEditsAreRationed(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	now := time.Now()
	clock := func() time.Time { return now }
	a := newAdapter(t, s, func(c *Config) { c.Clock = func() time.Time { return clock() } })
	receive(t, a)
	s.WaitSubscribed(1)
	ctx := context.Background()

	ref, err := a.Send(ctx, anna.Number, channels.Outgoing{Key: "stream:t1:0", Text: "Hel"})
	if err != nil {
		t.Fatal(err)
	}
	// Streaming edits (the same key) stop short of Signal's 10 ...
	n := 0
	for i := range 20 {
		err := a.Edit(ctx, anna.Number, ref, channels.Outgoing{Key: "stream:t1:0", Text: "Hello" + strings.Repeat("!", i)})
		if err != nil {
			if !errors.Is(err, errStreamEdits) {
				t.Fatalf("edit %d: %v", i, err)
			}
			break
		}
		n++
	}
	if n != maxEdits-replaceReserve {
		t.Fatalf("%d streaming edits went through, want %d", n, maxEdits-replaceReserve)
	}
	// ... so the final reply can still replace the message.
	if err := a.Edit(ctx, anna.Number, ref, channels.Outgoing{Key: "final:t1:0", Text: "Hello, **world**"}); err != nil {
		t.Fatalf("final edit: %v", err)
	}
	m := s.WaitEdits(0, n+1)
	if text, styles := m.Current(); text != "Hello, world" || !slices.Equal(styles, []string{"7:5:BOLD"}) {
		t.Errorf("shown %q %q", text, styles)
	}
	// Each edit names the newest revision.
	for i, rev := range m.Edits {
		want := m.Timestamp
		if i > 0 {
			want = m.Edits[i-1].Timestamp
		}
		if rev.Target != want {
			t.Errorf("edit %d targets %d, want %d", i, rev.Target, want)
		}
	}
	if err := a.Edit(ctx, anna.Number, ref, channels.Outgoing{Key: "closed", Text: "x"}); err != nil {
		t.Fatalf("tenth edit: %v", err)
	}
	var pe *channels.PermanentError
	if err := a.Edit(ctx, anna.Number, ref, channels.Outgoing{Key: "more", Text: "y"}); !errors.As(err, &pe) {
		t.Fatalf("eleventh edit: %v, want permanent (the relay posts anew)", err)
	}

	// A message older than Signal's edit window is not edited.
	ref2, err := a.Send(ctx, anna.Number, channels.Outgoing{Key: "old", Text: "old"})
	if err != nil {
		t.Fatal(err)
	}
	clock = func() time.Time { return now.Add(25 * time.Hour) }
	if err := a.Edit(ctx, anna.Number, ref2, channels.Outgoing{Key: "old2", Text: "new"}); !errors.As(err, &pe) || !strings.Contains(err.Error(), "old") {
		t.Fatalf("old edit: %v", err)
	}
	for _, bad := range []string{"", "abc", "-5"} {
		if err := a.Edit(ctx, anna.Number, bad, channels.Outgoing{Key: "z", Text: "z"}); !errors.As(err, &pe) {
			t.Errorf("ref %q: %v", bad, err)
		}
	}
}

func TestEditAfterRestartTargetsOriginal(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	receive(t, a)
	s.WaitSubscribed(1)
	ref, err := a.Send(context.Background(), anna.Number, channels.Outgoing{Key: "k", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	// A second adapter (Hestia restarted) knows nothing of the message.
	b := newAdapter(t, s, nil)
	receive(t, b)
	s.WaitSubscribed(2)
	if err := b.Edit(context.Background(), anna.Number, ref, channels.Outgoing{Key: "k2", Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if m := s.WaitEdits(0, 1); strconv.FormatInt(m.Edits[0].Target, 10) != ref {
		t.Errorf("edit targets %d", m.Edits[0].Target)
	}
}

func TestSendErrors(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	receive(t, a)
	s.WaitSubscribed(1)
	ctx := context.Background()
	out := channels.Outgoing{Key: "k", Text: "hello"}
	type want int
	const (
		retry want = iota
		retryAfter
		permanent
	)
	cases := []struct {
		name  string
		kind  signaltest.Failure
		after int64
		want  want
		wait  time.Duration
		text  string
	}{
		{"rate limit", signaltest.RateLimit, 30, retryAfter, 30 * time.Second, "rate limiting"},
		{"rate limit no wait", signaltest.RateLimit, 0, retryAfter, defaultRateLimitWait, "rate"},
		{"rate limit legacy result", signaltest.RateLimitResult, 0, retryAfter, defaultRateLimitWait, "rate-limits"},
		{"captcha", signaltest.ProofRequired, 3600, retryAfter, time.Hour, "captcha"},
		{"unregistered", signaltest.Unregistered, 0, permanent, 0, "not registered"},
		{"untrusted", signaltest.UntrustedKey, 0, retry, 0, "signal-cli trust"},
		{"io", signaltest.IOError, 0, retry, 0, "Connection reset"},
		{"internal", signaltest.Internal, 0, retry, 0, "code -32603"},
	}
	for _, c := range cases {
		s.Fail("send", c.kind, c.after)
		_, err := a.Send(ctx, anna.Number, out)
		var ra *channels.RetryAfterError
		var pe *channels.PermanentError
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
			continue
		case c.want == retryAfter && (!errors.As(err, &ra) || ra.After != c.wait):
			t.Errorf("%s: %v (%T), want RetryAfterError %v", c.name, err, err, c.wait)
		case c.want == permanent && !errors.As(err, &pe):
			t.Errorf("%s: %v, want permanent", c.name, err)
		case c.want == retry && (errors.As(err, &pe) || errors.As(err, &ra)):
			t.Errorf("%s: %v, want a plain retry", c.name, err)
		}
		if !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %q does not say %q", c.name, err, c.text)
		}
	}
	// Real refusals, not injected: an unknown group, a user not on Signal.
	s.Unregister("+4915112345678")
	var pe *channels.PermanentError
	if _, err := a.Send(ctx, "+4915112345678", out); !errors.As(err, &pe) || !strings.Contains(err.Error(), "not registered") {
		t.Errorf("unregistered: %v", err)
	}
	if _, err := a.Send(ctx, "group:"+family, out); !errors.As(err, &pe) || !strings.Contains(err.Error(), "Group not found") {
		t.Errorf("unknown group: %v", err)
	}
	if len(s.Sent()) != 0 {
		t.Errorf("failed sends were recorded as sent: %+v", s.Sent())
	}
	// And it still works.
	if _, err := a.Send(ctx, anna.Number, out); err != nil {
		t.Fatal(err)
	}
}

func TestSendCutOffByRestart(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	r := receive(t, a)
	s.WaitSubscribed(1)
	s.Fail("send", signaltest.Drop, 0)
	_, err := a.Send(context.Background(), anna.Number, channels.Outgoing{Key: "k", Text: "hello"})
	var pe *channels.PermanentError
	if err == nil || errors.As(err, &pe) || !errors.Is(err, errConnLost) {
		t.Fatalf("cut-off send = %v, want a retryable 'may have been carried out'", err)
	}
	if len(s.Sent()) != 1 {
		t.Errorf("the daemon sent %d", len(s.Sent()))
	}
	select {
	case err := <-r.done:
		if err == nil {
			t.Error("Receive returned nil on a dropped connection")
		}
		r.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Receive did not notice")
	}
}

func TestSendWithoutConnection(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, func(c *Config) { c.ConnectWait = 50 * time.Millisecond })
	_, err := a.Send(context.Background(), anna.Number, channels.Outgoing{Key: "k", Text: "x"})
	var pe *channels.PermanentError
	if !errors.Is(err, errNotConnected) || errors.As(err, &pe) {
		t.Fatalf("send = %v", err)
	}
	// A send waits for a connection being made.
	b := newAdapter(t, s, nil)
	res := make(chan error, 1)
	go func() {
		_, err := b.Send(context.Background(), anna.Number, channels.Outgoing{Key: "k", Text: "x"})
		res <- err
	}()
	time.Sleep(20 * time.Millisecond)
	receive(t, b)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
}

func TestVoiceNotes(t *testing.T) {
	t.Parallel()
	audio := []byte("\x00\x01fake-aac-bytes")
	t.Run("getAttachment", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		r := receive(t, newAdapter(t, s, nil))
		s.WaitSubscribed(1)
		s.Voice(anna, "audio/aac", audio)
		u := r.next(t)
		if u.Voice == nil || u.Voice.Mime != "audio/aac" || u.Voice.Size != int64(len(audio)) || u.Voice.Fetch == nil {
			t.Fatalf("voice = %+v", u.Voice)
		}
		got, err := u.Voice.Fetch(context.Background())
		if err != nil || string(got) != string(audio) {
			t.Fatalf("fetched %q, %v", got, err)
		}
		req := s.Requests("getAttachment")[0].Params
		if req["recipient"] != anna.Number || req["account"] != signaltest.Account {
			t.Errorf("getAttachment params %v", req)
		}
	})
	t.Run("old daemon reads the folder", func(t *testing.T) {
		t.Parallel()
		s := signaltest.New(t)
		s.Old()
		s.AutoReceive(true)
		dir := t.TempDir()
		r := receive(t, newAdapter(t, s, func(c *Config) { c.AttachmentsDir = dir }))
		s.WaitSubscribed(1)
		s.Voice(anna, "audio/ogg", audio)
		u := r.next(t)
		if _, err := u.Voice.Fetch(context.Background()); err == nil {
			t.Fatal("fetched a file that is not there")
		}
		id := s.Requests("getAttachment")[0].Params["id"].(string)
		if err := os.WriteFile(filepath.Join(dir, id), audio, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := u.Voice.Fetch(context.Background())
		if err != nil || string(got) != string(audio) {
			t.Fatalf("fetched %q, %v", got, err)
		}
	})
	t.Run("ids are not paths", func(t *testing.T) {
		t.Parallel()
		a := &Adapter{cfg: Config{AttachmentsDir: t.TempDir()}}
		for _, id := range []string{"../../etc/passwd", "..", ".hidden", "a/b", "", strings.Repeat("a", 300)} {
			if _, err := a.fetchAttachment(context.Background(), "fetching", attachment{ID: id}, anna.Number, "", 1<<20); err == nil || !strings.Contains(err.Error(), "refusing") {
				t.Errorf("id %q: %v", id, err)
			}
		}
	})
}

func TestSendVoice(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	receive(t, a)
	s.WaitSubscribed(1)
	if err := a.SendVoice(context.Background(), anna.Number, []byte("OggS-voice"), "audio/ogg; codecs=opus"); err != nil {
		t.Fatal(err)
	}
	m := s.WaitSent(1)[0]
	want := "data:audio/ogg;filename=reply.ogg;base64," + base64.StdEncoding.EncodeToString([]byte("OggS-voice"))
	if len(m.Attachments) != 1 || m.Attachments[0] != want || m.Text != "" {
		t.Errorf("sent %+v", m)
	}
	if err := a.SendVoice(context.Background(), anna.Number, []byte("x"), `audio/ogg";filename=../x`); err != nil {
		t.Fatal(err)
	}
	if m := s.WaitSent(2)[1]; !strings.HasPrefix(m.Attachments[0], "data:application/octet-stream;") {
		t.Errorf("a strange type went through: %q", m.Attachments[0])
	}
}

func TestNewChecksWhere(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Account: "15550001111", Socket: "/x"},
		{Account: signaltest.Account},
		{Account: signaltest.Account, Socket: "/x", Address: "127.0.0.1:1"},
		{Account: signaltest.Account, Address: "192.168.1.4:7583"},
		{Account: signaltest.Account, Address: "nowhere"},
	} {
		if _, err := New(c, nil); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(Config{Account: signaltest.Account, Address: "[::1]:7583"}, nil); err != nil {
		t.Error(err)
	}
}

func TestAllowedPeer(t *testing.T) {
	t.Parallel()
	a := &Adapter{cfg: Config{PeerUIDs: []int{998}}}
	for uid, want := range map[int]bool{os.Getuid(): true, 0: true, 998: true, 12345: os.Getuid() == 12345} {
		if got := a.allowedPeer(uid); got != want {
			t.Errorf("allowedPeer(%d) = %v", uid, got)
		}
	}
}

func TestImpostorDaemonRefused(t *testing.T) {
	t.Parallel()
	// Another local user serving the socket path (signal-cli not running,
	// the path's folder writable) could feed forged messages: the
	// connection is refused before anything is read from it.
	s := signaltest.New(t)
	a := newAdapter(t, s, nil)
	a.peer = func(*net.UnixConn) (int, error) { return 4242, nil }
	err := a.Receive(context.Background(), func(context.Context, channels.Update) { t.Error("an update from an impostor") })
	if err == nil || !strings.Contains(err.Error(), "uid 4242") {
		t.Fatalf("Receive = %v", err)
	}
	a.cfg.PeerUIDs = []int{4242} // the configured daemon user
	r := receive(t, a)
	s.WaitSubscribed(1)
	s.Text(anna, "from the daemon user")
	if u := r.next(t); u.Text != "from the daemon user" {
		t.Fatalf("got %+v", u)
	}
	if n := s.Calls("subscribeReceive"); n != 1 {
		t.Errorf("%d subscriptions, want only the allowed connection's", n)
	}
}

func TestWrongAccount(t *testing.T) {
	t.Parallel()
	s := signaltest.New(t)
	a := newAdapter(t, s, func(c *Config) { c.Account = "+15550002222" })
	err := a.Receive(context.Background(), func(context.Context, channels.Update) {})
	if err == nil || !strings.Contains(err.Error(), "+15550002222") || !strings.Contains(err.Error(), "account does not exist") {
		t.Fatalf("Receive = %v", err)
	}
}

func TestReceiveOverTCP(t *testing.T) {
	t.Parallel()
	// The same protocol over a loopback port (daemon --tcp): the fake's
	// socket is reached through a dialer, as a TCP proxy would.
	s := signaltest.New(t)
	a := newAdapter(t, s, func(c *Config) {
		c.Socket = ""
		c.Dial = func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", s.Socket)
		}
	})
	r := receive(t, a)
	s.WaitSubscribed(1)
	s.Text(anna, "over tcp")
	if u := r.next(t); u.Text != "over tcp" {
		t.Fatalf("got %+v", u)
	}
}
