// Package siptest holds the far ends a SIP call is tested against on
// loopback: Phone runs Debian's baresip as the user's phone (answering by
// itself, playing a WAV as the user's voice, recording what it hears, and
// pressing keys on command through its ctrl_tcp module); Peer is an
// in-process SIP endpoint built on sipgo that answers as a test needs
// (busy, never answering, answering and then going quiet, or a registrar
// refusing the credentials) and that places calls itself (Peer.Call: the
// owner's phone calling Hestia, or a stranger pretending to be it, pressing
// keys and speaking on command, its line echoing what it hears if asked,
// and noting when it heard audio); Speech fakes the OpenAI-compatible stt
// and tts endpoints and keeps what it was given to transcribe.
package siptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// PhoneOptions configure a baresip phone.
type PhoneOptions struct {
	// AutoAnswer picks up by itself; without it the phone rings until
	// the caller gives up.
	AutoAnswer bool
	// Voice is 8 kHz mono audio the phone plays into the call once it
	// is answered (silence when nil), as if the user spoke it.
	Voice []int16
	// Transport is udp (default) or tcp.
	Transport string
	// User is the phone's user part, what it calls from (default
	// "phone"; a number such as "+393471234567" for inbound tests).
	User string
}

// Phone is a running baresip.
type Phone struct {
	// URI is the address to call ("sip:phone@127.0.0.1:PORT").
	URI string
	dir string
	rec string
	ctl string
	cmd *exec.Cmd
	out *lockedBuffer
}

// NeedBaresip skips the test when baresip is not installed, or fails it
// when HESTIA_REQUIRE_SERVICES=1 (CI, where it must be there).
func NeedBaresip(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("baresip"); err != nil {
		if os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
			t.Fatal("baresip is required (HESTIA_REQUIRE_SERVICES=1) but not installed: apt-get install baresip-core")
		}
		t.Skip("baresip is not installed (apt-get install baresip-core): the SIP call tests need it as the phone")
	}
}

