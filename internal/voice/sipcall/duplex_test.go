package sipcall

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// story is a long reply, streamed a sentence every storyEvery while it
// is spoken (about 1.3 s of speech each with duplexRig's fake): the turn
// is still running when the caller speaks over it.
var story = []string{
	"Once upon a time there was a lighthouse by the sea. ",
	"Its keeper counted the ships that passed every night. ",
	"One winter a storm blew out the great lamp at the top. ",
	"And that is the end of the story of the lighthouse.",
}

const storyEvery = 1500 * time.Millisecond

// duplexRig is newRig for an inbound call with a short greeting and
// speech at 25 ms a character, to keep the tests short.
func duplexRig(t *testing.T, cfg Config, transcripts ...string) *rig {
	t.Helper()
	cfg.Greeting = "Yes?"
	r := newRig(t, inboundConfig(cfg), transcripts...)
	r.speech.SetPerChar(25 * time.Millisecond)
	return r
}

// storyLen is how long the fake speaks the whole story.
func storyLen(r *rig) time.Duration {
	var d time.Duration
	for _, s := range story {
		d += r.speech.SpeechDuration(voice.Speakable(s))
	}
	return d
}

// marker starts the caller's words: 100 ms of a 1 kHz tone, which the
// transcriber's audio must hold if the words were taken from their start.
func marker() []int16 { return siptest.Tone(1000, 8000, 100*time.Millisecond, lineRate) }

// ownerOnLine calls the rig from the owner's phone (a Peer), enters the
// PIN and waits until the greeting has been heard: the conversation is
// under way, the line quiet.
func ownerOnLine(t *testing.T, r *rig, o siptest.CallOptions) (*siptest.OutCall, *Call) {
	t.Helper()
	o.From = owner
	out := callHestia(t, r, siptest.StartPeer(t, siptest.PeerOptions{}), o)
	if out.Status != 200 {
		t.Fatalf("the owner's call was answered %d %s", out.Status, out.Reason)
	}
	t.Cleanup(func() {
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = out.Hangup(hctx)
	})
	c := lastCall(t, r)
	ctx := context.Background()
	prompt := r.speech.SpeechDuration(pinPrompt)
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return out.Heard() >= prompt*8/10 }) {
		t.Fatalf("the PIN prompt was not heard; spoken %q", r.speech.Spoken())
	}
	if err := out.Press(testPIN + "#"); err != nil {
		t.Fatal(err)
	}
	greeted := prompt + r.speech.SpeechDuration(r.m.cfg.Greeting)
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return r.spoke(r.m.cfg.Greeting)() && out.Heard() >= greeted*8/10 }) {
		t.Fatalf("the greeting was not heard; spoken %q", r.speech.Spoken())
	}
	time.Sleep(500 * time.Millisecond) // past the greeting's echo
	return out, c
}

