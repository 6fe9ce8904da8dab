package sipcall

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// The call's session description (SDP, RFC 8866) in the offer/answer model
// (RFC 3264): Hestia offers one audio stream with PCMU, PCMA and
// telephone-event (RFC 4733) and reads back which the phone accepted and
// where to send.

// dtmfPayloadType is the dynamic payload type offered for telephone-event;
// the answer may name another, which is then used.
const dtmfPayloadType = 101

// buildOffer is the SDP offer for an audio stream at addr:port. id is the
// session id of the o= line (RFC 8866 §5.2).
func buildOffer(addr netip.Addr, port int, id uint64) []byte {
	ipv := "IP4"
	if addr.Is6() && !addr.Is4In6() {
		ipv = "IP6"
	}
	a := addr.Unmap().String()
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\n")
	fmt.Fprintf(&b, "o=hestia %d %d IN %s %s\r\n", id, id, ipv, a)
	fmt.Fprintf(&b, "s=Hestia\r\n")
	fmt.Fprintf(&b, "c=IN %s %s\r\n", ipv, a)
	fmt.Fprintf(&b, "t=0 0\r\n")
	fmt.Fprintf(&b, "m=audio %d RTP/AVP %d %d %d\r\n", port, PCMU, PCMA, dtmfPayloadType)
	fmt.Fprintf(&b, "a=rtpmap:0 PCMU/8000\r\n")
	fmt.Fprintf(&b, "a=rtpmap:8 PCMA/8000\r\n")
	fmt.Fprintf(&b, "a=rtpmap:%d telephone-event/8000\r\n", dtmfPayloadType)
	fmt.Fprintf(&b, "a=fmtp:%d 0-15\r\n", dtmfPayloadType)
	fmt.Fprintf(&b, "a=ptime:20\r\n")
	fmt.Fprintf(&b, "a=sendrecv\r\n")
	return []byte(b.String())
}

