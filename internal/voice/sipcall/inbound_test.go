package sipcall

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

const (
	testPIN = "2468"
	owner   = "+393471234567"
)

// inboundConfig turns inbound calls on for the owner's number with
// testPIN; To is never dialled.
func inboundConfig(cfg Config) Config {
	cfg.Inbound, cfg.PIN = true, testPIN
	if cfg.InboundNumbers == nil {
		cfg.InboundNumbers = []string{"+39 347 123 4567"}
	}
	if cfg.To == "" {
		cfg.To = "sip:phone@127.0.0.1:9"
	}
	return cfg
}

// hestiaURI is where the rig's user agent takes calls.
func hestiaURI(r *rig) string {
	return fmt.Sprintf("sip:hestia@127.0.0.1:%d", addrPort(r.m.listen))
}

// callHestia places a call from caller to the rig and returns it once
// answered or refused.
func callHestia(t *testing.T, r *rig, caller *siptest.Peer, o siptest.CallOptions) *siptest.OutCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := caller.Call(ctx, hestiaURI(r), o)
	if err != nil {
		t.Fatalf("calling Hestia: %v", err)
	}
	return out
}

// lastCall is the call the rig took last.
func lastCall(t *testing.T, r *rig) *Call {
	t.Helper()
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	if len(r.m.order) == 0 {
		t.Fatal("no call was taken")
	}
	return r.m.calls[r.m.order[len(r.m.order)-1]]
}

func (r *rig) spoke(text string) func() bool {
	return func() bool {
		return slices.ContainsFunc(r.speech.Spoken(), func(s string) bool { return strings.Contains(s, text) })
	}
}

// auditsOf lists the rows of type typ.
func (r *rig) auditsOf(typ string) []auditRow {
	var out []auditRow
	for _, a := range r.audits() {
		if a.typ == typ {
			out = append(out, a)
		}
	}
	return out
}

// noPIN fails when the PIN shows anywhere in the audit trail or chat.
func noPIN(t *testing.T, r *rig) {
	t.Helper()
	for _, a := range r.audits() {
		if strings.Contains(a.summary+fmt.Sprint(a.data), testPIN) {
			t.Errorf("the PIN is in the audit trail: %+v", a)
		}
	}
	for _, n := range r.chats.all() {
		if strings.Contains(n, testPIN) {
			t.Errorf("the PIN is in the chat: %q", n)
		}
	}
}