// askForStory has the caller ask for the story and returns once it has
// been heard for a while (and is still being told).
func askForStory(t *testing.T, r *rig, out *siptest.OutCall) {
	t.Helper()
	before := out.Heard()
	out.Say(siptest.Speechlike(800*time.Millisecond, lineRate))
	if !siptest.WaitFor(context.Background(), 20*time.Second, func() bool { return out.Heard() >= before+time.Second }) {
		t.Fatalf("the story was not heard; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
	}
	if got := r.agent.submitted(); len(got) != 1 {
		t.Fatalf("turns submitted: %q", got)
	}
}

// playingAt fails unless the phone was hearing audio just before at.
func playingAt(t *testing.T, out *siptest.OutCall, at time.Time) {
	t.Helper()
	loud := out.LoudAt()
	if len(loud) == 0 || at.Sub(loud[len(loud)-1]) > 200*time.Millisecond {
		t.Fatal("the assistant was not speaking when the caller began")
	}
}

// quietAfter is when the stretch of audio the phone was hearing at from
// ended: the arrival of its last loud packet before a silence of gap.
func quietAfter(loud []time.Time, from time.Time, gap time.Duration) time.Time {
	last := from
	for _, at := range loud {
		if at.Before(from) {
			continue
		}
		if at.Sub(last) >= gap {
			break
		}
		last = at
	}
	return last
}

// stopBound is how soon the assistant must fall silent once the caller
// speaks over it or presses #: about 0.4 s of onset plus a packet, with
// room for a CI machine's two loaded cores.
const stopBound = 1500 * time.Millisecond

// hasMarker reports whether a recording sent to the transcriber holds
// the marker: 40 ms as loud as it and crossing zero as often as 1 kHz
// does (the caller's other sounds and the assistant's 440 Hz cross far
// less often).
func hasMarker(t *testing.T, wav []byte) bool {
	t.Helper()
	pcm, info, err := parseWAV(wav)
	if err != nil || info.Rate != speechRate {
		t.Fatalf("the transcriber got %v at %d Hz", err, info.Rate)
	}
	const win = speechRate / 25 // 40 ms
	for i := 0; i+win <= len(pcm); i += win / 4 {
		w := pcm[i : i+win]
		crossings := 0
		for j := 1; j < len(w); j++ {
			if (w[j-1] < 0) != (w[j] < 0) {
				crossings++
			}
		}
		if crossings >= 60 && frameLevel(w) > -20 {
			return true
		}
	}
	return false
}

// The caller speaks over a long reply: the assistant falls silent within
// stopBound, the turn telling it is interrupted and the rest of it never
// spoken, and the caller's words — from their first syllable, the marker
// — are transcribed and answered as the next turn. On a line that echoes
// the assistant back 16 dB down, the same.
func TestBargeIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		echo float64
	}{{"clean line", 0}, {"echoing line", 0.16}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := duplexRig(t, Config{}, "tell me a story", "stop, what time is it")
			r.agent.replies = []reply{{pieces: story, every: storyEvery}, {text: "It is noon."}}
			out, c := ownerOnLine(t, r, siptest.CallOptions{Echo: tc.echo})
			askForStory(t, r, out)
			said := append(marker(), siptest.Speechlike(1100*time.Millisecond, lineRate)...)
			began := time.Now()
			out.Say(said)
			playingAt(t, out, began)
			ctx := context.Background()
			if !siptest.WaitFor(ctx, 20*time.Second, r.spoke("It is noon.")) {
				t.Fatalf("the caller's words were not answered; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
			}
			stopped := quietAfter(out.LoudAt(), began, 300*time.Millisecond).Sub(began)
			if stopped > stopBound {
				t.Errorf("the assistant went on for %s after the caller began, want at most %s", stopped, stopBound)
			}
			t.Logf("the assistant fell silent %s after the caller began", stopped.Round(time.Millisecond))
			if got := r.agent.submitted(); !slices.Equal(got, []string{"tell me a story", "stop, what time is it"}) {
				t.Errorf("turns submitted: %q", got)
			}
			if got := r.agent.interruptions(); !slices.Equal(got, []string{"t1"}) {
				t.Errorf("turns interrupted: %q, want the story's", got)
			}
			if got := r.agent.noInterrupt(); slices.Contains(got, true) {
				t.Errorf("a turn was queued behind the story: %v", got)
			}
			if r.spoke("end of the story")() {
				t.Errorf("the rest of the story was spoken after the caller interrupted: %q", r.speech.Spoken())
			}
			recs := r.speech.Recordings()
			if len(recs) != 2 {
				t.Fatalf("%d recordings transcribed, want 2", len(recs))
			}
			if !hasMarker(t, recs[1]) {
				t.Error("the transcriber did not get the start of the caller's words (the marker)")
			}
			if tc.echo == 0 {
				pcm, _, _ := parseWAV(recs[1])
				if got, want := siptest.Voiced(pcm, speechRate), time.Duration(len(said))*time.Second/lineRate; got < want-60*time.Millisecond {
					t.Errorf("the transcriber got %s of the caller's %s of speech", got, want)
				}
			}
			// The answer is heard after the silence.
			if !siptest.WaitFor(ctx, 10*time.Second, func() bool {
				loud := out.LoudAt()
				return len(loud) > 0 && loud[len(loud)-1].Sub(began) > stopBound+300*time.Millisecond
			}) {
				t.Error("the answer to the caller's words was not heard")
			}
			hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_ = out.Hangup(hctx)
			if res := waitResult(t, c, 10*time.Second); res.Outcome != Answered || res.Turns != 2 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

// What must not stop the assistant: a short burst of noise, the line's
// echo of its own voice 16 dB down, and the caller's speech with barge_in
// off (half duplex). The whole story is heard, nothing more is
// transcribed, no turn is interrupted.
func TestNoBargeIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		call siptest.CallOptions
		say  []int16
	}{
		{name: "noise burst", say: siptest.Noise(160*time.Millisecond, 12000, lineRate)},
		{name: "echo", call: siptest.CallOptions{Echo: 0.16}},
		{name: "half duplex", cfg: Config{HalfDuplex: true}, say: append(marker(), siptest.Speechlike(1100*time.Millisecond, lineRate)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := duplexRig(t, tc.cfg, "tell me a story", "this must not be heard")
			r.agent.replies = []reply{{pieces: story, every: storyEvery}}
			out, _ := ownerOnLine(t, r, tc.call)
			before := out.Heard()
			askForStory(t, r, out)
			if tc.say != nil {
				began := time.Now()
				out.Say(tc.say)
				playingAt(t, out, began)
			}
			want := storyLen(r)
			if !siptest.WaitFor(context.Background(), 30*time.Second, func() bool {
				return r.spoke("end of the story")() && out.Heard()-before >= want*9/10
			}) {
				t.Fatalf("the story was cut: heard %s of %s; spoken %q", out.Heard()-before, want, r.speech.Spoken())
			}
			time.Sleep(time.Second) // anything heard would be transcribed by now
			if got := r.agent.submitted(); !slices.Equal(got, []string{"tell me a story"}) {
				t.Errorf("turns submitted: %q", got)
			}
			if n := len(r.speech.Heard()); n != 1 {
				t.Errorf("%d recordings transcribed, want the request only", n)
			}
			if got := r.agent.interruptions(); len(got) != 0 {
				t.Errorf("turns interrupted: %q", got)
			}
		})
	}
}

