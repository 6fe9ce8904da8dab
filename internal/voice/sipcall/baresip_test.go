package sipcall

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// A whole call with baresip as the phone: it answers, the opening line is
// spoken, the user's "speech" (a tone burst played by the phone) is
// heard, transcribed and submitted as a turn, the streamed reply is
// spoken, and the phone hears non-silent audio of about the expected
// length; the phone hangs up and the call is answered with its duration
// in the audit trail and the chat.
func TestCallConversationWithBaresip(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	voice := append(siptest.Silence(3*time.Second, 8000), siptest.Speechlike(1200*time.Millisecond, 8000)...)
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Voice: voice})
	r := newRig(t, Config{To: phone.URI}, "what time is it")
	text := "It is noon. Anything else?"
	r.agent.replies = []reply{{text: text}}

	c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hello from Hestia.", RecordOpening: true, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	spokeReply := func() bool {
		return slices.ContainsFunc(r.speech.Spoken(), func(s string) bool { return strings.Contains(s, "Anything else?") })
	}
	if !siptest.WaitFor(ctx, 15*time.Second, spokeReply) {
		t.Fatalf("the reply was not spoken; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
	}
	if got := r.agent.submitted(); !slices.Equal(got, []string{"what time is it"}) {
		t.Fatalf("turns submitted: %q", got)
	}
	// Let the reply play out, then hang up from the phone.
	want := r.speech.SpeechDuration("Hello from Hestia.") + r.speech.SpeechDuration(text)
	heardAll(t, phone, want)
	if err := phone.Hangup(); err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, c, 10*time.Second)
	if res.Outcome != Answered || res.HungUpBy != "phone" || res.Duration < 4*time.Second || res.Turns != 1 {
		t.Fatalf("result %+v", res)
	}
	heard := phone.Heard()
	got := siptest.Voiced(heard, 8000)
	if got < want*8/10 || got > want*12/10+200*time.Millisecond {
		t.Fatalf("the phone heard %s of audio (of %s recorded), want about %s", got, time.Duration(len(heard))*time.Second/8000, want)
	}
	// The turn-around the caller hears: from the end of their speech (in
	// what the phone sent) to the first audio of the reply (in what it
	// heard), with the detector's hangover, the fake speech servers and
	// the line in it.
	if ends, onsets := siptest.Ends(phone.Said(), 8000, 300*time.Millisecond), siptest.Onsets(heard, 8000, 300*time.Millisecond); len(ends) > 0 && len(onsets) > 1 {
		t.Logf("end of speech at %s, reply audio at %s: %s to answer (VAD hangover %s included)",
			ends[0], onsets[1], onsets[1]-ends[0], 400*time.Millisecond)
	}
	notes := r.chats.all()
	if len(notes) != 2 || !strings.Contains(notes[0], "Hello from Hestia.") || !strings.Contains(notes[1], "answered") {
		t.Fatalf("chat notes %q", notes)
	}
	var rows int
	for _, a := range r.audits() {
		if a.typ == "voice.call" && strings.Contains(a.summary, "answered") {
			rows++
		}
	}
	if rows != 1 {
		t.Fatalf("audit %+v", r.audits())
	}
}

// Keypad approvals: the turn asks to approve a gated write, the card is
// read out with its keys, and the phone's 1 (an RFC 4733 event) approves
// it through the broker — the action runs once; on another call 2 denies.
func TestDTMFDecidesApprovals(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	for _, tc := range []struct {
		key  rune
		runs int
		says string
	}{{'1', 1, "Approved."}, {'2', 0, "Denied."}} {
		t.Run(string(tc.key), func(t *testing.T) {
			t.Parallel()
			voice := append(siptest.Silence(2*time.Second, 8000), siptest.Speechlike(time.Second, 8000)...)
			phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Voice: voice})
			r := newRig(t, Config{To: phone.URI}, "write the note")
			r.agent.replies = []reply{{gated: "Write 4 bytes to note.txt", text: "Done with the note."}}
			c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hi.", Origin: "test"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			prompted := func() bool {
				return slices.ContainsFunc(r.speech.Spoken(), func(s string) bool { return strings.Contains(s, "Press 1 to approve, 2 to deny") })
			}
			if !siptest.WaitFor(ctx, 15*time.Second, prompted) {
				t.Fatalf("no prompt; spoken %q", r.speech.Spoken())
			}
			if n := len(r.broker.Pending("")); n != 1 {
				t.Fatalf("%d approvals pending", n)
			}
			if err := phone.Press(tc.key); err != nil {
				t.Fatal(err)
			}
			if !siptest.WaitFor(ctx, 5*time.Second, func() bool { return len(r.broker.Pending("")) == 0 }) {
				t.Fatal("the key did not decide the approval")
			}
			if !siptest.WaitFor(ctx, 5*time.Second, func() bool { return slices.Contains(r.speech.Spoken(), tc.says) }) {
				t.Errorf("no %q; spoken %q", tc.says, r.speech.Spoken())
			}
			if got := r.agent.actions(); len(got) != tc.runs {
				t.Errorf("the gated action ran %d times, want %d", len(got), tc.runs)
			}
			c.Hangup()
			res := waitResult(t, c, 10*time.Second)
			if res.Outcome != Answered || res.HungUpBy != "hestia" {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// The same call over TCP: the INVITE and the BYE from the phone travel on
// a stream transport; the opening line reaches the phone.
func TestCallOverTCPWithBaresip(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Transport: "tcp"})
	r := newRig(t, Config{To: phone.URI, Transport: "tcp"})
	c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hello over TCP, this is Hestia.", Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if !siptest.WaitFor(ctx, 10*time.Second, func() bool { return c.State() == StateAnswered }) {
		t.Fatalf("not answered: %s", c.State())
	}
	heardAll(t, phone, r.speech.SpeechDuration("Hello over TCP, this is Hestia."))
	if err := phone.Hangup(); err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, c, 10*time.Second)
	if res.Outcome != Answered || res.HungUpBy != "phone" {
		t.Fatalf("result %+v", res)
	}
	if got, want := siptest.Voiced(phone.Heard(), 8000), r.speech.SpeechDuration("Hello over TCP, this is Hestia."); got < want*8/10 {
		t.Errorf("the phone heard %s, want about %s", got, want)
	}
}