// StartPhone runs baresip with its own configuration in a temporary
// folder and waits until it is ready; it is stopped at the test's end.
func StartPhone(t testing.TB, o PhoneOptions) *Phone {
	t.Helper()
	NeedBaresip(t)
	if o.Transport == "" {
		o.Transport = "udp"
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	if err := os.Mkdir(rec, 0o700); err != nil {
		t.Fatal(err)
	}
	// The voice is padded with silence: baresip's file source ends the
	// audio stream at the end of the file.
	voice := append(append(make([]int16, 0, len(o.Voice)+8000*120), o.Voice...), make([]int16, 8000*120)...)
	wav := filepath.Join(dir, "voice.wav")
	if err := os.WriteFile(wav, WAV(voice, 8000), 0o600); err != nil {
		t.Fatal(err)
	}
	sipPort, ctlPort := freePort(t, o.Transport), freePort(t, "tcp")
	rtpLo := 20000 + (sipPort % 400 * 100)
	conf := fmt.Sprintf(`poll_method epoll
sip_listen 127.0.0.1:%d
audio_player aubridge,nowhere
audio_alert aubridge,nowhere
audio_source aufile,%s
ausrc_srate 8000
auplay_srate 8000
ausrc_channels 1
auplay_channels 1
rtp_ports %d-%d
module_path /usr/lib/baresip/modules
module g711.so
module aufile.so
module aubridge.so
module sndfile.so
module_app account.so
module_app menu.so
module_app ctrl_tcp.so
snd_path %s
ctrl_tcp_listen 127.0.0.1:%d
`, sipPort, wav, rtpLo, rtpLo+99, rec, ctlPort)
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	answer := "manual"
	if o.AutoAnswer {
		answer = "auto"
	}
	if o.User == "" {
		o.User = "phone"
	}
	acct := fmt.Sprintf("<sip:%s@127.0.0.1;transport=%s>;regint=0;answermode=%s;audio_codecs=PCMU,PCMA\n", o.User, o.Transport, answer)
	if err := os.WriteFile(filepath.Join(dir, "accounts"), []byte(acct), 0o600); err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	cmd := exec.Command("baresip", "-f", dir)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting baresip: %v", err)
	}
	p := &Phone{URI: fmt.Sprintf("sip:%s@127.0.0.1:%d", o.User, sipPort), dir: dir, rec: rec, ctl: net.JoinHostPort("127.0.0.1", strconv.Itoa(ctlPort)), cmd: cmd, out: out}
	if o.Transport != "udp" {
		p.URI += ";transport=" + o.Transport
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("baresip output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "baresip is ready") {
		if time.Now().After(deadline) {
			t.Fatalf("baresip did not start within 30 s:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

// Output is what baresip printed so far.
func (p *Phone) Output() string { return p.out.String() }

// Command sends a command to baresip's ctrl_tcp module (netstring-framed
// JSON) and returns its response text.
func (p *Phone) Command(command, params string) (string, error) {
	c, err := net.DialTimeout("tcp", p.ctl, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	body, _ := json.Marshal(map[string]string{"command": command, "params": params, "token": "t"})
	if _, err := fmt.Fprintf(c, "%d:%s,", len(body), body); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	for {
		n, err := r.ReadString(':')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(n, ":")))
		if err != nil {
			return "", fmt.Errorf("bad netstring length %q", n)
		}
		msg := make([]byte, size+1)
		if _, err := io.ReadFull(r, msg); err != nil {
			return "", err
		}
		var resp struct {
			Response bool   `json:"response"`
			OK       bool   `json:"ok"`
			Data     string `json:"data"`
			Token    string `json:"token"`
		}
		if json.Unmarshal(msg[:size], &resp) == nil && resp.Response {
			if !resp.OK {
				return resp.Data, fmt.Errorf("baresip refused %s: %s", command, resp.Data)
			}
			return resp.Data, nil
		}
		// an event, not our response: keep reading
	}
}

// Press sends a DTMF key during the call (as RFC 4733 telephone-events).
func (p *Phone) Press(key rune) error {
	_, err := p.Command("sndcode", string(key))
	return err
}

// Dial calls uri from the phone (Hestia, for an inbound call).
func (p *Phone) Dial(uri string) error {
	_, err := p.Command("dial", uri)
	return err
}

// Hangup ends the call from the phone.
func (p *Phone) Hangup() error {
	_, err := p.Command("hangup", "")
	return err
}

// Heard returns what the phone received in its last call (decoded, 8 kHz
// mono), as baresip's sndfile module recorded it; empty before a call.
func (p *Phone) Heard() []int16 { return p.dump("dec") }

// Said returns what the phone sent in its last call, on the same time
// line as Heard (both recordings start when the call is set up).
func (p *Phone) Said() []int16 { return p.dump("enc") }

func (p *Phone) dump(which string) []int16 {
	m, _ := filepath.Glob(filepath.Join(p.rec, "dump-*-"+which+".wav"))
	if len(m) == 0 {
		return nil
	}
	b, err := os.ReadFile(m[len(m)-1])
	if err != nil || len(b) < 44 {
		return nil
	}
	// sndfile writes a canonical 44-byte header; the data size may not be
	// final while the call runs, so read to the end.
	b = b[44:]
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// Onsets lists when audio starts after a silence of at least gap: the
// start of each stretch of 20 ms frames louder than -40 dBFS.
func Onsets(pcm []int16, rate int, gap time.Duration) []time.Duration {
	n := rate / 50
	var out []time.Duration
	quiet := gap
	for i := 0; i+n <= len(pcm); i += n {
		if loud(pcm[i : i+n]) {
			if quiet >= gap {
				out = append(out, time.Duration(i)*time.Second/time.Duration(rate))
			}
			quiet = 0
		} else {
			quiet += 20 * time.Millisecond
		}
	}
	return out
}

// Ends lists when audio stops for at least gap.
func Ends(pcm []int16, rate int, gap time.Duration) []time.Duration {
	n := rate / 50
	var out []time.Duration
	var last time.Duration = -1
	for i := 0; i+n <= len(pcm); i += n {
		at := time.Duration(i) * time.Second / time.Duration(rate)
		if loud(pcm[i : i+n]) {
			last = at + 20*time.Millisecond
		} else if last >= 0 && at-last >= gap {
			out = append(out, last)
			last = -1
		}
	}
	return out
}

func loud(frame []int16) bool {
	var sum float64
	for _, s := range frame {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum/float64(len(frame))) > 32768*0.01
}

// Voiced measures audio: the total time of 20 ms frames louder than
// -40 dBFS.
func Voiced(pcm []int16, rate int) time.Duration {
	n := rate / 50
	var voiced time.Duration
	for i := 0; i+n <= len(pcm); i += n {
		var sum float64
		for _, s := range pcm[i : i+n] {
			sum += float64(s) * float64(s)
		}
		if rms := math.Sqrt(sum / float64(n)); rms > 32768*0.01 {
			voiced += 20 * time.Millisecond
		}
	}
	return voiced
}

// Tone is a sine of freq Hz at amplitude amp for d at rate.
func Tone(freq float64, amp int16, d time.Duration, rate int) []int16 {
	n := int(d.Seconds() * float64(rate))
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(float64(amp) * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
	}
	return out
}

// Speechlike is a voice stand-in the detector treats as speech: bursts of
// a few harmonics, like syllables, for d.
func Speechlike(d time.Duration, rate int) []int16 {
	out := make([]int16, int(d.Seconds()*float64(rate)))
	for i := range out {
		t := float64(i) / float64(rate)
		env := 0.6 + 0.4*math.Sin(2*math.Pi*4*t) // syllables at 4 Hz
		v := math.Sin(2*math.Pi*180*t) + 0.5*math.Sin(2*math.Pi*360*t) + 0.3*math.Sin(2*math.Pi*900*t)
		out[i] = int16(6000 * env * v)
	}
	return out
}

// Noise is d of white noise at amplitude amp (a click, a knock on the
// handset, line crackle), the same every time.
func Noise(d time.Duration, amp int16, rate int) []int16 {
	out := make([]int16, int(d.Seconds()*float64(rate)))
	x := uint32(2463534242)
	for i := range out {
		x ^= x << 13 // xorshift32: deterministic, no shared generator
		x ^= x >> 17
		x ^= x << 5
		out[i] = int16(int64(x%(2*uint32(amp)+1)) - int64(amp))
	}
	return out
}

// Silence is d of zeros at rate.
func Silence(d time.Duration, rate int) []int16 {
	return make([]int16, int(d.Seconds()*float64(rate)))
}

// WAV encodes mono 16-bit PCM as a WAV file.
func WAV(pcm []int16, rate int) []byte {
	var b bytes.Buffer
	n := 2 * len(pcm)
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(36+n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(1), uint32(rate), uint32(2 * rate), uint16(2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(n))
	_ = binary.Write(&b, binary.LittleEndian, pcm)
	return b.Bytes()
}

// freePort finds a free loopback port for network.
func freePort(t testing.TB, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// lockedBuffer collects a process's output safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitFor polls ok every 20 ms until it holds or d passes.
func WaitFor(ctx context.Context, d time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}
