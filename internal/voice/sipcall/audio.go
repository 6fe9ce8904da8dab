package sipcall

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/hestia-dev/hestia/internal/voice"
)

// Audio plumbing between the phone line (8 kHz) and the speech tiers:
// the stt tier gets 16 kHz mono WAV (what whisper.cpp and the OpenAI API
// expect), the tts tier answers with WAV at its own rate (24 kHz from
// OpenAI and Kokoro), or raw 24 kHz PCM for response_format "pcm".

// Rates.
const (
	lineRate   = 8000             // G.711
	speechRate = voice.SampleRate // what the detector and the stt tier take
	frameLen   = 160              // samples in one 20 ms packet at lineRate
	// ttsPCMRate is the rate of raw "pcm" speech (OpenAI's documented
	// format: 24 kHz, 16-bit little-endian, mono).
	ttsPCMRate = 24000
)

// errNotWAV is audio that is not a PCM WAV file we can read.
var errNotWAV = errors.New("not a 16-bit PCM WAV file")

// wavInfo describes decoded WAV audio.
type wavInfo struct {
	Rate     int
	Channels int
}

// maxWAV bounds the audio read from the tts tier (a minute of 48 kHz
// stereo is 11 MiB; a sentence is far less).
const maxWAV = 32 << 20

// parseWAV reads a RIFF/WAVE file of 16-bit PCM (format 1, or
// WAVE_FORMAT_EXTENSIBLE with the PCM subformat) and returns its samples
// mixed down to mono. Chunks other than fmt and data are skipped; a data
// chunk whose size is unknown (0 or 0xFFFFFFFF, as streaming writers
// leave it) runs to the end of the file.
func parseWAV(b []byte) ([]int16, wavInfo, error) {
	var info wavInfo
	if len(b) > maxWAV {
		return nil, info, fmt.Errorf("%w: %d bytes is too large", errNotWAV, len(b))
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, info, fmt.Errorf("%w: no RIFF/WAVE header", errNotWAV)
	}
	bits := 0
	off := 12
	for off+8 <= len(b) {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		body := off + 8
		switch id {
		case "fmt ":
			if size < 16 || body+16 > len(b) {
				return nil, info, fmt.Errorf("%w: short fmt chunk", errNotWAV)
			}
			format := binary.LittleEndian.Uint16(b[body:])
			info.Channels = int(binary.LittleEndian.Uint16(b[body+2:]))
			info.Rate = int(binary.LittleEndian.Uint32(b[body+4:]))
			bits = int(binary.LittleEndian.Uint16(b[body+14:]))
			if format == 0xFFFE && size >= 26 && body+26 <= len(b) {
				format = binary.LittleEndian.Uint16(b[body+24:]) // the subformat GUID's first two bytes
			}
			if format != 1 {
				return nil, info, fmt.Errorf("%w: format %d is not PCM", errNotWAV, format)
			}
		case "data":
			if info.Rate == 0 {
				return nil, info, fmt.Errorf("%w: data before fmt", errNotWAV)
			}
			if bits != 16 {
				return nil, info, fmt.Errorf("%w: %d bits per sample", errNotWAV, bits)
			}
			if info.Channels < 1 || info.Channels > 8 || info.Rate < 4000 || info.Rate > 192000 {
				return nil, info, fmt.Errorf("%w: %d channels at %d Hz", errNotWAV, info.Channels, info.Rate)
			}
			end := body + size
			if size == 0 || uint32(size) == math.MaxUint32 || end > len(b) || end < body {
				end = len(b)
			}
			return pcmMono(b[body:end], info.Channels), info, nil
		}
		if size < 0 || body+size < body {
			break
		}
		off = body + size + size&1 // chunks are padded to even sizes
	}
	return nil, info, fmt.Errorf("%w: no data chunk", errNotWAV)
}