// # still skips what is being said with barge-in on: the line falls
// silent within stopBound, and nothing is transcribed or submitted.
func TestHashSkipsWithBargeIn(t *testing.T) {
	t.Parallel()
	r := duplexRig(t, Config{}, "tell me a story")
	r.agent.replies = []reply{{text: strings.Join(story, "")}}
	out, _ := ownerOnLine(t, r, siptest.CallOptions{})
	before := out.Heard()
	askForStory(t, r, out)
	pressed := time.Now()
	if err := out.Press("#"); err != nil {
		t.Fatal(err)
	}
	playingAt(t, out, pressed)
	time.Sleep(stopBound + time.Second)
	if stopped := quietAfter(out.LoudAt(), pressed, 300*time.Millisecond).Sub(pressed); stopped > stopBound {
		t.Errorf("the assistant went on for %s after #, want at most %s", stopped, stopBound)
	}
	if heard := out.Heard() - before; heard > storyLen(r)/2 {
		t.Errorf("heard %s of the story's %s after #", heard, storyLen(r))
	}
	if got := r.agent.submitted(); len(got) != 1 || len(r.speech.Heard()) != 1 {
		t.Errorf("turns submitted %q, %d recordings transcribed", got, len(r.speech.Heard()))
	}
}

// Speaking over an approval's read-out stops the read-out but never
// decides the approval, nor cancels it by interrupting its turn: the
// words queue behind that turn, the card is read again, the keypad's 1
// approves it, and then the words are answered.
func TestBargeInDuringApproval(t *testing.T) {
	t.Parallel()
	preview := "Write forty lines of notes about the lighthouse keeper, the storm, the candle and the ships to notes.txt"
	r := duplexRig(t, Config{}, "write the notes", "and what is the weather")
	r.agent.replies = []reply{{gated: preview, text: "The notes are written."}, {text: "It is sunny."}}
	out, c := ownerOnLine(t, r, siptest.CallOptions{})
	ctx := context.Background()
	before := out.Heard()
	out.Say(siptest.Speechlike(800*time.Millisecond, lineRate))
	if !siptest.WaitFor(ctx, 20*time.Second, func() bool { return r.spoke("Approval needed")() && out.Heard() >= before+1500*time.Millisecond }) {
		t.Fatalf("the approval was not read out; spoken %q", r.speech.Spoken())
	}
	began := time.Now()
	out.Say(append(marker(), siptest.Speechlike(1100*time.Millisecond, lineRate)...))
	playingAt(t, out, began)
	if !siptest.WaitFor(ctx, 20*time.Second, r.spoke("I will come to that after this.")) {
		t.Fatalf("the card was not read again; submitted %q, spoken %q", r.agent.submitted(), r.speech.Spoken())
	}
	if stopped := quietAfter(out.LoudAt(), began, 300*time.Millisecond).Sub(began); stopped > stopBound {
		t.Errorf("the read-out went on for %s after the caller began, want at most %s", stopped, stopBound)
	}
	if got := r.agent.noInterrupt(); !slices.Equal(got, []bool{false, true}) {
		t.Errorf("NoInterrupt of the turns: %v, want the caller's words queued", got)
	}
	if n := len(r.broker.Pending("")); n != 1 || len(r.agent.actions()) != 0 || len(r.agent.interruptions()) != 0 {
		t.Fatalf("after the words: %d approvals pending, actions %q, interrupted %q", n, r.agent.actions(), r.agent.interruptions())
	}
	if err := out.Press("1"); err != nil {
		t.Fatal(err)
	}
	if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return r.spoke("The notes are written.")() && r.spoke("It is sunny.")() }) {
		t.Fatalf("spoken %q", r.speech.Spoken())
	}
	if got := r.agent.actions(); !slices.Equal(got, []string{preview}) {
		t.Errorf("actions run: %q", got)
	}
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_ = out.Hangup(hctx)
	if res := waitResult(t, c, 10*time.Second); res.Turns != 2 {
		t.Errorf("result %+v", res)
	}
}