// The owner calls from a listed number: the PIN prompt is spoken, the
// caller's voice before the PIN reaches nobody, a mistyped PIN is started
// over with *, and after the right PIN the call is the same conversation
// as an outbound one — in a fresh chat, the turn labelled "SIP call
// (inbound)", the scripted reply's audio arriving at the phone — and its
// outcome is audited and written into the chat with its direction.
func TestInboundCallWithPIN(t *testing.T) {
	t.Parallel()
	r := newRig(t, inboundConfig(Config{Greeting: "Yes?"}), "what is on today")
	replyText := "Nothing is planned today. Anything else?"
	r.agent.replies = []reply{{text: replyText}}
	caller := siptest.StartPeer(t, siptest.PeerOptions{})
	out := callHestia(t, r, caller, siptest.CallOptions{From: "0039347-1234567"})
	if out.Status != 200 {
		t.Fatalf("the owner's call was answered %d %s", out.Status, out.Reason)
	}
	c := lastCall(t, r)
	ctx := context.Background()
	prompt := r.speech.SpeechDuration(pinPrompt)
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return out.Heard() >= prompt*8/10 }) {
		t.Fatalf("the prompt was not heard (%s of %s); spoken %q", out.Heard(), prompt, r.speech.Spoken())
	}
	// Speech before the PIN is not even transcribed.
	out.Say(siptest.Speechlike(time.Second, 8000))
	time.Sleep(2 * time.Second)
	if n := len(r.speech.Heard()); n != 0 || c.ChatID != "" || c.Snapshot().ChatID != "" {
		t.Fatalf("before the PIN: %d recordings transcribed, chat %q", n, c.Snapshot().ChatID)
	}
	if err := out.Press("13*" + testPIN + "#"); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, r.spoke("Yes?")) {
		t.Fatalf("no greeting after the PIN; spoken %q", r.speech.Spoken())
	}
	greeted := prompt + r.speech.SpeechDuration("Yes?")
	siptest.WaitFor(ctx, 10*time.Second, func() bool { return out.Heard() >= greeted*8/10 })
	time.Sleep(500 * time.Millisecond) // past the line's deaf tail
	out.Say(siptest.Speechlike(1200*time.Millisecond, 8000))
	if !siptest.WaitFor(ctx, 20*time.Second, r.spoke("Anything else?")) {
		t.Fatalf("the reply was not spoken; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
	}
	if got := r.agent.submitted(); !slices.Equal(got, []string{"what is on today"}) {
		t.Errorf("turns submitted: %q", got)
	}
	if got := r.agent.origins(); !slices.Equal(got, []string{InboundLabel}) {
		t.Errorf("turn origins %q, want %q", got, InboundLabel)
	}
	want := greeted + r.speech.SpeechDuration(replyText)
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return out.Heard() >= want*8/10 }) {
		t.Errorf("the phone heard %s of audio, want about %s (the reply's audio did not arrive)", out.Heard(), want)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := out.Hangup(hctx); err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, c, 10*time.Second)
	if res.Outcome != Answered || res.Direction != Inbound || res.From != "0039347-1234567" || res.HungUpBy != "phone" || res.Turns != 1 || res.ChatID != "chat-1" {
		t.Fatalf("result %+v", res)
	}
	notes := r.chats.all()
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "chat-1: 📞 Call from 0039347-1234567: answered") {
		t.Errorf("chat notes %q", notes)
	}
	rows := r.auditsOf("voice.call")
	if len(rows) != 1 || rows[0].chat != "chat-1" || rows[0].data.(map[string]any)["direction"] != Inbound || rows[0].data.(map[string]any)["outcome"] != Answered {
		t.Errorf("audit %+v", r.audits())
	}
	noPIN(t, r)
}

// A call that never gets the PIN right is hung up by Hestia, audited as
// pin_failed without a chat, and nothing reaches the assistant: three
// wrong PINs, no PIN within the timeout, a phone without keypad events.
func TestInboundPINFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		keys    string
		noKeys  bool
		timeout time.Duration
		says    string
		reason  string
	}{
		// The third is the PIN with more keys than are kept before the
		// hash: wrong, not the PIN.
		{name: "three wrong PINs", keys: "1111#2469#" + strings.Repeat("0", maxPINKeys) + testPIN + "#", says: pinGoodbye, reason: "3 wrong PINs"},
		{name: "no PIN in time", keys: "24", timeout: 2 * time.Second, says: pinTimeout, reason: "no right PIN within 2s"},
		{name: "no keypad", noKeys: true, says: pinNoKeys, reason: "no telephone-events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, inboundConfig(Config{PINTimeout: tc.timeout}))
			caller := siptest.StartPeer(t, siptest.PeerOptions{})
			out := callHestia(t, r, caller, siptest.CallOptions{From: owner, NoKeys: tc.noKeys})
			if out.Status != 200 {
				t.Fatalf("answered %d", out.Status)
			}
			c := lastCall(t, r)
			if tc.keys != "" {
				if err := out.Press(tc.keys); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-out.Ended():
			case <-time.After(30 * time.Second):
				t.Fatalf("Hestia did not hang up; spoken %q", r.speech.Spoken())
			}
			res := waitResult(t, c, 10*time.Second)
			if res.Outcome != PINFailed || res.HungUpBy != "hestia" || !strings.Contains(res.Reason, tc.reason) || res.ChatID != "" {
				t.Fatalf("result %+v", res)
			}
			if !slices.Contains(r.speech.Spoken(), tc.says) {
				t.Errorf("no %q; spoken %q", tc.says, r.speech.Spoken())
			}
			rows := r.auditsOf("voice.call")
			if len(rows) != 1 || rows[0].chat != "" || rows[0].data.(map[string]any)["outcome"] != PINFailed || !strings.Contains(rows[0].summary, "without the right PIN") {
				t.Errorf("audit %+v", r.audits())
			}
			if r.chats.n != 0 || len(r.agent.submitted()) != 0 || len(r.speech.Heard()) != 0 {
				t.Errorf("a failed call reached the assistant: %d chats, turns %q, %d transcriptions", r.chats.n, r.agent.submitted(), len(r.speech.Heard()))
			}
			noPIN(t, r)
		})
	}
}