// pcmMono decodes 16-bit little-endian interleaved samples, averaging the
// channels of each frame.
func pcmMono(b []byte, channels int) []int16 {
	if channels < 1 {
		channels = 1
	}
	frame := 2 * channels
	out := make([]int16, 0, len(b)/frame)
	for i := 0; i+frame <= len(b); i += frame {
		sum := 0
		for c := 0; c < channels; c++ {
			sum += int(int16(binary.LittleEndian.Uint16(b[i+2*c:])))
		}
		out = append(out, int16(sum/channels))
	}
	return out
}

// appendPCM appends samples as 16-bit little-endian PCM, the detector's
// and the stt tier's format.
func appendPCM(b []byte, pcm []int16) []byte {
	for _, s := range pcm {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

// resampleTaps is the half-width of the resampling filter in input
// samples at the lower of the two rates: 16 taps each side keep the
// passband flat to 3.4 kHz (the telephone band) and attenuate what would
// alias by more than 50 dB.
const resampleTaps = 16

// resample converts mono PCM from one rate to another with a
// Blackman-windowed sinc low-pass at 90% of the lower Nyquist frequency,
// so that 24 kHz speech taken down to the 8 kHz line does not fold its
// upper band into the voice, and 8 kHz line audio taken up to 16 kHz has
// no images above 4 kHz.
//
// The output positions fall on a few fractional offsets of the input
// that repeat (one for 24→8 kHz, two for 8→16 kHz, 160 for 22.05→8 kHz),
// so the filter is computed once per offset rather than per sample: a
// sentence of speech costs a dot product per output sample.
func resample(in []int16, from, to int) []int16 {
	if from == to || len(in) == 0 {
		return append([]int16(nil), in...)
	}
	ratio := float64(to) / float64(from)
	n := int(float64(len(in)) * ratio)
	out := make([]int16, n)
	fc := 0.45 * math.Min(1, ratio)                    // the cutoff as a fraction of the input rate
	half := float64(resampleTaps) / math.Min(1, ratio) // in input samples
	kernel := func(frac float64) (int, []float64) {
		lo := int(math.Ceil(frac - half))
		hi := int(math.Floor(frac + half))
		w := make([]float64, 0, hi-lo+1)
		for k := lo; k <= hi; k++ {
			x := float64(k) - frac
			w = append(w, 2*fc*sinc(2*fc*x)*blackman(x/half))
		}
		return lo, w
	}
	g := gcd(from, to)
	phases, step := to/g, from/g // every phases outputs, the input advances step samples
	type phase struct {
		lo int
		w  []float64
	}
	var table []phase
	if phases <= 1024 {
		table = make([]phase, phases)
		for p := range table {
			num := p * step // the offset is p*from/to = num/phases input samples
			lo, w := kernel(float64(num%phases) / float64(phases))
			table[p] = phase{lo + num/phases, w}
		}
	}
	for i := range out {
		var (
			base int
			ph   phase
		)
		if table != nil {
			base = (i / phases) * step
			ph = table[i%phases]
		} else {
			t := float64(i) / ratio
			base = int(math.Floor(t))
			ph.lo, ph.w = kernel(t - float64(base))
		}
		var acc, wsum float64
		for j, w := range ph.w {
			k := base + ph.lo + j
			if k < 0 || k >= len(in) {
				continue
			}
			acc += w * float64(in[k])
			wsum += w
		}
		if wsum != 0 {
			acc /= wsum // unity gain at the edges too
		}
		out[i] = clip16(acc)
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// blackman is the Blackman window on [-1, 1].
func blackman(u float64) float64 {
	if u <= -1 || u >= 1 {
		return 0
	}
	p := math.Pi * (u + 1) // 0..2π across the window
	return 0.42 - 0.5*math.Cos(p) + 0.08*math.Cos(2*p)
}

func clip16(v float64) int16 {
	switch {
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < math.MinInt16:
		return math.MinInt16
	}
	return int16(math.Round(v))
}
