package sipcall

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice"
	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// G.711 reference points (ITU-T G.711 tables) and the round trip: every
// code decodes to a value that encodes back to the same code, and linear
// samples survive within the law's quantisation step.
func TestG711(t *testing.T) {
	t.Parallel()
	if encodeULaw(0) != 0xFF || decodeULaw(0xFF) != 0 || encodeALaw(0) != 0xD5 || decodeALaw(0xD5) != 8 {
		t.Fatalf("zero: μ %#x %d, A %#x %d", encodeULaw(0), decodeULaw(0xFF), encodeALaw(0), decodeALaw(0xD5))
	}
	if decodeULaw(0x00) != -32124 || decodeULaw(0x80) != 32124 || decodeALaw(0x2A) != -32256 || decodeALaw(0xAA) != 32256 {
		t.Fatalf("extremes: %d %d %d %d", decodeULaw(0x00), decodeULaw(0x80), decodeALaw(0x2A), decodeALaw(0xAA))
	}
	for c := 0; c < 256; c++ {
		if u := decodeULaw(byte(c)); encodeULaw(u) != byte(c) && !(c == 0x7F && u == 0) {
			t.Errorf("μ-law %#x → %d → %#x", c, u, encodeULaw(u))
		}
		if a := decodeALaw(byte(c)); encodeALaw(a) != byte(c) {
			t.Errorf("A-law %#x → %d → %#x", c, a, encodeALaw(a))
		}
	}
	for _, codec := range []Codec{PCMU, PCMA} {
		for s := -32768; s <= 32767; s += 7 {
			got := codec.decode(nil, codec.encode(nil, []int16{int16(s)}))[0]
			// The step is 1/16 of the segment: relative error ≤ ~7%, and
			// small values are exact to a few units.
			if d := math.Abs(float64(got) - float64(s)); d > 16+0.07*math.Abs(float64(s)) {
				t.Fatalf("%s: %d → %d", codec, s, got)
			}
		}
	}
}

