package sipcall

// G.711 (ITU-T Recommendation G.711, 1988): 8-bit logarithmic companding of
// 16-bit linear PCM at 8 kHz, μ-law (PCMU, RTP payload type 0, RFC 3551
// §4.5.14) and A-law (PCMA, payload type 8). Both are computed here rather
// than from 64 KiB tables: encoding 160 samples every 20 ms costs nothing
// either way, and the segment search reads as the recommendation does.

// ulawBias is added to the magnitude before the segment search so that the
// segment boundaries fall on powers of two (G.711 Table 2a).
const (
	ulawBias = 0x84
	ulawClip = 32635
)

// encodeULaw compresses one linear sample to μ-law.
func encodeULaw(s int16) byte {
	v := int(s)
	sign := 0
	if v < 0 {
		v, sign = -v, 0x80
	}
	if v > ulawClip {
		v = ulawClip
	}
	v += ulawBias
	// The exponent is the position of the highest set bit above bit 7.
	exp := 7
	for mask := 0x4000; v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := (v >> (exp + 3)) & 0x0F
	// Every bit is inverted on the line (G.711 §3.2).
	return ^byte(sign | exp<<4 | mant)
}

// decodeULaw expands one μ-law byte to linear PCM.
func decodeULaw(u byte) int16 {
	u = ^u
	exp := int(u>>4) & 0x07
	mant := int(u & 0x0F)
	v := ((mant << 3) + ulawBias) << exp
	v -= ulawBias
	if u&0x80 != 0 {
		return int16(-v)
	}
	return int16(v)
}

// encodeALaw compresses one linear sample to A-law.
func encodeALaw(s int16) byte {
	v := int(s) >> 3 // A-law works on 13 bits
	mask := byte(0xD5)
	if v < 0 {
		mask = 0x55
		v = -v - 1
	}
	// Segment n holds 13-bit magnitudes up to (0x20<<n)-1.
	seg := 0
	for seg < 8 && v > (0x20<<seg)-1 {
		seg++
	}
	if seg >= 8 {
		return 0x7F ^ mask
	}
	a := byte(seg << 4)
	if seg < 2 {
		a |= byte(v>>1) & 0x0F
	} else {
		a |= byte(v>>seg) & 0x0F
	}
	// Even bits are inverted on the line (G.711 §3.3), the sign by mask.
	return a ^ mask
}

// decodeALaw expands one A-law byte to linear PCM.
func decodeALaw(a byte) int16 {
	a ^= 0x55
	t := int(a&0x0F) << 4
	switch seg := int(a&0x70) >> 4; seg {
	case 0:
		t += 8
	case 1:
		t += 0x108
	default:
		t += 0x108
		t <<= seg - 1
	}
	if a&0x80 != 0 {
		return int16(t)
	}
	return int16(-t)
}

// Codec is a negotiated audio payload format.
type Codec int

// The codecs a call can use: G.711 only, which every SIP provider, PBX and
// phone supports.
const (
	PCMU Codec = 0 // RTP payload type 0
	PCMA Codec = 8 // RTP payload type 8
)

func (c Codec) String() string {
	if c == PCMA {
		return "PCMA"
	}
	return "PCMU"
}

// encode appends the G.711 bytes of pcm to dst.
func (c Codec) encode(dst []byte, pcm []int16) []byte {
	for _, s := range pcm {
		if c == PCMA {
			dst = append(dst, encodeALaw(s))
		} else {
			dst = append(dst, encodeULaw(s))
		}
	}
	return dst
}

// decode appends the linear samples of payload to dst.
func (c Codec) decode(dst []int16, payload []byte) []int16 {
	for _, b := range payload {
		if c == PCMA {
			dst = append(dst, decodeALaw(b))
		} else {
			dst = append(dst, decodeULaw(b))
		}
	}
	return dst
}