// Who may call: the number is compared after normalising + and 00 and
// separators; a P-Asserted-Identity, when sent, is what is compared;
// others, and every caller while inbound calls are off, get 603 without
// Hestia answering, audited (except when off, as before).
func TestInboundWhoMayCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		off     bool
		from    string
		pai     string
		status  int
		audited bool
	}{
		{name: "listed", from: owner, status: 200},
		{name: "00 prefix", from: "00393471234567", status: 200},
		{name: "escaped plus", from: "%2B393471234567", status: 200},
		{name: "asserted listed", from: "anonymous", pai: "<sip:+393471234567@provider.example;user=phone>", status: 200},
		{name: "asserted tel", from: "anonymous", pai: `"Owner" <tel:+39-347-1234567>`, status: 200},
		{name: "not listed", from: "+393470000000", status: 603, audited: true},
		{name: "national form", from: "3471234567", status: 603, audited: true},
		{name: "anonymous", from: "anonymous", status: 603, audited: true},
		{name: "asserted other", from: owner, pai: "<sip:+15551234567@provider.example>", status: 603, audited: true},
		{name: "inbound off", off: true, from: owner, status: 603},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := inboundConfig(Config{})
			if tc.off {
				cfg = Config{To: "sip:phone@127.0.0.1:9"}
			}
			r := newRig(t, cfg)
			caller := siptest.StartPeer(t, siptest.PeerOptions{})
			out := callHestia(t, r, caller, siptest.CallOptions{From: tc.from, AssertedIdentity: tc.pai})
			if out.Status != tc.status {
				t.Fatalf("answered %d %s, want %d", out.Status, out.Reason, tc.status)
			}
			if tc.status == 200 {
				c := lastCall(t, r)
				hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = out.Hangup(hctx)
				if res := waitResult(t, c, 10*time.Second); res.Outcome != PINFailed || res.HungUpBy != "phone" {
					t.Errorf("result %+v", res)
				}
				return
			}
			// The refusal is audited after the answer goes out.
			if tc.audited {
				siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return len(r.auditsOf("voice.call")) > 0 })
			}
			rows := r.auditsOf("voice.call")
			switch {
			case !tc.audited && len(rows) != 0:
				t.Errorf("audited %+v", rows)
			case tc.audited && (len(rows) != 1 || rows[0].data.(map[string]any)["status"] != 603 || !strings.Contains(rows[0].summary, "not one of the numbers allowed")):
				t.Errorf("audit %+v", r.audits())
			}
			if r.m.Status().Current != nil || len(r.speech.Spoken()) != 0 {
				t.Errorf("a refused call was taken: %+v, spoken %q", r.m.Status().Current, r.speech.Spoken())
			}
		})
	}
}