func TestRTPRoundTripAndMalformed(t *testing.T) {
	t.Parallel()
	h := rtpHeader{Marker: true, PayloadType: 8, Seq: 65535, Timestamp: 1 << 31, SSRC: 0xDEADBEEF}
	pkt := appendRTP(nil, h, []byte{1, 2, 3})
	got, p, err := parseRTP(pkt)
	if err != nil || got != h || !bytes.Equal(p, []byte{1, 2, 3}) {
		t.Fatalf("%+v %v %v", got, p, err)
	}
	// CSRCs, an extension and padding are skipped.
	x := []byte{0xB2, 0x00, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xAA, 0xAA, 0xAA, 0xAA, 0xBB, 0xBB, 0xBB, 0xBB,
		0xBE, 0xDE, 0, 1, 9, 9, 9, 9, 'h', 'i', 0, 0, 3}
	if _, p, err := parseRTP(x); err != nil || string(p) != "hi" {
		t.Fatalf("with CSRCs, extension, padding: %q %v", p, err)
	}
	for name, b := range map[string][]byte{
		"short":        pkt[:11],
		"version 1":    append([]byte{0x40}, pkt[1:]...),
		"csrc overrun": append([]byte{0x8F}, pkt[1:]...),
		"ext overrun":  {0x90, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0xBE, 0xDE, 0, 9},
		"zero padding": {0xA0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0},
		"pad overrun":  {0xA0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 9},
	} {
		if _, _, err := parseRTP(b); !errors.Is(err, errNotRTP) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDTMFEvents(t *testing.T) {
	t.Parallel()
	ev, err := parseDTMF([]byte{11, 0x80 | 10, 0x03, 0x20})
	if err != nil || ev.digit() != '#' || !ev.End || ev.Volume != 10 || ev.Duration != 800 {
		t.Fatalf("%+v %v", ev, err)
	}
	for e, want := range map[uint8]rune{0: '0', 9: '9', 10: '*', 12: 'A', 15: 'D', 16: 0, 255: 0} {
		if got := (dtmfEvent{Event: e}).digit(); got != want {
			t.Errorf("event %d: %q", e, got)
		}
	}
	if _, err := parseDTMF([]byte{1, 2, 3}); err == nil {
		t.Error("a short payload was read")
	}
}

func TestSDPOfferAndAnswers(t *testing.T) {
	t.Parallel()
	offer := string(buildOffer(netip.MustParseAddr("192.0.2.7"), 40000, 42))
	for _, want := range []string{"c=IN IP4 192.0.2.7\r\n", "m=audio 40000 RTP/AVP 0 8 101\r\n", "a=rtpmap:101 telephone-event/8000\r\n", "o=hestia 42 42 IN IP4"} {
		if !strings.Contains(offer, want) {
			t.Errorf("offer lacks %q:\n%s", want, offer)
		}
	}
	if v6 := string(buildOffer(netip.MustParseAddr("2001:db8::1"), 1, 1)); !strings.Contains(v6, "c=IN IP6 2001:db8::1") {
		t.Errorf("IPv6 offer:\n%s", v6)
	}
	for _, a := range []answer{{Codec: PCMA, PT: 8, DTMF: 96}, {Codec: PCMU, PT: 0, DTMF: -1}} {
		ans := buildAnswer(netip.MustParseAddr("192.0.2.7"), 40000, 42, 43, a)
		got, err := parseAnswer(ans)
		a.Addr = netip.MustParseAddrPort("192.0.2.7:40000")
		if err != nil || got != a || !strings.Contains(string(ans), "o=hestia 42 43 IN IP4") {
			t.Errorf("answer %+v round trip: %+v %v\n%s", a, got, err, ans)
		}
	}
	ok := []struct {
		name, sdp string
		want      answer
	}{
		{"baresip", "v=0\r\no=- 1 2 IN IP4 10.0.0.5\r\ns=-\r\nc=IN IP4 10.0.0.5\r\nt=0 0\r\nm=audio 20000 RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\n",
			answer{Addr: netip.MustParseAddrPort("10.0.0.5:20000"), Codec: PCMU, PT: 0, DTMF: 101}},
		{"alaw, media-level address, other dtmf type", "v=0\nc=IN IP4 1.1.1.1\nt=0 0\nm=audio 30000 RTP/AVP 8 96\nc=IN IP4 10.1.1.1\na=rtpmap:96 telephone-event/8000\n",
			answer{Addr: netip.MustParseAddrPort("10.1.1.1:30000"), Codec: PCMA, PT: 8, DTMF: 96}},
		{"no dtmf, static type without rtpmap", "v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 4000 RTP/AVP 0\r\n",
			answer{Addr: netip.MustParseAddrPort("10.0.0.1:4000"), Codec: PCMU, DTMF: -1}},
		{"rejected video first, then audio", "v=0\r\nc=IN IP4 10.0.0.1\r\nm=video 0 RTP/AVP 96\r\nm=audio 5000 RTP/AVP 8\r\n",
			answer{Addr: netip.MustParseAddrPort("10.0.0.1:5000"), Codec: PCMA, PT: 8, DTMF: -1}},
		{"dynamic pcmu", "v=0\r\nc=IN IP6 2001:db8::2\r\nm=audio 5000 RTP/AVP 97\r\na=rtpmap:97 PCMU/8000\r\n",
			answer{Addr: netip.MustParseAddrPort("[2001:db8::2]:5000"), Codec: PCMU, PT: 97, DTMF: -1}},
	}
	for _, tc := range ok {
		got, err := parseAnswer([]byte(tc.sdp))
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v %v", tc.name, got, err)
		}
	}
	bad := map[string]string{
		"empty":          "",
		"rejected audio": "v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 0 RTP/AVP 0\r\n",
		"only opus":      "v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 5000 RTP/AVP 111\r\na=rtpmap:111 opus/48000/2\r\n",
		"srtp":           "v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 5000 RTP/SAVP 0\r\n",
		"no address":     "v=0\r\nm=audio 5000 RTP/AVP 0\r\n",
		"host name":      "v=0\r\nc=IN IP4 pbx.example\r\nm=audio 5000 RTP/AVP 0\r\n",
		"bad port":       "v=0\r\nc=IN IP4 10.0.0.1\r\nm=audio 99999 RTP/AVP 0\r\n",
		"huge":           "v=0\r\n" + strings.Repeat("a=x\r\n", 5000),
	}
	for name, sdp := range bad {
		if got, err := parseAnswer([]byte(sdp)); !errors.Is(err, errNoMedia) {
			t.Errorf("%s: %+v %v", name, got, err)
		}
	}
}

func TestWAV(t *testing.T) {
	t.Parallel()
	pcm := []int16{0, 1000, -1000, 32767, -32768}
	got, info, err := parseWAV(siptest.WAV(pcm, 16000))
	if err != nil || info.Rate != 16000 || info.Channels != 1 || !equal16(got, pcm) {
		t.Fatalf("%v %+v %v", got, info, err)
	}
	// Stereo with an extra chunk before data and an odd-sized chunk's pad.
	var b bytes.Buffer
	b.WriteString("RIFF\x00\x00\x00\x00WAVE")
	b.WriteString("LIST")
	binary.Write(&b, binary.LittleEndian, uint32(3))
	b.WriteString("abc\x00")
	b.WriteString("fmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(2), uint32(24000), uint32(96000), uint16(4), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(0xFFFFFFFF)) // streamed: size unknown
	for _, v := range []int16{100, 300, -50, -150} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	got, info, err = parseWAV(b.Bytes())
	if err != nil || info.Rate != 24000 || info.Channels != 2 || !equal16(got, []int16{200, -100}) {
		t.Fatalf("stereo: %v %+v %v", got, info, err)
	}
	for name, data := range map[string][]byte{
		"not riff":  []byte("OggS\x00\x02"),
		"no data":   siptest.WAV(nil, 8000)[:36],
		"float":     bytes.Replace(siptest.WAV(pcm, 8000), []byte{1, 0, 1, 0}, []byte{3, 0, 1, 0}, 1),
		"8-bit":     bytes.Replace(siptest.WAV(pcm, 8000), []byte{2, 0, 16, 0}, []byte{1, 0, 8, 0}, 1),
		"zero rate": bytes.Replace(siptest.WAV(pcm, 8000), []byte{0x40, 0x1F, 0, 0}, []byte{0, 0, 0, 0}, 1),
	} {
		if _, _, err := parseWAV(data); !errors.Is(err, errNotWAV) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func equal16(a, b []int16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// level is the RMS of pcm relative to a full-scale sine, in dB.
func level(pcm []int16) float64 {
	return voice.Level(appendPCM(nil, pcm)) + 3.01
}

// Resampling keeps the voice band and removes what would alias: a 1 kHz
// tone taken from 24 kHz to the 8 kHz line keeps its level, a 10 kHz tone
// (which would fold to 2 kHz) is gone; 8 → 16 kHz keeps a 1 kHz tone.
func TestResample(t *testing.T) {
	t.Parallel()
	in := siptest.Tone(1000, 16000, time.Second, 24000)
	out := resample(in, 24000, 8000)
	if len(out) != 8000 {
		t.Fatalf("%d samples", len(out))
	}
	if l := level(out[400:7600]) - level(in); math.Abs(l) > 0.5 {
		t.Errorf("1 kHz changed by %.2f dB", l)
	}
	alias := resample(siptest.Tone(10000, 16000, time.Second, 24000), 24000, 8000)
	if l := level(alias[400:7600]) - level(in); l > -40 {
		t.Errorf("10 kHz leaks into the line at %.1f dB", l)
	}
	up := resample(siptest.Tone(1000, 16000, time.Second, 8000), 8000, 16000)
	if len(up) != 16000 || math.Abs(level(up[800:15200])-level(in)) > 0.5 {
		t.Errorf("8→16 kHz: %d samples, %.2f dB", len(up), level(up[800:15200])-level(in))
	}
	for _, from := range []int{22050, 44100, 7919} { // 160 and 80 filter phases, and a rate with none to share
		in := siptest.Tone(1000, 16000, time.Second, from)
		out := resample(in, from, 8000)
		if len(out) != 8000 || math.Abs(level(out[400:7600])-level(in)) > 0.5 {
			t.Errorf("%d → 8000 Hz: %d samples, %.2f dB", from, len(out), level(out[400:7600])-level(in))
		}
	}
	if got := resample(nil, 24000, 8000); len(got) != 0 {
		t.Errorf("empty: %v", got)
	}
	var u upsampler
	if got := u.up([]int16{100, 200}); !equal16(got, []int16{50, 100, 150, 200}) {
		t.Errorf("upsampler %v", got)
	}
	if got := u.up([]int16{0}); !equal16(got, []int16{100, 0}) {
		t.Errorf("the upsampler lost its state across frames: %v", got)
	}
}

// The detector as a call configures it finds a spoken phrase between
// quiet stretches of line noise (with its start kept), ignores a click
// and a short blip, and closes a phrase that goes on without a long
// enough pause at the maximum length.
func TestVAD(t *testing.T) {
	t.Parallel()
	run := func(cfg voice.VADConfig, pcm []int16) (utts [][]byte) {
		c := Config{VAD: cfg}
		c.defaults()
		v := voice.NewVAD(c.VAD)
		now := time.Unix(0, 0)
		for i := 0; i+2*frameLen <= len(pcm); i += 2 * frameLen { // 20 ms at 16 kHz
			now = now.Add(20 * time.Millisecond)
			for _, ev := range v.Push(now, appendPCM(nil, pcm[i:i+2*frameLen])) {
				if ev.Kind == voice.VADEnd {
					utts = append(utts, ev.PCM)
				}
			}
		}
		return utts
	}
	cat := func(parts ...[]int16) (out []int16) {
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	noise := func(d time.Duration) []int16 {
		return siptest.Tone(3000, 40, d, speechRate) // -58 dBFS hum
	}
	phrase := siptest.Speechlike(1200*time.Millisecond, speechRate)
	utts := run(voice.VADConfig{}, cat(noise(time.Second), phrase, noise(1500*time.Millisecond)))
	if len(utts) != 1 {
		t.Fatalf("%d utterances", len(utts))
	}
	if d := time.Duration(len(utts[0])/2) * time.Second / speechRate; d < 1200*time.Millisecond || d > 2200*time.Millisecond {
		t.Errorf("utterance of %s for a 1.2 s phrase", d)
	}
	click := siptest.Speechlike(40*time.Millisecond, speechRate)
	if utts := run(voice.VADConfig{}, cat(noise(time.Second), click, noise(time.Second), siptest.Speechlike(200*time.Millisecond, speechRate), noise(time.Second))); len(utts) != 0 {
		t.Errorf("a click and a short blip made %d utterances", len(utts))
	}
	// Five seconds of phrases with short pauses between them (shorter
	// than the end of speech) make utterances of two seconds at most.
	var talk []int16
	for range 5 {
		talk = cat(talk, siptest.Speechlike(900*time.Millisecond, speechRate), noise(100*time.Millisecond))
	}
	long := run(voice.VADConfig{MaxUtterance: 2 * time.Second}, cat(noise(500*time.Millisecond), talk))
	if len(long) != 2 {
		t.Errorf("5 s of speech with a 2 s maximum made %d utterances", len(long))
	}
}

// Replies are spoken sentence by sentence as they stream, short ones kept
// with the next, Markdown read as words.
func TestSentences(t *testing.T) {
	t.Parallel()
	s := voice.Splitter{MinLen: minSentence}
	var got []string
	for _, d := range []string{"Ok. It costs 3.50 eur", "os. The **train** leaves at 9", ":15.\nNext, see [the page](https://x.y/z) and `snake_case`", " *ok*"} {
		got = append(got, spoken(s.Push(d))...)
	}
	got = append(got, spoken([]string{s.Flush()})...)
	want := []string{"Ok. It costs 3.50 euros.", "The train leaves at 9:15.", "Next, see the page and snake_case ok"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("%q", got)
	}
	if got := spoken([]string{s.Flush()}); len(got) != 0 {
		t.Errorf("flushed twice: %q", got)
	}
}

func TestClassifyStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code       int
		challenged bool
		want       Outcome
	}{
		{486, false, Busy}, {600, false, Busy}, {603, false, Rejected}, {403, false, Rejected}, {403, true, AuthFailed},
		{401, true, AuthFailed}, {407, false, AuthFailed}, {404, false, Unreachable}, {503, false, Unreachable},
		{480, false, NoAnswer}, {408, false, NoAnswer}, {487, false, NoAnswer}, {488, false, MediaError}, {415, false, Rejected},
	} {
		if got := classifyStatus(tc.code, tc.challenged); got != tc.want {
			t.Errorf("%d (challenged %v): %s, want %s", tc.code, tc.challenged, got, tc.want)
		}
	}
	r := Result{To: "+39 347", Outcome: Answered, Duration: 95 * time.Second}
	if s := r.Summary(); s != "📞 Call to +39 347: answered, 1m35s." {
		t.Errorf("%q", s)
	}
	r = Result{To: "100", Outcome: Busy, Status: 486, Reason: "Busy Here"}
	if s := r.Summary(); s != "📞 Call to 100: busy (Busy Here)." {
		t.Errorf("%q", s)
	}
}

// Bad account settings are refused when the user agent is built.
func TestNewRefusesBadAddresses(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no number":       {Registrar: "sip:pbx.example"},
		"number, no host": {To: "+393471234567"},
		"bad registrar":   {Registrar: "pbx example", To: "100"},
		"bad target uri":  {To: "sip:"},
		"bad transport":   {To: "sip:a@127.0.0.1", Transport: "sctp"},
		"bad from":        {To: "sip:a@127.0.0.1", From: "sip:"},
	} {
		if m, err := New(cfg, Deps{}); err == nil {
			m.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// Strict RTP: audio and keys from a source the phone did not announce are
// dropped, the first packet from the announced port latches the stream,
// and after that only that source is heard.
func TestMediaHearsOnlyThePhone(t *testing.T) {
	t.Parallel()
	m, err := openMedia(netip.MustParseAddr("127.0.0.1"), 0, 0, slogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	phone, stranger := listenLoopback(t, 0), listenLoopback(t, 0)
	// The SDP names a public address with the phone's port: the phone's
	// packets come from 127.0.0.1 on that port (another interface).
	announced := netip.AddrPortFrom(netip.MustParseAddr("203.0.113.5"), uint16(phone.LocalAddr().(*net.UDPAddr).Port))
	var mu sync.Mutex
	var audio int
	var digits []rune
	m.startMedia(answer{Addr: announced, Codec: PCMU, PT: 0, DTMF: 101},
		func([]int16) { mu.Lock(); audio++; mu.Unlock() },
		func(d rune) { mu.Lock(); digits = append(digits, d); mu.Unlock() })
	to := net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(m.port())))
	send := func(c *net.UDPConn, pt uint8, ts uint32, payload []byte) {
		t.Helper()
		if _, err := c.WriteToUDP(appendRTP(nil, rtpHeader{PayloadType: pt, Seq: uint16(ts), Timestamp: ts, SSRC: 9}, payload), to); err != nil {
			t.Fatal(err)
		}
	}
	count := func() (int, string) { mu.Lock(); defer mu.Unlock(); return audio, string(digits) }
	send(stranger, 101, 100, []byte{1, 0x80, 0, 160})
	send(stranger, 0, 160, make([]byte, 160))
	time.Sleep(100 * time.Millisecond)
	if a, d := count(); a != 0 || d != "" {
		t.Fatalf("a stranger was heard: %d frames, keys %q", a, d)
	}
	send(phone, 0, 320, make([]byte, 160))
	send(phone, 101, 480, []byte{2, 0x80, 0, 160})
	send(phone, 101, 480, []byte{2, 0x80, 0, 160}) // the end packet, repeated
	send(stranger, 101, 640, []byte{1, 0x80, 0, 160})
	if !siptest.WaitFor(context.Background(), 2*time.Second, func() bool { a, d := count(); return a == 1 && d == "2" }) {
		a, d := count()
		t.Fatalf("heard %d frames and keys %q, want 1 and \"2\"", a, d)
	}
	time.Sleep(100 * time.Millisecond)
	if _, d := count(); d != "2" {
		t.Fatalf("keys %q after the stream latched", d)
	}
	m.mu.Lock()
	remote := m.remote
	m.mu.Unlock()
	if remote.Port() != announced.Port() || !remote.Addr().IsLoopback() {
		t.Errorf("sending to %s, not where the phone's audio comes from", remote)
	}
}

func listenLoopback(t *testing.T, port int) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }
