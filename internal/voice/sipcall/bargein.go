package sipcall

import (
	"math"
	"time"
)

// Barge-in: the caller speaking over the assistant stops it, as in the
// web app's voice mode. While the assistant speaks, the caller's audio is
// not given to the voice-activity detector (it would hear the line's echo
// of the assistant as speech); a stricter detector of its own decides
// whether the caller is talking, and only then is the detector fed, from
// a pre-roll that reaches back before the caller began.
//
// The onset is stricter than the detector's everyday one on three
// counts, each a constant below with its reason: the level, the length,
// and the echo guard.
const (
	// bargeMinLevel is the quietest 20 ms frame that counts towards a
	// barge-in, in dBFS. Listening in silence takes -50 dBFS (a caller
	// away from the handset is quiet); someone talking over the assistant
	// speaks up, and breathing, a distant television and line noise stay
	// under -35 dBFS.
	bargeMinLevel = -35.0
	// bargeOnset is how much speech stops the assistant: 300 ms, where
	// listening in silence starts an utterance after 60 ms. A cough, a
	// click or a "mm" is shorter; "wait", "no, stop" are longer. The
	// assistant stops within about bargeWindow of the caller beginning.
	bargeOnset = 300 * time.Millisecond
	// bargeWindow is the stretch of audio bargeOnset of speech must fall
	// within: speech has gaps between syllables, so the frames need not
	// be consecutive.
	bargeWindow = 500 * time.Millisecond
	// bargePreRoll is how much audio before bargeWindow is kept, so the
	// utterance handed to the transcriber starts before the caller's
	// first syllable (the detector keeps 200 ms before its onset too).
	bargePreRoll = 200 * time.Millisecond
	// bargeFloorMargin: a frame must also stand this far above the line's
	// noise floor (the quietest frame of the last two seconds heard while
	// the assistant was silent), as the detector requires, so a noisy
	// line does not barge in during the pauses of the assistant's speech.
	bargeFloorMargin = 10.0

	// echoLoss and echoWindow are the echo guard. A phone cancels its
	// own acoustic echo and providers cancel the hybrid echo of analogue
	// lines (ITU-T G.168), so what comes back is usually 25 dB or more
	// below what was sent; an uncancelled hybrid returns it 6 to 15 dB
	// down. A frame counts only when it is louder than the loudest frame
	// the assistant sent within echoWindow before it, less echoLoss: the
	// same idea as the Geigel double-talk detector, on frame energies
	// instead of samples, which is all a yes/no decision needs (no
	// adaptive filter, no delay estimate). Its cost is that a caller must
	// be no more than echoLoss quieter than the assistant to interrupt
	// it; 12 dB keeps that easy for a voice at ordinary loudness and
	// still rejects the echo of most uncancelled lines. A line whose echo
	// is worse than that needs barge_in = false.
	echoLoss = 12.0
	// echoWindow covers the echo's delay: the network's round trip and
	// the far end's jitter buffer, up to about 300 ms on a mobile line.
	// A longer window only makes the guard stricter while the assistant's
	// loudness changes.
	echoWindow = 320 * time.Millisecond
)

const (
	frameDur     = 20 * time.Millisecond
	bargeFrames  = int(bargeWindow / frameDur)
	bargeNeeded  = int(bargeOnset / frameDur)
	floorFrames  = 100 // 2 s, as the detector's floor
	echoFrames   = 32  // outbound frames remembered: more than echoWindow
	preRollBytes = int((bargeWindow+bargePreRoll)/time.Millisecond) * speechRate / 1000 * 2
	silenceLevel = -100.0
)

// frameLevel is the RMS level of 8 kHz samples in dBFS (-100 for digital
// silence).
func frameLevel(pcm []int16) float64 {
	if len(pcm) == 0 {
		return silenceLevel
	}
	var sum float64
	for _, s := range pcm {
		v := float64(s)
		sum += v * v
	}
	ms := sum / float64(len(pcm)) / (32768 * 32768)
	if ms <= 1e-10 {
		return silenceLevel
	}
	return 10 * math.Log10(ms)
}

// echoMeter remembers the level of each frame sent, to tell the caller
// from the echo of the assistant. Not safe for concurrent use: the media
// stream guards it.
type echoMeter struct {
	at    [echoFrames]time.Time
	level [echoFrames]float64
	next  int
}

