package siptest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// CallOptions say how a Peer calls (Peer.Call): as the owner's phone
// calling Hestia, or as a stranger pretending to be it.
type CallOptions struct {
	// From is the user part of the caller's address ("+393471234567").
	From string
	// AssertedIdentity, when set, is sent as P-Asserted-Identity (what a
	// provider says the caller is).
	AssertedIdentity string
	// NoKeys offers no telephone-event format: the phone cannot send
	// digits.
	NoKeys bool
	// Echo is the gain at which the line sends back what the caller
	// hears, mixed into what it says (0: no echo; 0.16 is 16 dB down), as
	// a line whose echo is not cancelled does; EchoDelay is how late
	// (default 60 ms).
	Echo      float64
	EchoDelay time.Duration
}

// OutCall is a call a Peer placed. Once answered it sends 20 ms of
// silence every 20 ms (PCMU), digits as RFC 4733 telephone-events when
// Press is called, what Say queues, the echo of what it hears when
// CallOptions.Echo is set, and measures the audio it hears.
type OutCall struct {
	// Status is the final answer to the INVITE (200 when answered).
	Status int
	// Reason is its reason phrase.
	Reason string

	sess     *sipgo.DialogClientSession
	rtp      *net.UDPConn
	keys     chan byte
	echoGain float64
	echoLen  int          // samples of echo delay
	mu       sync.Mutex   // guards the fields below
	voice    []int16      // 8 kHz samples waiting to be sent
	echo     []int16      // the echo waiting to be mixed in, EchoDelay behind
	loud     []time.Time  // when each packet louder than -40 dBFS arrived
	voiced   atomic.Int64 // 20 ms frames heard louder than -40 dBFS
	stop     chan struct{}
	stopped  sync.Once
	wg       sync.WaitGroup
}

// Call sends an INVITE to target (a SIP URI) and waits for the final
// answer. A refused call is returned with its Status, not an error; an
// answered one runs until either side hangs up or the test ends.
func (p *Peer) Call(ctx context.Context, target string, o CallOptions) (*OutCall, error) {
	if p.out == nil {
		return nil, errors.New("a mute peer places no calls")
	}
	var to sip.Uri
	if err := sip.ParseUri(target, &to); err != nil {
		return nil, fmt.Errorf("target %q: %w", target, err)
	}
	rtp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(p.host)})
	if err != nil {
		return nil, err
	}
	formats, keys := "0 101", "a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-15\r\n"
	if o.NoKeys {
		formats, keys = "0", ""
	}
	sdp := fmt.Sprintf("v=0\r\no=caller 1 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP %s\r\na=rtpmap:0 PCMU/8000\r\n%sa=ptime:20\r\na=sendrecv\r\n",
		p.host, p.host, rtp.LocalAddr().(*net.UDPAddr).Port, formats, keys)
	req := sip.NewRequest(sip.INVITE, to)
	if p.network == "tls" {
		req.SetTransport("TLS")
	}
	from := &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: o.From, Host: p.host}, Params: sip.NewParams()}
	from.Params.Add("tag", sip.GenerateTagN(16))
	req.AppendHeader(from)
	req.AppendHeader(&sip.ToHeader{Address: to})
	if o.AssertedIdentity != "" {
		req.AppendHeader(sip.NewHeader("P-Asserted-Identity", o.AssertedIdentity))
	}
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody([]byte(sdp))
	sess, err := p.out.WriteInvite(ctx, req)
	if err != nil {
		rtp.Close()
		return nil, err
	}
	err = sess.WaitAnswer(ctx, sipgo.AnswerOptions{})
	var dr *sipgo.ErrDialogResponse
	if errors.As(err, &dr) {
		sess.Close()
		rtp.Close()
		return &OutCall{Status: dr.Res.StatusCode, Reason: dr.Res.Reason}, nil
	}
	if err != nil {
		sess.Close()
		rtp.Close()
		return nil, err
	}
	if err := sess.Ack(ctx); err != nil {
		sess.Close()
		rtp.Close()
		return nil, err
	}
	dest, ok := offerAddr(sess.InviteResponse.Body())
	if !ok {
		_ = sess.Bye(ctx)
		sess.Close()
		rtp.Close()
		return nil, errors.New("the answer names no audio address")
	}
	c := &OutCall{Status: sess.InviteResponse.StatusCode, Reason: sess.InviteResponse.Reason, sess: sess, rtp: rtp,
		keys: make(chan byte, 64), stop: make(chan struct{}), echoGain: o.Echo}
	if o.Echo > 0 {
		if o.EchoDelay <= 0 {
			o.EchoDelay = 60 * time.Millisecond
		}
		c.echoLen = int(o.EchoDelay.Seconds() * 8000)
		c.echo = make([]int16, c.echoLen)
	}
	c.wg.Add(2)
	go c.send(net.UDPAddrFromAddrPort(dest))
	go c.receive()
	p.outWG.Add(1)
	go func() {
		defer p.outWG.Done()
		select {
		case <-sess.Context().Done():
		case <-p.outCtx.Done():
			bctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = sess.Bye(bctx)
			cancel()
		}
		c.close()
	}()
	return c, nil
}

// Answered reports whether the call was answered.
func (c *OutCall) Answered() bool { return c.sess != nil }

// Ended is done once the call is over (either side hung up).
func (c *OutCall) Ended() <-chan struct{} { return c.sess.Context().Done() }

// Press sends keys ('0'–'9', '*', '#') one after the other.
func (c *OutCall) Press(keys string) error {
	for i := 0; i < len(keys); i++ {
		select {
		case c.keys <- keys[i]:
		case <-c.stop:
			return errors.New("the call has ended")
		}
	}
	return nil
}