// A question card is read out and answered by speaking: the next
// utterance is the answer, not a new turn.
func TestSpokenAnswerToAQuestion(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	voice := append(siptest.Silence(2*time.Second, 8000), siptest.Speechlike(time.Second, 8000)...)
	voice = append(voice, siptest.Silence(6*time.Second, 8000)...)
	voice = append(voice, siptest.Speechlike(800*time.Millisecond, 8000)...)
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Voice: voice})
	r := newRig(t, Config{To: phone.URI}, "paint the shed", "green")
	r.agent.replies = []reply{{question: "Which colour?", text: "Noted."}}
	c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hi.", Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(context.Background(), 20*time.Second, func() bool {
		return strings.Contains(strings.Join(r.speech.Spoken(), " "), "You said: green.")
	}) {
		t.Fatalf("spoken %q, submitted %q", r.speech.Spoken(), r.agent.submitted())
	}
	if !strings.Contains(strings.Join(r.speech.Spoken(), " "), "A question for you: Which colour?") {
		t.Errorf("the question was not read out: %q", r.speech.Spoken())
	}
	if got := r.agent.submitted(); !slices.Equal(got, []string{"paint the shed"}) {
		t.Errorf("the answer became a turn: %q", got)
	}
	c.Hangup()
	if res := waitResult(t, c, 10*time.Second); res.Turns != 1 {
		t.Errorf("result %+v", res)
	}
}

// heardAll waits (a bounded time) until the phone has heard about want of
// audio, so a loaded machine's late playout is not cut by the hang-up.
func heardAll(t *testing.T, phone *siptest.Phone, want time.Duration) {
	t.Helper()
	siptest.WaitFor(context.Background(), 10*time.Second, func() bool { return siptest.Voiced(phone.Heard(), 8000) >= want*9/10 })
	time.Sleep(300 * time.Millisecond)
}

// Barge-in on an outbound call with baresip as the phone: the user asks
// for a story and speaks over it; what the phone recorded shows the
// story stopping within stopBound of the user's words, which — their
// first syllable included — are transcribed and answered, the story's
// turn interrupted.
func TestBargeInWithBaresip(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	const rate = 8000
	// The request ends at 2.8 s, the story's audio starts at about 4.3 s
	// (a sentence is spoken once the next one begins) and would go on for
	// 16 s; its turn streams a sentence a second until about 10 s.
	bargeAt := 6 * time.Second
	voice := append(siptest.Silence(2*time.Second, rate), siptest.Speechlike(800*time.Millisecond, rate)...)
	voice = append(voice, siptest.Silence(bargeAt-time.Duration(len(voice))*time.Second/rate, rate)...)
	voice = append(voice, marker()...)
	voice = append(voice, siptest.Speechlike(1100*time.Millisecond, rate)...)
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: true, Voice: voice})
	r := newRig(t, Config{To: phone.URI}, "tell me a story", "stop, what time is it")
	r.agent.replies = []reply{{pieces: append(slices.Clone(story), story...), every: time.Second}, {text: "It is noon."}}
	c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hi.", Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if !siptest.WaitFor(ctx, 25*time.Second, r.spoke("It is noon.")) {
		t.Fatalf("the words spoken over the story were not answered; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
	}
	heardAll(t, phone, r.speech.SpeechDuration("It is noon."))
	heard, said := phone.Heard(), phone.Said()
	onsets := siptest.Onsets(said, rate, 300*time.Millisecond)
	if len(onsets) < 2 {
		t.Fatalf("the phone's own recording has %d onsets of speech, want 2", len(onsets))
	}
	began := onsets[1]
	at := int(began.Seconds()*rate) / (rate / 50) * (rate / 50)
	if at > len(heard) || siptest.Voiced(heard[max(0, at-rate/5):at], rate) == 0 {
		t.Fatalf("the story was not playing when the user spoke over it at %s", began)
	}
	for _, end := range siptest.Ends(heard, rate, 300*time.Millisecond) {
		if end > began {
			if end-began > stopBound {
				t.Errorf("the story went on for %s after the user began, want at most %s", end-began, stopBound)
			}
			t.Logf("the story stopped %s after the user began", end-began)
			break
		}
	}
	if got := r.agent.interruptions(); !slices.Equal(got, []string{"t1"}) {
		t.Errorf("turns interrupted: %q, want the story's", got)
	}
	if recs := r.speech.Recordings(); len(recs) != 2 || !hasMarker(t, recs[1]) {
		t.Errorf("%d recordings; the second must hold the start of the words (the marker)", len(recs))
	}
	if r.spoke("end of the story")() {
		t.Errorf("the rest of the story was spoken: %q", r.speech.Spoken())
	}
	c.Hangup()
	if res := waitResult(t, c, 10*time.Second); res.Outcome != Answered || res.Turns != 2 {
		t.Errorf("result %+v", res)
	}
}
