package voice

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// tone is d of a 220 Hz sine at amplitude amp (of 32767), as PCM.
func tone(d time.Duration, amp float64) []byte {
	n := int(d.Seconds() * SampleRate)
	b := make([]byte, 2*n)
	for i := range n {
		v := amp * math.Sin(2*math.Pi*220*float64(i)/SampleRate)
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16(v)))
	}
	return b
}

func silence(d time.Duration) []byte { return make([]byte, 2*int(d.Seconds()*SampleRate)) }

// noise is d of uniform noise of amplitude amp.
func noise(d time.Duration, amp float64, r *rand.Rand) []byte {
	n := int(d.Seconds() * SampleRate)
	b := make([]byte, 2*n)
	for i := range n {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(int16((r.Float64()*2-1)*amp)))
	}
	return b
}

// feed pushes pcm in 100 ms chunks, the clock advancing with the audio,
// and returns the events with the time of the chunk that produced them.
func feed(v *VAD, start time.Time, pcm []byte) (evs []VADEvent, end time.Time) {
	const chunk = SampleRate / 10 * 2
	t := start
	for off := 0; off < len(pcm); off += chunk {
		t = t.Add(100 * time.Millisecond)
		evs = append(evs, v.Push(t, pcm[off:min(off+chunk, len(pcm))])...)
	}
	return evs, t
}

func TestLevel(t *testing.T) {
	t.Parallel()
	if l := Level(silence(20 * time.Millisecond)); l != -100 {
		t.Errorf("silence %f dBFS", l)
	}
	// A full-scale sine is -3 dBFS RMS.
	if l := Level(tone(20*time.Millisecond, 32767)); math.Abs(l+3.01) > 0.2 {
		t.Errorf("full-scale sine %f dBFS", l)
	}
	if l := Level(nil); l != -100 {
		t.Errorf("empty frame %f", l)
	}
}

func TestVADUtterance(t *testing.T) {
	t.Parallel()
	v := NewVAD(VADConfig{EndSilence: 300 * time.Millisecond})
	t0 := time.Unix(1000, 0)
	evs, t1 := feed(v, t0, append(silence(time.Second), tone(800*time.Millisecond, 8000)...))
	if len(evs) != 1 || evs[0].Kind != VADStart || !v.Active() {
		t.Fatalf("after speech began: %+v", evs)
	}
	lastSpeech := t1
	evs, _ = feed(v, t1, silence(time.Second))
	if len(evs) != 1 || evs[0].Kind != VADEnd {
		t.Fatalf("after silence: %+v", evs)
	}
	e := evs[0]
	if !e.SpeechEndAt.Equal(lastSpeech) {
		t.Errorf("speech end %v, want the chunk of the last speech %v", e.SpeechEndAt, lastSpeech)
	}
	// 200 ms pre-roll + 800 ms speech + 200 ms of the silence after it.
	if got := time.Duration(len(e.PCM)/2) * time.Second / SampleRate; got < 1100*time.Millisecond || got > 1300*time.Millisecond {
		t.Errorf("utterance of %s", got)
	}
	if e.Speech < 700*time.Millisecond {
		t.Errorf("speech %s", e.Speech)
	}
	if v.Active() {
		t.Error("still active after the end")
	}
}

func TestVADIgnoresNoiseAndBlips(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	v := NewVAD(VADConfig{})
	t0 := time.Unix(0, 0)
	// A steady fan at about -36 dBFS: louder than MinLevel, but it is the
	// floor, not speech, once the detector has heard it a moment.
	evs, t1 := feed(v, t0, noise(3*time.Second, 900, r))
	// Before the floor is learnt the fan may start one utterance; it
	// ends once the floor knows the noise.
	if len(evs) > 0 && (len(evs) != 2 || evs[0].Kind != VADStart) {
		t.Errorf("the first seconds of noise: %v", kinds(evs))
	}
	if evs, _ := feed(v, t1, noise(5*time.Second, 900, r)); len(evs) != 0 {
		t.Errorf("steady noise made %v", kinds(evs))
	}
	v = NewVAD(VADConfig{})
	// A click: 100 ms of sound is dropped, not transcribed.
	evs, t1 = feed(v, t1, append(append(silence(500*time.Millisecond), tone(100*time.Millisecond, 8000)...), silence(time.Second)...))
	if len(evs) != 2 || evs[0].Kind != VADStart || evs[1].Kind != VADDropped {
		t.Fatalf("a click: %+v", evs)
	}
	// Speech over the fan is heard.
	v = NewVAD(VADConfig{})
	feed(v, t0, noise(3*time.Second, 900, r))
	mixed := noise(time.Second, 900, r)
	sp := tone(600*time.Millisecond, 9000)
	fan := noise(600*time.Millisecond, 900, r)
	for i := 0; i < len(sp); i += 2 {
		s := int(int16(binary.LittleEndian.Uint16(sp[i:]))) + int(int16(binary.LittleEndian.Uint16(fan[i:])))
		binary.LittleEndian.PutUint16(sp[i:], uint16(int16(s)))
	}
	mixed = append(append(mixed, sp...), noise(time.Second, 900, r)...)
	evs, _ = feed(v, t1, mixed)
	if len(evs) < 2 || evs[len(evs)-2].Kind != VADStart || evs[len(evs)-1].Kind != VADEnd {
		t.Fatalf("speech over noise: %+v", kinds(evs))
	}
}

