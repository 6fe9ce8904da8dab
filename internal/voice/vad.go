package voice

import (
	"encoding/binary"
	"math"
	"time"
)

// Audio the voice socket takes: 16-bit little-endian mono PCM at 16 kHz,
// what speech-to-text models are trained on, so nothing is resampled here.
const (
	SampleRate   = 16000
	frameSamples = SampleRate / 50 // 20 ms analysis frames
	frameDur     = 20 * time.Millisecond
)

// VADConfig tunes the detector. Zero values take the defaults.
type VADConfig struct {
	// EndSilence is how long speech must stay below the threshold before
	// the utterance ends (default 600 ms): shorter cuts people off between
	// words, longer makes every reply wait.
	EndSilence time.Duration
	// Onset is how much speech starts an utterance (default 60 ms); while
	// the assistant speaks, StrictOnset (default 200 ms) applies, so its
	// own voice leaking back into the microphone or a click does not barge in.
	Onset, StrictOnset time.Duration
	// MinSpeech drops utterances with less speech than this (default
	// 250 ms): a cough or a door is not worth a transcription.
	MinSpeech time.Duration
	// MaxUtterance ends an utterance that goes on this long (default 30 s).
	MaxUtterance time.Duration
	// MinLevel is the quietest frame counted as speech, in dBFS (default
	// -45); above a noisy room the threshold rises with the noise floor.
	MinLevel float64
}

func (c *VADConfig) defaults() {
	if c.EndSilence <= 0 {
		c.EndSilence = 600 * time.Millisecond
	}
	if c.Onset <= 0 {
		c.Onset = 60 * time.Millisecond
	}
	if c.StrictOnset <= 0 {
		c.StrictOnset = 200 * time.Millisecond
	}
	if c.MinSpeech <= 0 {
		c.MinSpeech = 250 * time.Millisecond
	}
	if c.MaxUtterance <= 0 {
		c.MaxUtterance = 30 * time.Second
	}
	if c.MinLevel == 0 {
		c.MinLevel = -45
	}
}

// VADEvent is what the detector saw in the audio pushed so far.
type VADEvent struct {
	Kind VADKind
	// PCM is the utterance (End only): from a little before speech began
	// to a little after it stopped.
	PCM []byte
	// SpeechEndAt is when the frame holding the utterance's last speech
	// arrived (End only): the end of the user's speech, where the latency
	// budget starts.
	SpeechEndAt time.Time
	// Speech is how much of the utterance was above the threshold.
	Speech time.Duration

	decidedAt time.Time // when the session's reader got the End
}

// VADKind names a VADEvent.
type VADKind int

// Events: Start when speech begins (barge-in acts on it), End with the
// utterance, Dropped when what began was too short to be speech.
const (
	VADStart VADKind = iota + 1
	VADEnd
	VADDropped
)

// VAD is an energy detector with an adaptive noise floor: a 20 ms frame is
// speech when its level is above both MinLevel and the floor plus a margin
// (with hysteresis while speech goes on). It is deliberately simple: the
// socket carries one person close to a microphone with the browser's noise
// suppression on, and a model-based detector would cost more than the
// whole latency budget. It is not safe for concurrent use.
type VAD struct {
	cfg    VADConfig
	strict bool

	pending []byte // samples not yet a whole frame
	levels  [floorFrames]float64
	next    int
	// pre holds the last frames before an utterance (pre-roll), so the
	// first syllable is not cut.
	pre [][]byte

	active     bool
	run        int // consecutive speech frames while not active
	silent     int // consecutive non-speech frames while active
	utt        []byte
	speech     int // speech frames in the utterance
	frames     int // frames in the utterance
	lastSpeech time.Time
	tailLen    int // bytes of utt after its last speech frame
}

// NewVAD returns a detector.
func NewVAD(cfg VADConfig) *VAD {
	cfg.defaults()
	v := &VAD{cfg: cfg}
	// Until two seconds were heard the floor is assumed quiet, so speech
	// from the first moment is heard; a noisy room may then start one
	// utterance, which ends once the floor has learnt the noise.
	for i := range v.levels {
		v.levels[i] = cfg.MinLevel - 10
	}
	return v
}

// SetStrict raises the bar for starting an utterance (while the assistant
// is speaking).
func (v *VAD) SetStrict(on bool) { v.strict = on }

// Active reports whether an utterance is under way.
func (v *VAD) Active() bool { return v.active }

// Reset forgets an utterance under way and the audio before it, keeping
// the noise floor learnt so far: a phone call resets it after the
// assistant spoke (its own onset check listened meanwhile) or, half
// duplex, to start afresh after not listening.
func (v *VAD) Reset() {
	v.active, v.run, v.silent, v.speech, v.frames, v.tailLen = false, 0, 0, 0, 0, 0
	v.pending, v.utt, v.pre = v.pending[:0], v.utt[:0], v.pre[:0]
}

