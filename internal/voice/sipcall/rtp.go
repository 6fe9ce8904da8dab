package sipcall

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// rtpHeader is the fixed part of an RTP packet (RFC 3550 §5.1).
type rtpHeader struct {
	Marker      bool
	PayloadType uint8
	Seq         uint16
	Timestamp   uint32
	SSRC        uint32
}

// errNotRTP is a datagram that is not an RTP version 2 packet.
var errNotRTP = errors.New("not an RTP packet")

// parseRTP splits a datagram into its header and payload. CSRCs, a header
// extension and padding are skipped (RFC 3550 §5.1, §5.3.1); the payload
// aliases b.
func parseRTP(b []byte) (rtpHeader, []byte, error) {
	var h rtpHeader
	if len(b) < 12 {
		return h, nil, fmt.Errorf("%w: %d bytes is shorter than the 12-byte header", errNotRTP, len(b))
	}
	if v := b[0] >> 6; v != 2 {
		return h, nil, fmt.Errorf("%w: version %d", errNotRTP, v)
	}
	padding := b[0]&0x20 != 0
	extension := b[0]&0x10 != 0
	csrcs := int(b[0] & 0x0F)
	h.Marker = b[1]&0x80 != 0
	h.PayloadType = b[1] & 0x7F
	h.Seq = binary.BigEndian.Uint16(b[2:])
	h.Timestamp = binary.BigEndian.Uint32(b[4:])
	h.SSRC = binary.BigEndian.Uint32(b[8:])
	off := 12 + 4*csrcs
	if off > len(b) {
		return h, nil, fmt.Errorf("%w: %d CSRCs run past the end", errNotRTP, csrcs)
	}
	if extension {
		if off+4 > len(b) {
			return h, nil, fmt.Errorf("%w: truncated header extension", errNotRTP)
		}
		words := int(binary.BigEndian.Uint16(b[off+2:]))
		off += 4 + 4*words
		if off > len(b) {
			return h, nil, fmt.Errorf("%w: the header extension runs past the end", errNotRTP)
		}
	}
	end := len(b)
	if padding {
		n := int(b[end-1])
		if n == 0 || off+n > end {
			return h, nil, fmt.Errorf("%w: bad padding length %d", errNotRTP, n)
		}
		end -= n
	}
	return h, b[off:end], nil
}

// appendRTP appends a packet with header h and payload p to dst.
func appendRTP(dst []byte, h rtpHeader, p []byte) []byte {
	b1 := h.PayloadType & 0x7F
	if h.Marker {
		b1 |= 0x80
	}
	dst = append(dst, 0x80, b1)
	dst = binary.BigEndian.AppendUint16(dst, h.Seq)
	dst = binary.BigEndian.AppendUint32(dst, h.Timestamp)
	dst = binary.BigEndian.AppendUint32(dst, h.SSRC)
	return append(dst, p...)
}

// dtmfEvent is one RFC 4733 telephone-event payload (§2.3).
type dtmfEvent struct {
	Event    uint8
	End      bool
	Volume   uint8
	Duration uint16
}

// parseDTMF reads a telephone-event payload; only the first event of a
// redundant block is read (§2.5.1.3 allows several).
func parseDTMF(p []byte) (dtmfEvent, error) {
	if len(p) < 4 {
		return dtmfEvent{}, fmt.Errorf("a telephone-event payload is 4 bytes, got %d", len(p))
	}
	return dtmfEvent{Event: p[0], End: p[1]&0x80 != 0, Volume: p[1] & 0x3F, Duration: binary.BigEndian.Uint16(p[2:])}, nil
}

// digit names a DTMF event (RFC 4733 §3.2, Table 3): 0–9, *, #, A–D; 0
// for events that are not keys (flash, tones).
func (e dtmfEvent) digit() rune {
	switch {
	case e.Event <= 9:
		return rune('0' + e.Event)
	case e.Event == 10:
		return '*'
	case e.Event == 11:
		return '#'
	case e.Event >= 12 && e.Event <= 15:
		return rune('A' + e.Event - 12)
	}
	return 0
}