func (e *echoMeter) add(at time.Time, level float64) {
	e.at[e.next], e.level[e.next] = at, level
	e.next = (e.next + 1) % echoFrames
}

// loudest is the level of the loudest frame sent within echoWindow
// before now (silenceLevel when none was).
func (e *echoMeter) loudest(now time.Time) float64 {
	l := silenceLevel
	for i, at := range e.at {
		if !at.IsZero() && !at.After(now) && now.Sub(at) <= echoWindow {
			l = max(l, e.level[i])
		}
	}
	return l
}

// bargeDetector decides, while the assistant speaks, whether the caller
// is talking over it (conversation.onAudio, the media receive goroutine).
// It is fed every frame of the call, so its noise floor and pre-roll are
// current when the assistant starts speaking. Not safe for concurrent
// use.
type bargeDetector struct {
	pending []int16 // 8 kHz samples not yet a whole frame

	levels [floorFrames]float64
	nlev   int

	hits  [bargeFrames]bool // the frames of bargeWindow that counted
	nhit  int
	count int // of hits set

	ring []byte // the last bargeWindow+bargePreRoll of 16 kHz audio
}

func newBargeDetector() *bargeDetector {
	b := &bargeDetector{}
	for i := range b.levels {
		b.levels[i] = silenceLevel
	}
	return b
}

// push takes a packet of the caller's audio (8 kHz, and its 16 kHz form
// for the pre-roll), the level of the loudest frame the assistant sent
// within echoWindow, and whether the assistant is speaking; it reports
// whether the caller has spoken for bargeOnset of the last bargeWindow.
// While the assistant is silent, frames only update the floor and the
// pre-roll.
func (b *bargeDetector) push(pcm []int16, wide []byte, echo float64, speaking bool) bool {
	// The ring grows to twice its length before the old audio is copied
	// out, rather than being copied down at every packet.
	b.ring = append(b.ring, wide...)
	if len(b.ring) > 2*preRollBytes {
		b.ring = append(b.ring[:0], b.ring[len(b.ring)-preRollBytes:]...)
	}
	if !speaking {
		b.clear()
	}
	fired := false
	b.pending = append(b.pending, pcm...)
	for len(b.pending) >= frameLen {
		if b.frame(b.pending[:frameLen], echo, speaking) {
			fired = true
		}
		b.pending = b.pending[frameLen:]
	}
	b.pending = append([]int16(nil), b.pending...)
	return fired
}

func (b *bargeDetector) frame(f []int16, echo float64, speaking bool) bool {
	lvl := frameLevel(f)
	if !speaking {
		// The floor is learnt while the assistant is silent: the line's
		// own noise, not the echo of the assistant.
		b.levels[b.nlev] = lvl
		b.nlev = (b.nlev + 1) % floorFrames
		return false
	}
	floor := b.levels[0]
	for _, l := range b.levels[1:] {
		floor = min(floor, l)
	}
	hit := bargeSpeech(lvl, floor, echo)
	if b.hits[b.nhit] {
		b.count--
	}
	b.hits[b.nhit] = hit
	if hit {
		b.count++
	}
	b.nhit = (b.nhit + 1) % bargeFrames
	return b.count >= bargeNeeded
}

// bargeSpeech is whether a frame at lvl counts towards a barge-in, with
// the line's noise floor and the loudest frame the assistant sent within
// echoWindow.
func bargeSpeech(lvl, floor, echo float64) bool {
	return lvl > bargeMinLevel && lvl > floor+bargeFloorMargin && lvl > echo-echoLoss
}

// clear forgets the frames counted towards a barge-in.
func (b *bargeDetector) clear() {
	if b.count == 0 {
		return
	}
	b.hits, b.count = [bargeFrames]bool{}, 0
}

// preRoll is the last bargeWindow+bargePreRoll of the caller's audio at
// 16 kHz: from before the speech that barged in began.
func (b *bargeDetector) preRoll() []byte {
	r := b.ring
	if len(r) > preRollBytes {
		r = r[len(r)-preRollBytes:]
	}
	return append([]byte(nil), r...)
}
