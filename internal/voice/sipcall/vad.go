package sipcall

import "time"

// vad finds the caller's utterances in 16 kHz audio by energy: a frame is
// speech when it is well above the line's noise floor (tracked as the
// quietest recent level) and above an absolute floor; an utterance starts
// after a few speech frames and ends after a stretch of silence. Phone
// lines are band-limited and carry little noise, so energy alone separates
// speech from pauses well enough to end a turn; it does not tell speech
// from other sounds, which the stt tier then transcribes as nothing.
type vad struct {
	cfg VADConfig

	noise     float64 // the noise floor estimate, dBFS
	speaking  bool
	run       int     // consecutive speech frames before a start
	quiet     int     // consecutive silent frames within an utterance
	voiced    int     // speech frames in the current utterance
	utter     []int16 // the current utterance, pre-roll included
	preroll   [][]int16
	frameSize int
}

// VADConfig tunes the detector; zero values take the defaults.
type VADConfig struct {
	// Threshold is how far above the noise floor a frame must be to count
	// as speech (default 12 dB).
	Threshold float64
	// Floor is the absolute level below which nothing is speech (default
	// -50 dBFS).
	Floor float64
	// Start is how long speech must last to open an utterance (default
	// 60 ms: a click or a cough of one frame does not).
	Start time.Duration
	// Hangover is the silence that ends an utterance (default 700 ms: a
	// breath between phrases does not).
	Hangover time.Duration
	// MaxUtterance closes an utterance that goes on (default 30 s).
	MaxUtterance time.Duration
	// MinUtterance drops shorter ones as noise (default 250 ms).
	MinUtterance time.Duration
}

func (c *VADConfig) defaults() {
	if c.Threshold == 0 {
		c.Threshold = 12
	}
	if c.Floor == 0 {
		c.Floor = -50
	}
	if c.Start == 0 {
		c.Start = 60 * time.Millisecond
	}
	if c.Hangover == 0 {
		c.Hangover = 700 * time.Millisecond
	}
	if c.MaxUtterance == 0 {
		c.MaxUtterance = 30 * time.Second
	}
	if c.MinUtterance == 0 {
		c.MinUtterance = 250 * time.Millisecond
	}
}

// vadFrame is 20 ms at speechRate.
const vadFrame = speechRate / 50

// prerollFrames keep the 200 ms before the start, so the first syllable
// (quieter than what triggered) reaches the transcriber.
const prerollFrames = 10

func newVAD(cfg VADConfig) *vad {
	cfg.defaults()
	return &vad{cfg: cfg, noise: -70, frameSize: vadFrame}
}

func frames(d time.Duration) int { return max(1, int(d/(20*time.Millisecond))) }

// push takes one 20 ms frame and returns a finished utterance, if this
// frame ended one.
func (v *vad) push(frame []int16) []int16 {
	level := rmsDBFS(frame)
	// The floor follows quiet frames down at once and rises slowly, so
	// speech does not drag it up within an utterance.
	if level < v.noise {
		v.noise = level
	} else if !v.speaking {
		v.noise += 0.02 * (level - v.noise)
	}
	speech := level > v.cfg.Floor && level > v.noise+v.cfg.Threshold
	f := append([]int16(nil), frame...)
	if !v.speaking {
		v.preroll = append(v.preroll, f)
		if len(v.preroll) > prerollFrames {
			v.preroll = v.preroll[1:]
		}
		if !speech {
			v.run = 0
			return nil
		}
		v.run++
		if v.run < frames(v.cfg.Start) {
			return nil
		}
		v.speaking, v.quiet, v.voiced = true, 0, v.run
		v.utter = v.utter[:0]
		for _, p := range v.preroll {
			v.utter = append(v.utter, p...)
		}
		v.preroll = v.preroll[:0]
		return nil
	}
	v.utter = append(v.utter, f...)
	if speech {
		v.quiet = 0
		v.voiced++
	} else {
		v.quiet++
	}
	if v.quiet >= frames(v.cfg.Hangover) || len(v.utter) >= frames(v.cfg.MaxUtterance)*v.frameSize {
		return v.finish()
	}
	return nil
}

// finish closes the current utterance; one shorter than MinUtterance
// (speech frames only) is dropped.
func (v *vad) finish() []int16 {
	v.speaking, v.run = false, 0
	out := v.utter
	v.utter = nil
	voiced := v.voiced
	v.quiet, v.voiced = 0, 0
	if voiced < frames(v.cfg.MinUtterance) {
		return nil
	}
	return out
}

// reset forgets a partial utterance (the assistant started speaking).
func (v *vad) reset() {
	v.speaking, v.run, v.quiet, v.voiced = false, 0, 0, 0
	v.utter, v.preroll = nil, v.preroll[:0]
}

// active reports whether an utterance is open.
func (v *vad) active() bool { return v.speaking }