// One call at a time: a second call while the first waits for its PIN is
// 486 Busy Here (audited), an outbound call is refused too, and once the
// first has ended the line takes calls again.
func TestInboundBusy(t *testing.T) {
	t.Parallel()
	r := newRig(t, inboundConfig(Config{}))
	caller := siptest.StartPeer(t, siptest.PeerOptions{})
	first := callHestia(t, r, caller, siptest.CallOptions{From: owner})
	if first.Status != 200 {
		t.Fatalf("first call %d", first.Status)
	}
	c := lastCall(t, r)
	second := callHestia(t, r, siptest.StartPeer(t, siptest.PeerOptions{}), siptest.CallOptions{From: owner})
	if second.Status != 486 {
		t.Errorf("second call %d %s, want 486", second.Status, second.Reason)
	}
	if _, err := r.m.Call(context.Background(), CallRequest{Origin: "test"}); !errors.Is(err, ErrCallInProgress) {
		t.Errorf("an outbound call during an inbound one: %v", err)
	}
	siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return len(r.auditsOf("voice.call")) > 0 }) // audited after the answer
	if rows := r.auditsOf("voice.call"); len(rows) != 1 || rows[0].data.(map[string]any)["outcome"] != Busy {
		t.Errorf("audit %+v", r.audits())
	}
	if err := first.Press(testPIN + "#"); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(context.Background(), 15*time.Second, func() bool { return c.Snapshot().ChatID != "" }) {
		t.Fatal("the PIN was not taken")
	}
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = first.Hangup(hctx)
	if res := waitResult(t, c, 10*time.Second); res.Outcome != Answered {
		t.Fatalf("result %+v", res)
	}
	third := callHestia(t, r, caller, siptest.CallOptions{From: owner})
	if third.Status != 200 {
		t.Fatalf("a call after the first ended: %d", third.Status)
	}
	_ = third.Hangup(hctx)
}

// Registered to a registrar, Hestia takes INVITEs only from the
// registrar's address: a stranger on the network sending straight to
// Hestia's port with the owner's number is refused with 403 and audited;
// the same call through the registrar is answered.
func TestInboundOnlyFromRegistrar(t *testing.T) {
	t.Parallel()
	registrar := siptest.StartPeer(t, siptest.PeerOptions{Users: map[string]string{"alice": "right"}})
	r := newRig(t, inboundConfig(Config{Registrar: registrar.URI, Username: "alice", Password: "right", To: "100"}))
	if !siptest.WaitFor(context.Background(), 10*time.Second, func() bool { return r.m.Registration().Registered }) {
		t.Fatalf("not registered: %+v", r.m.Registration())
	}
	stranger := siptest.StartPeer(t, siptest.PeerOptions{Host: "127.0.0.2"})
	out := callHestia(t, r, stranger, siptest.CallOptions{From: owner, AssertedIdentity: "<sip:" + owner + "@127.0.0.1>"})
	if out.Status != 403 {
		t.Fatalf("a stranger's call was answered %d %s, want 403", out.Status, out.Reason)
	}
	siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return len(r.auditsOf("voice.call")) > 0 }) // audited after the answer
	rows := r.auditsOf("voice.call")
	if len(rows) != 1 || rows[0].data.(map[string]any)["status"] != 403 || !strings.Contains(fmt.Sprint(rows[0].data), "127.0.0.2") {
		t.Errorf("audit %+v", r.audits())
	}
	// Knocking again within the throttle adds no row.
	if again := callHestia(t, r, stranger, siptest.CallOptions{From: owner}); again.Status != 403 {
		t.Errorf("again: %d", again.Status)
	}
	if rows := r.auditsOf("voice.call"); len(rows) != 1 {
		t.Errorf("%d audit rows for a repeated refusal", len(rows))
	}
	via := callHestia(t, r, registrar, siptest.CallOptions{From: owner})
	if via.Status != 200 {
		t.Fatalf("the call through the registrar: %d %s", via.Status, via.Reason)
	}
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = via.Hangup(hctx)
	waitResult(t, lastCall(t, r), 10*time.Second)
}

