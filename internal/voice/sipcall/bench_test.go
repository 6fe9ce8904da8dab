package sipcall

import (
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// BenchmarkResampleSpeech: three seconds of 24 kHz speech (a sentence
// from the tts tier) taken down to the 8 kHz line.
func BenchmarkResampleSpeech(b *testing.B) {
	in := siptest.Tone(440, 8000, 3*time.Second, 24000)
	b.SetBytes(int64(2 * len(in)))
	for b.Loop() {
		resample(in, 24000, lineRate)
	}
}

// BenchmarkLineFrame: one 20 ms packet of the caller's audio through
// G.711 decoding, the 16 kHz upsampler and the detector.
func BenchmarkLineFrame(b *testing.B) {
	payload := PCMU.encode(nil, siptest.Speechlike(20*time.Millisecond, lineRate))
	cfg := Config{}
	cfg.defaults()
	v := voice.NewVAD(cfg.VAD)
	var u upsampler
	pcm := make([]int16, 0, frameLen)
	var wide []byte
	now := time.Now()
	for b.Loop() {
		pcm = PCMU.decode(pcm[:0], payload)
		wide = appendPCM(wide[:0], u.up(pcm))
		now = now.Add(20 * time.Millisecond)
		v.Push(now, wide)
	}
}
