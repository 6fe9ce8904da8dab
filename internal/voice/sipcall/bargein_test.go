package sipcall

import (
	"math"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// toneAt is d of a 440 Hz tone at an RMS level of dbfs, at 8 kHz.
func toneAt(dbfs float64, d time.Duration) []int16 {
	amp := 32768 * math.Pow(10, dbfs/20) * math.Sqrt2
	return siptest.Tone(440, int16(amp), d, lineRate)
}

// feed pushes 8 kHz audio through the detector packet by packet and
// returns how much had been pushed when it first fired (-1: never).
func feed(b *bargeDetector, pcm []int16, echo float64, speaking bool) time.Duration {
	for i := 0; i+frameLen <= len(pcm); i += frameLen {
		p := pcm[i : i+frameLen]
		if b.push(p, appendPCM(nil, p), echo, speaking) {
			return time.Duration(i/frameLen+1) * frameDur
		}
	}
	return -1
}

// The barge-in onset: speech over the assistant for bargeOnset fires it,
// not before; a short burst, a quiet voice, the line's echo below the
// guard, a noisy line's hiss, and anything while the assistant is silent
// do not; speech with gaps between syllables does.
func TestBargeDetectorOnset(t *testing.T) {
	t.Parallel()
	silent := -100.0
	for _, tc := range []struct {
		name     string
		before   []int16 // heard while the assistant was silent (the floor)
		pcm      []int16
		echo     float64 // the loudest frame sent within echoWindow
		speaking bool
		fires    bool
	}{
		{name: "speech", pcm: toneAt(-20, time.Second), echo: silent, speaking: true, fires: true},
		{name: "speech over loud audio", pcm: toneAt(-20, time.Second), echo: -14, speaking: true, fires: true},
		{name: "speechlike", pcm: siptest.Speechlike(time.Second, lineRate), echo: -14, speaking: true, fires: true},
		{name: "burst", pcm: append(toneAt(-10, 200*time.Millisecond), toneAt(-80, time.Second)...), echo: silent, speaking: true},
		{name: "noise burst", pcm: append(siptest.Noise(160*time.Millisecond, 12000, lineRate), make([]int16, 8000)...), echo: silent, speaking: true},
		{name: "quiet voice", pcm: toneAt(-40, 2*time.Second), echo: silent, speaking: true},
		{name: "echo", pcm: toneAt(-30, 2*time.Second), echo: -14, speaking: true},
		{name: "echo's level over quiet audio", pcm: toneAt(-30, 2*time.Second), echo: -50, speaking: true, fires: true},
		{name: "noisy line", before: toneAt(-31, 2*time.Second), pcm: toneAt(-25, 2*time.Second), echo: silent, speaking: true},
		{name: "assistant silent", pcm: toneAt(-10, 2*time.Second), echo: silent},
		{name: "syllables", pcm: syllables(-20, 2*time.Second), echo: silent, speaking: true, fires: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBargeDetector()
			if feed(b, tc.before, silent, false) >= 0 {
				t.Fatal("fired while the assistant was silent")
			}
			at := feed(b, tc.pcm, tc.echo, tc.speaking)
			switch {
			case tc.fires && at < 0:
				t.Fatal("did not fire")
			case tc.fires && (at < bargeOnset || at > bargeWindow+200*time.Millisecond):
				t.Errorf("fired after %s of speech, want between %s and about %s", at, bargeOnset, bargeWindow)
			case !tc.fires && at >= 0:
				t.Errorf("fired after %s", at)
			}
		})
	}
}

// syllables is a tone at dbfs, 80 ms on and 40 ms off.
func syllables(dbfs float64, d time.Duration) []int16 {
	var out []int16
	for len(out) < int(d.Seconds()*lineRate) {
		out = append(out, toneAt(dbfs, 80*time.Millisecond)...)
		out = append(out, make([]int16, lineRate*40/1000)...)
	}
	return out
}

// The pre-roll reaches back bargeWindow+bargePreRoll from the latest
// packet, whatever the assistant was doing, and clear forgets the frames
// counted without touching it.
func TestBargeDetectorPreRoll(t *testing.T) {
	t.Parallel()
	b := newBargeDetector()
	for i := range 100 { // 2 s of numbered packets
		p := make([]int16, frameLen)
		for j := range p {
			p[j] = int16(i)
		}
		b.push(p, appendPCM(nil, append(p, p...)), silenceLevel, i%2 == 0)
	}
	pre := b.preRoll()
	want := int((bargeWindow + bargePreRoll) / frameDur)
	if got := len(pre) / (2 * 2 * frameLen); got != want {
		t.Fatalf("pre-roll of %d packets, want %d", got, want)
	}
	if first, last := int16(pre[0])|int16(pre[1])<<8, int16(pre[len(pre)-2])|int16(pre[len(pre)-1])<<8; first != int16(100-want) || last != 99 {
		t.Errorf("pre-roll from packet %d to %d, want %d to 99", first, last, 100-want)
	}
	b.clear()
	if len(b.preRoll()) != len(pre) {
		t.Error("clear dropped the pre-roll")
	}
}

// The echo meter keeps the loudest frame sent within echoWindow.
func TestEchoMeter(t *testing.T) {
	t.Parallel()
	var e echoMeter
	t0 := time.Unix(100, 0)
	if l := e.loudest(t0); l != silenceLevel {
		t.Fatalf("empty meter: %v", l)
	}
	loud := t0.Add(10 * frameDur)
	for i := range 16 {
		l := -30.0
		if i == 10 {
			l = -12
		}
		e.add(t0.Add(time.Duration(i)*frameDur), l)
	}
	for _, tc := range []struct {
		at   time.Time
		want float64
	}{
		{loud.Add(-frameDur), -30}, // sent later: not yet
		{loud, -12},
		{loud.Add(echoWindow), -12},
		{loud.Add(echoWindow + frameDur), -30},
		{t0.Add(time.Hour), silenceLevel},
	} {
		if l := e.loudest(tc.at); l != tc.want {
			t.Errorf("loudest at %s: %v, want %v", tc.at.Sub(loud), l, tc.want)
		}
	}
}