// Say sends 8 kHz audio (Speechlike, say) after what is still queued, as
// if the caller spoke it.
func (c *OutCall) Say(pcm []int16) {
	c.mu.Lock()
	c.voice = append(c.voice, pcm...)
	c.mu.Unlock()
}

// Hangup sends a BYE.
func (c *OutCall) Hangup(ctx context.Context) error {
	err := c.sess.Bye(ctx)
	c.close()
	return err
}

// Heard is how much non-silent audio has arrived.
func (c *OutCall) Heard() time.Duration {
	return time.Duration(c.voiced.Load()) * 20 * time.Millisecond
}

// LoudAt lists when each packet louder than -40 dBFS arrived.
func (c *OutCall) LoudAt() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.loud...)
}

func (c *OutCall) close() {
	c.stopped.Do(func() {
		close(c.stop)
		c.rtp.Close()
		c.sess.Close()
	})
	c.wg.Wait()
}

// send keeps the stream going: silence, or a key as an RFC 4733 event
// (§2.5: one timestamp, a growing duration, the end repeated three times)
// followed by a short gap.
func (c *OutCall) send(to *net.UDPAddr) {
	defer c.wg.Done()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var (
		seq  uint16
		ts   uint32
		pkt  = make([]byte, 12+160)
		key  = -1   // the event being sent
		kts  uint32 // its timestamp
		step int
		gap  int
	)
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		if key < 0 && gap == 0 {
			select {
			case k := <-c.keys:
				key, kts, step = eventCode(k), ts, 0
			default:
			}
		}
		pkt = pkt[:12]
		pt := byte(0)
		if key >= 0 {
			pt = 101
			end := step >= 2
			flags := byte(10) // volume -10 dBm0
			if end {
				flags |= 0x80
			}
			pkt = append(pkt, byte(key), flags, 0, 0)
			binary.BigEndian.PutUint16(pkt[14:], uint16(160*(step+1)))
			if step == 0 {
				pt |= 0x80 // marker: the event starts
			}
			binary.BigEndian.PutUint32(pkt[4:], kts)
			step++
			if step == 5 {
				key, gap = -1, 1
			}
		} else {
			c.mu.Lock()
			n := min(160, len(c.voice))
			frame := c.voice[:n]
			c.voice = c.voice[n:]
			e := min(160, len(c.echo))
			echo := c.echo[:e]
			c.echo = c.echo[e:]
			c.mu.Unlock()
			for i := 0; i < 160; i++ {
				var v int // silence after the voice
				if i < len(frame) {
					v = int(frame[i])
				}
				if i < len(echo) {
					v += int(echo[i])
				}
				pkt = append(pkt, ulaw(int16(max(-32768, min(32767, v)))))
			}
			binary.BigEndian.PutUint32(pkt[4:], ts)
			if gap > 0 {
				gap--
			}
		}
		pkt[0], pkt[1] = 0x80, pt
		binary.BigEndian.PutUint16(pkt[2:], seq)
		binary.BigEndian.PutUint32(pkt[8:], 0xCA11E5)
		_, _ = c.rtp.WriteToUDP(pkt, to)
		seq++
		ts += 160
	}
}

func eventCode(k byte) int {
	switch {
	case k >= '0' && k <= '9':
		return int(k - '0')
	case k == '*':
		return 10
	case k == '#':
		return 11
	}
	return -1
}

// receive decodes PCMU/PCMA packets and counts the loud frames.
func (c *OutCall) receive() {
	defer c.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, err := c.rtp.Read(buf)
		if err != nil {
			return
		}
		if n < 12+80 || buf[0]>>6 != 2 {
			continue
		}
		pt := buf[1] & 0x7F
		if pt != 0 && pt != 8 {
			continue
		}
		var sum float64
		payload := buf[12:n]
		var echo []int16
		for _, b := range payload {
			s := g711(b, pt == 8)
			v := float64(s)
			sum += v * v
			if c.echoGain > 0 {
				echo = append(echo, int16(v*c.echoGain))
			}
		}
		loud := math.Sqrt(sum/float64(len(payload))) > 32768*0.01
		if loud {
			c.voiced.Add(1)
		}
		if loud || echo != nil {
			c.mu.Lock()
			if loud {
				c.loud = append(c.loud, time.Now())
			}
			c.echo = append(c.echo, echo...)
			// A late sender must not let the echo fall further behind.
			if over := len(c.echo) - c.echoLen - 480; over > 0 {
				c.echo = c.echo[over:]
			}
			c.mu.Unlock()
		}
	}
}

// g711 decodes one μ-law (or A-law) byte (ITU-T G.711).
func g711(b byte, alaw bool) int16 {
	if alaw {
		b ^= 0x55
		seg := int(b&0x70) >> 4
		v := int(b&0x0F)<<4 + 8
		if seg > 0 {
			v = (v + 0x100) << (seg - 1)
		}
		if b&0x80 == 0 {
			v = -v
		}
		return int16(v)
	}
	b = ^b
	v := (int(b&0x0F)<<3 + 0x84) << ((b & 0x70) >> 4)
	v -= 0x84
	if b&0x80 != 0 {
		v = -v
	}
	return int16(v)
}

// ulaw encodes one sample as μ-law (ITU-T G.711).
func ulaw(s int16) byte {
	const bias, clip = 0x84, 32635
	v := int(s)
	sign := byte(0)
	if v < 0 {
		v, sign = -v, 0x80
	}
	v = min(v, clip) + bias
	exp := 7
	for mask := 0x4000; v&mask == 0 && exp > 0; mask >>= 1 {
		exp--
	}
	mant := byte(v>>(exp+3)) & 0x0F
	return ^(sign | byte(exp)<<4 | mant)
}