const (
	preRollFrames = 10  // 200 ms
	floorFrames   = 100 // 2 s
)

func frames(d time.Duration) int { return max(1, int((d+frameDur-1)/frameDur)) }

// Push feeds PCM (an even number of bytes) that arrived at now and returns
// what happened in it.
func (v *VAD) Push(now time.Time, pcm []byte) []VADEvent {
	var evs []VADEvent
	v.pending = append(v.pending, pcm...)
	for len(v.pending) >= frameSamples*2 {
		f := v.pending[:frameSamples*2]
		if ev, ok := v.frame(now, f); ok {
			evs = append(evs, ev)
		}
		v.pending = v.pending[frameSamples*2:]
	}
	// Keep the remainder in a fresh slice so the caller's buffers and the
	// growing utterance never alias it.
	v.pending = append([]byte(nil), v.pending...)
	return evs
}

// Level is a frame's RMS level in dBFS (-100 for digital silence).
func Level(frame []byte) float64 {
	var sum float64
	n := len(frame) / 2
	if n == 0 {
		return -100
	}
	for i := 0; i < n; i++ {
		s := float64(int16(binary.LittleEndian.Uint16(frame[2*i:])))
		sum += s * s
	}
	ms := sum / float64(n) / (32768 * 32768)
	if ms <= 1e-10 {
		return -100
	}
	return 10 * math.Log10(ms)
}

func (v *VAD) frame(now time.Time, f []byte) (VADEvent, bool) {
	lvl := Level(f)
	// The noise floor is the quietest frame of the last two seconds: the
	// pauses between words reach it, a steady fan or hum sets it, and
	// speech itself never raises it while the person pauses now and then.
	floor := v.levels[0]
	for _, l := range v.levels[1:] {
		floor = min(floor, l)
	}
	v.levels[v.next] = lvl
	v.next = (v.next + 1) % len(v.levels)
	margin := 10.0
	if v.active {
		margin = 6 // hysteresis: a word trailing off is still speech
	}
	speech := lvl > v.cfg.MinLevel && lvl > floor+margin
	if !v.active {
		v.pre = append(v.pre, append([]byte(nil), f...))
		if len(v.pre) > preRollFrames {
			v.pre = v.pre[1:]
		}
		if !speech {
			v.run = 0
			return VADEvent{}, false
		}
		v.run++
		need := frames(v.cfg.Onset)
		if v.strict {
			need = frames(v.cfg.StrictOnset)
		}
		if v.run < need {
			return VADEvent{}, false
		}
		v.active, v.silent, v.speech = true, 0, v.run
		v.utt = v.utt[:0]
		for _, p := range v.pre {
			v.utt = append(v.utt, p...)
		}
		v.frames = len(v.pre)
		v.pre = v.pre[:0]
		v.lastSpeech, v.tailLen = now, 0
		return VADEvent{Kind: VADStart}, true
	}
	v.utt = append(v.utt, f...)
	v.frames++
	if speech {
		v.speech++
		v.silent = 0
		v.lastSpeech, v.tailLen = now, 0
	} else {
		v.silent++
		v.tailLen += len(f)
	}
	switch {
	case v.silent >= frames(v.cfg.EndSilence):
	case v.frames >= frames(v.cfg.MaxUtterance):
	default:
		return VADEvent{}, false
	}
	v.active, v.run = false, 0
	speechDur := time.Duration(v.speech) * frameDur
	if v.speech < frames(v.cfg.MinSpeech) {
		return VADEvent{Kind: VADDropped, Speech: speechDur}, true
	}
	// Keep 200 ms of the silence after the last word; the rest was only
	// the wait for the end.
	keep := len(v.utt) - max(0, v.tailLen-preRollFrames*frameSamples*2)
	pcm := append([]byte(nil), v.utt[:keep]...)
	return VADEvent{Kind: VADEnd, PCM: pcm, SpeechEndAt: v.lastSpeech, Speech: speechDur}, true
}

// WAV wraps 16 kHz mono PCM in a WAV header for the transcription
// endpoint.
func WAV(pcm []byte) []byte {
	h := make([]byte, 44, 44+len(pcm))
	copy(h, "RIFF")
	binary.LittleEndian.PutUint32(h[4:], uint32(36+len(pcm)))
	copy(h[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(h[16:], 16)
	binary.LittleEndian.PutUint16(h[20:], 1) // PCM
	binary.LittleEndian.PutUint16(h[22:], 1) // mono
	binary.LittleEndian.PutUint32(h[24:], SampleRate)
	binary.LittleEndian.PutUint32(h[28:], SampleRate*2)
	binary.LittleEndian.PutUint16(h[32:], 2)
	binary.LittleEndian.PutUint16(h[34:], 16)
	copy(h[36:], "data")
	binary.LittleEndian.PutUint32(h[40:], uint32(len(pcm)))
	return append(h, pcm...)
}