func kinds(evs []VADEvent) []VADKind {
	var k []VADKind
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return k
}

func TestVADStrictOnsetAndLimits(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	// 120 ms of sound starts an utterance normally, not while strict.
	burst := append(append(silence(300*time.Millisecond), tone(120*time.Millisecond, 8000)...), silence(300*time.Millisecond)...)
	v := NewVAD(VADConfig{})
	if evs, _ := feed(v, t0, burst); len(evs) == 0 || evs[0].Kind != VADStart {
		t.Errorf("normal onset: %v", kinds(evs))
	}
	v = NewVAD(VADConfig{})
	v.SetStrict(true)
	if evs, _ := feed(v, t0, burst); len(evs) != 0 {
		t.Errorf("strict onset started on 120 ms: %v", kinds(evs))
	}
	// An utterance that never pauses ends at MaxUtterance.
	v = NewVAD(VADConfig{MaxUtterance: time.Second})
	evs, _ := feed(v, t0, tone(1500*time.Millisecond, 8000))
	if len(evs) < 2 || evs[1].Kind != VADEnd {
		t.Fatalf("max utterance: %v", kinds(evs))
	}
	// Odd chunk sizes are carried over between pushes.
	v = NewVAD(VADConfig{EndSilence: 200 * time.Millisecond})
	pcm := append(append(silence(200*time.Millisecond), tone(500*time.Millisecond, 8000)...), silence(500*time.Millisecond)...)
	var all []VADEvent
	for off := 0; off < len(pcm); off += 126 {
		all = append(all, v.Push(t0, pcm[off:min(off+126, len(pcm))])...)
	}
	if len(all) != 2 || all[1].Kind != VADEnd {
		t.Fatalf("odd chunks: %v", kinds(all))
	}
}

// Reset drops an utterance under way and the pre-roll, so what follows
// starts a new one with none of the audio before the reset in it.
func TestVADReset(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	v := NewVAD(VADConfig{EndSilence: 200 * time.Millisecond})
	evs, t1 := feed(v, t0, append(silence(500*time.Millisecond), tone(300*time.Millisecond, 8000)...))
	if len(evs) != 1 || evs[0].Kind != VADStart || !v.Active() {
		t.Fatalf("before the reset: %v", kinds(evs))
	}
	v.Reset()
	if v.Active() {
		t.Fatal("still active after Reset")
	}
	// Silence alone after the reset ends nothing: the utterance is gone.
	evs, t1 = feed(v, t1, silence(time.Second))
	if len(evs) != 0 {
		t.Fatalf("after the reset, silence made %v", kinds(evs))
	}
	evs, _ = feed(v, t1, append(tone(400*time.Millisecond, 8000), silence(time.Second)...))
	if len(evs) != 2 || evs[1].Kind != VADEnd {
		t.Fatalf("a new utterance after the reset: %v", kinds(evs))
	}
	// 200 ms pre-roll (silence) + 400 ms + 200 ms: nothing from before.
	if got := time.Duration(len(evs[1].PCM)/2) * time.Second / SampleRate; got > 900*time.Millisecond {
		t.Errorf("utterance of %s carries audio from before the reset", got)
	}
}

func TestWAV(t *testing.T) {
	t.Parallel()
	w := WAV([]byte{1, 2, 3, 4})
	if len(w) != 48 || string(w[:4]) != "RIFF" || string(w[8:16]) != "WAVEfmt " || string(w[36:40]) != "data" {
		t.Fatalf("% x", w)
	}
	if binary.LittleEndian.Uint32(w[24:]) != SampleRate || binary.LittleEndian.Uint32(w[40:]) != 4 || binary.LittleEndian.Uint32(w[4:]) != 40 {
		t.Errorf("header % x", w[:44])
	}
}