// Three failed PIN calls within 10 minutes decline every inbound call for
// the next 10 minutes (audited once); failures older than the window do
// not count; after the lock-out calls are answered again. The clock is
// the Manager's.
func TestInboundLockout(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	r := newRigClock(t, inboundConfig(Config{}), clock)
	caller := siptest.StartPeer(t, siptest.PeerOptions{})
	fail := func() {
		t.Helper()
		out := callHestia(t, r, caller, siptest.CallOptions{From: owner})
		if out.Status != 200 {
			t.Fatalf("call answered %d %s, want 200", out.Status, out.Reason)
		}
		c := lastCall(t, r)
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = out.Hangup(hctx)
		if res := waitResult(t, c, 10*time.Second); res.Outcome != PINFailed {
			t.Fatalf("result %+v", res)
		}
	}
	fail()
	fail()
	offset.Store(int64(lockoutWindow + time.Minute)) // those two age out
	fail()
	fail()
	if st := r.m.Inbound(); !st.LockedUntil.IsZero() {
		t.Fatalf("locked after two failures in the window: %+v", st)
	}
	fail() // the third within the window
	st := r.m.Inbound()
	if st.LockedUntil.IsZero() || !st.Enabled || !slices.Equal(st.Numbers, []string{"+39 347 123 4567"}) {
		t.Fatalf("state %+v", st)
	}
	for range 2 {
		if out := callHestia(t, r, caller, siptest.CallOptions{From: owner}); out.Status != 603 {
			t.Fatalf("a call during the lock-out: %d", out.Status)
		}
	}
	if rows := r.auditsOf("voice.sip.inbound_locked"); len(rows) != 1 {
		t.Errorf("lock-out audit %+v", r.audits())
	}
	if rows := r.auditsOf("alert"); len(rows) != 1 || !strings.Contains(rows[0].summary, "declined for 10m0s") {
		t.Errorf("the owner was not alerted: %+v", rows)
	}
	var declined int
	for _, a := range r.auditsOf("voice.call") {
		if strings.Contains(a.summary, "declined until") {
			declined++
		}
	}
	if declined != 1 {
		t.Errorf("%d audit rows for declines during the lock-out, want 1", declined)
	}
	offset.Add(int64(lockoutFor + time.Second))
	if st := r.m.Inbound(); !st.LockedUntil.IsZero() {
		t.Errorf("still locked: %+v", st)
	}
	// The next lock-out in a row lasts twice as long.
	fail()
	fail()
	fail()
	if st := r.m.Inbound(); st.LockedUntil.Sub(clock()) < 2*lockoutFor-time.Minute {
		t.Fatalf("second lock-out until %v, want about %v from now", st.LockedUntil, 2*lockoutFor)
	}
	if rows := r.auditsOf("alert"); len(rows) != 2 || !strings.Contains(rows[1].summary, "declined for 20m0s") {
		t.Errorf("second alert: %+v", rows)
	}
	offset.Add(int64(2*lockoutFor + time.Second))
	out := callHestia(t, r, caller, siptest.CallOptions{From: owner})
	if out.Status != 200 {
		t.Fatalf("after the lock-out: %d", out.Status)
	}
	if err := out.Press(testPIN + "#"); err != nil {
		t.Fatal(err)
	}
	c := lastCall(t, r)
	if !siptest.WaitFor(context.Background(), 15*time.Second, func() bool { return c.Snapshot().ChatID != "" }) {
		t.Fatal("the PIN was not taken after the lock-out")
	}
	hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = out.Hangup(hctx)
	waitResult(t, c, 10*time.Second)
	// The owner got in: the next lock-out is a short one again.
	r.m.mu.Lock()
	n := r.m.guard.lockouts
	r.m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d lock-outs counted after the right PIN", n)
	}
}

