package sipcall

import (
	"testing"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// The parsers read what the network and the speech endpoint send; none
// may panic or read out of bounds, and what they accept is consistent.
// Seeds are in testdata/fuzz.

func FuzzParseRTP(f *testing.F) {
	f.Add(appendRTP(nil, rtpHeader{PayloadType: 0, Seq: 1, Timestamp: 160, SSRC: 7}, make([]byte, 160)))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, p, err := parseRTP(b)
		if err != nil {
			return
		}
		if len(p) > len(b)-12 || h.PayloadType > 127 {
			t.Fatalf("payload %d of %d bytes, type %d", len(p), len(b), h.PayloadType)
		}
		if h.PayloadType == dtmfPayloadType {
			if ev, err := parseDTMF(p); err == nil && ev.Volume > 63 {
				t.Fatalf("volume %d", ev.Volume)
			}
		}
	})
}

func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte("v=0\r\nc=IN IP4 10.0.0.5\r\nm=audio 20000 RTP/AVP 0 101\r\na=rtpmap:101 telephone-event/8000\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := parseAnswer(b)
		if err != nil {
			return
		}
		if !a.Addr.IsValid() || a.Addr.Port() == 0 || (a.Codec != PCMU && a.Codec != PCMA) || a.PT > 127 || a.DTMF > 127 {
			t.Fatalf("accepted %+v", a)
		}
	})
}

func FuzzParseWAV(f *testing.F) {
	f.Add(siptest.WAV([]int16{1, -1, 300}, 24000))
	f.Fuzz(func(t *testing.T, b []byte) {
		pcm, info, err := parseWAV(b)
		if err != nil {
			return
		}
		if info.Rate < 4000 || info.Rate > 192000 || info.Channels < 1 || len(pcm) > len(b)/2 {
			t.Fatalf("accepted %+v with %d samples from %d bytes", info, len(pcm), len(b))
		}
		// What a call would do with it must not panic either.
		if len(pcm) < 1<<16 {
			_ = resample(pcm, info.Rate, lineRate)
		}
	})
}

// FuzzCallerID reads what a caller writes in P-Asserted-Identity and
// From: a user part, and the number compared, never longer than what it
// came from, and normalising is stable (a number is compared once).
func FuzzCallerID(f *testing.F) {
	f.Add(`"Owner" <sip:+393471234567@p.example;user=phone>, <tel:+39-347-1234567>`)
	f.Add("sip:%2B0039 347;phone-context=x@h")
	f.Fuzz(func(t *testing.T, v string) {
		u := uriUser(v)
		if len(u) > len(v) {
			t.Fatalf("user %q from %q", u, v)
		}
		n := normNumber(u)
		if len(n) > len(u) {
			t.Fatalf("number %q from %q", n, u)
		}
		var p inboundPolicy
		_ = p.init(&Config{Inbound: true, PIN: "1234", InboundNumbers: []string{v}}, siptestTarget())
	})
}