// buildAnswer is Hestia's SDP answer to an offer made within the call (a
// re-INVITE: a session refresh, a changed address): the audio format and
// telephone-event type already in use, at addr:port. version is the o=
// line's session version, higher than the offer's (RFC 3264 §8).
func buildAnswer(addr netip.Addr, port int, id, version uint64, a answer) []byte {
	ipv := "IP4"
	if addr.Is6() && !addr.Is4In6() {
		ipv = "IP6"
	}
	ip := addr.Unmap().String()
	name := "PCMU"
	if a.Codec == PCMA {
		name = "PCMA"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\n")
	fmt.Fprintf(&b, "o=hestia %d %d IN %s %s\r\n", id, version, ipv, ip)
	fmt.Fprintf(&b, "s=Hestia\r\n")
	fmt.Fprintf(&b, "c=IN %s %s\r\n", ipv, ip)
	fmt.Fprintf(&b, "t=0 0\r\n")
	if a.DTMF >= 0 {
		fmt.Fprintf(&b, "m=audio %d RTP/AVP %d %d\r\n", port, a.PT, a.DTMF)
		fmt.Fprintf(&b, "a=rtpmap:%d %s/8000\r\n", a.PT, name)
		fmt.Fprintf(&b, "a=rtpmap:%d telephone-event/8000\r\n", a.DTMF)
		fmt.Fprintf(&b, "a=fmtp:%d 0-15\r\n", a.DTMF)
	} else {
		fmt.Fprintf(&b, "m=audio %d RTP/AVP %d\r\n", port, a.PT)
		fmt.Fprintf(&b, "a=rtpmap:%d %s/8000\r\n", a.PT, name)
	}
	fmt.Fprintf(&b, "a=ptime:20\r\n")
	fmt.Fprintf(&b, "a=sendrecv\r\n")
	return []byte(b.String())
}

// answer is what the phone's SDP answer settles.
type answer struct {
	Addr  netip.AddrPort // where to send RTP
	Codec Codec
	// PT is the payload type the codec was answered with (0 or 8, or a
	// dynamic one bound by rtpmap).
	PT uint8
	// DTMF is the telephone-event payload type, or -1 when the phone
	// accepted none (digits then cannot be read).
	DTMF int
}

// errNoMedia is an answer that leaves no usable audio stream: a call with
// it is a media_error.
var errNoMedia = errors.New("the answer has no usable audio stream")

// maxSDP bounds the description read; real ones are well under 2 KiB.
const maxSDP = 16 << 10

// parseAnswer reads an SDP answer: the first audio stream with a non-zero
// port, its connection address (media level over session level), and the
// first of its formats that is PCMU or PCMA, by static payload type or by
// rtpmap name (RFC 3551 §6).
func parseAnswer(body []byte) (answer, error) {
	if len(body) > maxSDP {
		return answer{}, fmt.Errorf("%w: the description is %d bytes", errNoMedia, len(body))
	}
	var (
		sessionAddr, mediaAddr string
		inAudio, done          bool
		beforeMedia            = true
		port                   int
		formats                []int
		rtpmap                 = map[int]string{}
	)
	for _, line := range strings.Split(string(body), "\n") {
		line = strings.TrimRight(line, "\r")
		if len(line) < 2 || line[1] != '=' {
			continue
		}
		typ, val := line[0], line[2:]
		switch typ {
		case 'm':
			beforeMedia = false
			if inAudio {
				done = true // only the first audio stream counts
			}
			if done {
				continue
			}
			f := strings.Fields(val)
			if len(f) < 4 || f[0] != "audio" {
				inAudio = false
				continue
			}
			p, err := strconv.Atoi(strings.SplitN(f[1], "/", 2)[0])
			if err != nil || p < 0 || p > 65535 {
				return answer{}, fmt.Errorf("%w: bad port %q", errNoMedia, f[1])
			}
			if p == 0 {
				continue // a rejected stream (RFC 3264 §6)
			}
			if !strings.HasPrefix(f[2], "RTP/AVP") {
				return answer{}, fmt.Errorf("%w: profile %s (only plain RTP/AVP is spoken)", errNoMedia, f[2])
			}
			inAudio, port = true, p
			mediaAddr = ""
			for _, s := range f[3:] {
				if pt, err := strconv.Atoi(s); err == nil && pt >= 0 && pt < 128 {
					formats = append(formats, pt)
				}
			}
		case 'c':
			if done {
				continue
			}
			f := strings.Fields(val)
			if len(f) < 3 || f[0] != "IN" {
				continue
			}
			host := strings.SplitN(f[2], "/", 2)[0] // drop a multicast TTL
			if beforeMedia {
				sessionAddr = host
			} else if inAudio {
				mediaAddr = host
			}
		case 'a':
			if !inAudio || done {
				continue
			}
			if rest, ok := strings.CutPrefix(val, "rtpmap:"); ok {
				pt, enc, ok := strings.Cut(rest, " ")
				n, err := strconv.Atoi(pt)
				if ok && err == nil && n >= 0 && n < 128 {
					rtpmap[n] = strings.ToLower(strings.TrimSpace(enc))
				}
			}
		}
	}
	if port == 0 {
		return answer{}, errNoMedia
	}
	host := mediaAddr
	if host == "" {
		host = sessionAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return answer{}, fmt.Errorf("%w: connection address %q is not an IP address", errNoMedia, host)
	}
	out := answer{Addr: netip.AddrPortFrom(ip, uint16(port)), Codec: -1, DTMF: -1}
	for _, pt := range formats {
		name := rtpmap[pt]
		switch {
		case out.Codec < 0 && (name == "pcmu/8000" || name == "pcmu/8000/1" || name == "" && pt == 0):
			out.Codec, out.PT = PCMU, uint8(pt)
		case out.Codec < 0 && (name == "pcma/8000" || name == "pcma/8000/1" || name == "" && pt == 8):
			out.Codec, out.PT = PCMA, uint8(pt)
		case out.DTMF < 0 && strings.HasPrefix(name, "telephone-event/8000"):
			out.DTMF = pt
		}
	}
	if out.Codec < 0 {
		return answer{}, fmt.Errorf("%w: none of PCMU or PCMA was accepted (formats %v)", errNoMedia, formats)
	}
	return out, nil
}