// The owner's real phone (baresip) calls Hestia, enters the PIN with its
// keypad, hears the greeting, and hangs up: an answered inbound call.
func TestInboundCallFromBaresip(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	phone := siptest.StartPhone(t, siptest.PhoneOptions{User: owner})
	r := newRig(t, inboundConfig(Config{Greeting: "Hello, this is Hestia. How can I help?"}))
	if err := phone.Dial(hestiaURI(r)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var c *Call
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool {
		if s := r.m.Status().Current; s != nil && s.State == StateAnswered {
			c, _ = r.m.Get(s.ID)
		}
		return c != nil
	}) {
		t.Fatalf("the call was not answered; audit %+v\n%s", r.audits(), phone.Output())
	}
	prompt := r.speech.SpeechDuration(pinPrompt)
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return siptest.Voiced(phone.Heard(), 8000) >= prompt*8/10 }) {
		t.Fatalf("the phone did not hear the prompt; spoken %q", r.speech.Spoken())
	}
	for _, k := range testPIN + "#" {
		if err := phone.Press(k); err != nil {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, r.spoke("How can I help?")) {
		t.Fatalf("no greeting after the PIN; spoken %q", r.speech.Spoken())
	}
	want := prompt + r.speech.SpeechDuration("Hello, this is Hestia. How can I help?")
	heardAll(t, phone, want)
	if err := phone.Hangup(); err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, c, 10*time.Second)
	if res.Outcome != Answered || res.Direction != Inbound || res.From != owner || res.HungUpBy != "phone" || res.ChatID == "" {
		t.Fatalf("result %+v", res)
	}
	if got := siptest.Voiced(phone.Heard(), 8000); got < want*8/10 {
		t.Errorf("the phone heard %s, want about the prompt and the greeting, %s", got, want)
	}
}

// Caller identities and numbers as compared.
func TestCallerIdentity(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"+39 347 123 4567":                 "393471234567",
		"0039347-1234567":                  "393471234567",
		"%2B393471234567":                  "393471234567",
		"+393471234567;phone-context=x.it": "393471234567",
		"100":                              "100",
		"(030) 12.34":                      "0301234",
		"Anonymous":                        "anonymous",
		"":                                 "",
		"+":                                "",
	} {
		if got := normNumber(in); got != want {
			t.Errorf("normNumber(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		`"Owner" <sip:+393471234567@p.example;user=phone>`:   "+393471234567",
		"<tel:+39-347-1234567;verstat=TN-Validation-Passed>": "+39-347-1234567",
		"sip:100;phone-context=pbx@pbx.lan":                  "100",
		"<sips:alice:secret@p.example>":                      "alice",
		"<mailto:x@y>":                                       "",
		"sip:p.example":                                      "",
		"garbage":                                            "",
	} {
		if got := uriUser(in); got != want {
			t.Errorf("uriUser(%q) = %q, want %q", in, got, want)
		}
	}
	var p inboundPolicy
	if err := p.init(&Config{Inbound: true, PIN: "123"}, siptestTarget()); err == nil {
		t.Error("a 3-digit PIN was accepted")
	}
	if err := p.init(&Config{Inbound: true, PIN: "12a45"}, siptestTarget()); err == nil {
		t.Error("a PIN with a letter was accepted")
	}
	if err := p.init(&Config{Inbound: true, PIN: "0042", InboundNumbers: []string{" + "}}, siptestTarget()); err == nil {
		t.Error("an empty number was accepted")
	}
	if err := p.init(&Config{Inbound: true, PIN: "0042"}, siptestTarget()); err != nil || !p.allows([]string{"+39 347 1234567"}) || p.allows([]string{"3471234567"}) {
		t.Errorf("the number called back: %v %+v", err, p.numbers)
	}
	if !p.pinMatches([]byte("0042")) || p.pinMatches([]byte("042")) || p.pinMatches([]byte("00420")) || p.pinMatches(nil) {
		t.Error("pinMatches")
	}
}

func siptestTarget() sip.Uri {
	return sip.Uri{Scheme: "sip", User: "+393471234567", Host: "pbx.lan"}
}

func TestLockoutLength(t *testing.T) {
	t.Parallel()
	for n, want := range []time.Duration{10 * time.Minute, 20 * time.Minute, 40 * time.Minute, 80 * time.Minute, 160 * time.Minute, 320 * time.Minute, 640 * time.Minute, 1280 * time.Minute, 24 * time.Hour, 24 * time.Hour} {
		if got := lockoutLength(n); got != want {
			t.Errorf("lock-out %d: %v, want %v", n, got, want)
		}
	}
	if got := lockoutLength(1000); got != lockoutMax {
		t.Errorf("lock-out 1000: %v", got)
	}
}