// People answer a call with "Hello?": what the caller says while the
// opening line is said neither cuts it off nor becomes a turn of its
// own, with barge-in on or off; once it has been said they are heard.
func TestOpeningLineIsNotCutOff(t *testing.T) {
	t.Parallel()
	for _, half := range []bool{false, true} {
		t.Run(map[bool]string{false: "barge-in", true: "half duplex"}[half], func(t *testing.T) {
			t.Parallel()
			greeting := "Hello, this is Hestia calling you back. What can I do for you today?"
			r := newRig(t, inboundConfig(Config{Greeting: greeting, HalfDuplex: half}), "what is the weather")
			r.speech.SetPerChar(25 * time.Millisecond)
			out := callHestia(t, r, siptest.StartPeer(t, siptest.PeerOptions{}), siptest.CallOptions{From: owner})
			if out.Status != 200 {
				t.Fatalf("answered %d %s", out.Status, out.Reason)
			}
			t.Cleanup(func() {
				hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = out.Hangup(hctx)
			})
			ctx := context.Background()
			prompt := r.speech.SpeechDuration(pinPrompt)
			if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return out.Heard() >= prompt*8/10 }) {
				t.Fatalf("the PIN prompt was not heard; spoken %q", r.speech.Spoken())
			}
			if err := out.Press(testPIN + "#"); err != nil {
				t.Fatal(err)
			}
			// "Hello? Hello?" over the whole opening line.
			out.Say(siptest.Speechlike(r.speech.SpeechDuration(greeting)+time.Second, lineRate))
			greeted := prompt + r.speech.SpeechDuration(greeting)
			if !siptest.WaitFor(ctx, 20*time.Second, func() bool { return out.Heard() >= greeted*9/10 }) {
				t.Fatalf("the opening line was cut off: heard %v of %v; spoken %q", out.Heard(), greeted, r.speech.Spoken())
			}
			time.Sleep(1500 * time.Millisecond) // what was said over it has ended
			if got := r.agent.submitted(); len(got) != 0 {
				t.Fatalf("what was said over the opening line became turns: %q", got)
			}
			out.Say(siptest.Speechlike(800*time.Millisecond, lineRate))
			if !siptest.WaitFor(ctx, 15*time.Second, func() bool { return len(r.agent.submitted()) == 1 }) {
				t.Fatalf("the caller was not heard after the opening line; submitted %q", r.agent.submitted())
			}
		})
	}
}
