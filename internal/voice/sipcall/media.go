package sipcall

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// media is one call's RTP stream (RFC 3550) over UDP: 20 ms G.711 packets
// out on a steady clock (silence when there is nothing to say, which keeps
// NAT bindings open and the phone's jitter buffer fed), packets in decoded
// to 8 kHz PCM, and RFC 4733 telephone-events read as digits. RTCP is not
// sent: the stream's liveness is judged from RTP itself.
type media struct {
	conn *net.UDPConn
	log  *slog.Logger

	// Set by the first startMedia, read-only after.
	codec     Codec
	pt        uint8
	dtmfPT    int
	startOnce sync.Once
	// handlers take what is received; an inbound call swaps them when
	// its PIN is right (the PIN's digits never reach the conversation).
	handlers atomic.Pointer[mediaHandlers]

	mu        sync.Mutex     // guards the fields below
	remote    netip.AddrPort // where packets go
	announced netip.AddrPort // where the phone's SDP said it is
	latched   bool
	dropped   bool          // a stranger's packet was dropped (logged once)
	queue     []int16       // 8 kHz samples waiting to be sent
	marker    bool          // the next packet starts a talk spurt
	drained   chan struct{} // closed when queue empties; nil when idle
	lastDTMF  uint32        // timestamp of the last digit reported
	haveDTMF  bool
	out       echoMeter // the level of each frame sent, for the echo guard

	lastRecv atomic.Int64 // unix nanos of the last RTP packet in
	recvd    atomic.Int64 // packets in
	sent     atomic.Int64 // packets out
	start    time.Time

	wg   sync.WaitGroup
	stop chan struct{}
	once sync.Once
}

// errRTPTimeout: the phone's RTP stopped (or never came) for longer than
// the configured timeout; the call ends as a media_error.
var errRTPTimeout = errors.New("no RTP from the phone")

// openMedia binds the RTP socket on ip, in [lo, hi] when a range is set
// (even ports first, as RFC 3550 §11 recommends, leaving the odd one above
// for RTCP), else on a port the system picks.
func openMedia(ip netip.Addr, lo, hi int, log *slog.Logger) (*media, error) {
	bind := func(port int) (*net.UDPConn, error) {
		return net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, uint16(port))))
	}
	var (
		conn *net.UDPConn
		err  error
	)
	if lo == 0 {
		conn, err = bind(0)
	} else {
		// Start at a random even port so that concurrent calls (and a
		// restarted daemon) do not all contend for the first one.
		var r [2]byte
		_, _ = rand.Read(r[:])
		span := (hi - lo + 1) / 2
		if span < 1 {
			span = 1
		}
		first := int(binary.BigEndian.Uint16(r[:])) % span
		for i := 0; i < span; i++ {
			port := lo + 2*((first+i)%span)
			if conn, err = bind(port); err == nil {
				break
			}
		}
		if conn == nil && hi > lo {
			// Every even port is taken; any free one in the range will do.
			for port := lo + 1; port <= hi; port += 2 {
				if conn, err = bind(port); err == nil {
					break
				}
			}
		}
	}
	if conn == nil {
		return nil, fmt.Errorf("binding an RTP port on %s (range %d-%d): %w", ip, lo, hi, err)
	}
	return &media{conn: conn, log: log, dtmfPT: -1, stop: make(chan struct{})}, nil
}

// port is the local RTP port, for the SDP offer.
func (m *media) port() int { return m.conn.LocalAddr().(*net.UDPAddr).Port }

// mediaHandlers take the caller's audio (nil: ignored) and key presses.
type mediaHandlers struct {
	onAudio func([]int16)
	onDigit func(rune)
}

// startMedia begins sending and receiving per the phone's answer; called
// again, it only hands what is received to new handlers.
func (m *media) startMedia(a answer, onAudio func([]int16), onDigit func(rune)) {
	m.handlers.Store(&mediaHandlers{onAudio: onAudio, onDigit: onDigit})
	m.startOnce.Do(func() {
		m.codec, m.pt, m.dtmfPT = a.Codec, a.PT, a.DTMF
		m.mu.Lock()
		m.remote, m.announced = a.Addr, a.Addr
		m.mu.Unlock()
		m.start = time.Now()
		m.lastRecv.Store(m.start.UnixNano())
		m.wg.Add(2)
		go m.send()
		go m.receive()
	})
}

// retarget follows the phone to a new address named in a re-INVITE; the
// stream latches again from there.
func (m *media) retarget(to netip.AddrPort) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if to == m.announced {
		return
	}
	m.announced, m.remote, m.latched = to, to, false
}

// close stops the stream and releases the port.
func (m *media) close() {
	m.once.Do(func() {
		close(m.stop)
		m.conn.Close()
	})
	m.wg.Wait()
}

// play queues 8 kHz samples to be sent after what is queued and returns a
// channel closed when everything queued so far has gone out.
func (m *media) play(pcm []int16) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.queue) == 0 {
		m.marker = true
	}
	m.queue = append(m.queue, pcm...)
	if m.drained == nil {
		m.drained = make(chan struct{})
	}
	return m.drained
}

// flush drops what has not been sent yet (the caller skipped it).
func (m *media) flush() {
	m.mu.Lock()
	m.queue = m.queue[:0]
	if m.drained != nil {
		close(m.drained)
		m.drained = nil
	}
	m.mu.Unlock()
}

// playing reports whether audio is queued.
func (m *media) playing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue) > 0
}

// echoLevel is the level of the loudest frame sent within echoWindow
// before now, in dBFS: what the line's echo may bring back.
func (m *media) echoLevel(now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out.loudest(now)
}

// silentFor is how long no RTP has arrived.
func (m *media) silentFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, m.lastRecv.Load()))
}

// send writes one packet every 20 ms on a schedule kept against the start
// time, catching up after a late wake-up rather than drifting.
func (m *media) send() {
	defer m.wg.Done()
	var hdr rtpHeader
	var ids [10]byte
	_, _ = rand.Read(ids[:]) // RFC 3550 §5.1: random initial values
	hdr.SSRC = binary.BigEndian.Uint32(ids[0:])
	hdr.Timestamp = binary.BigEndian.Uint32(ids[4:])
	hdr.Seq = binary.BigEndian.Uint16(ids[8:])
	hdr.PayloadType = m.pt
	frame := make([]int16, frameLen)
	payload := make([]byte, 0, frameLen)
	pkt := make([]byte, 0, 12+frameLen)
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-timer.C:
		}
		now := time.Now()
		if now.Sub(next) > 200*time.Millisecond {
			next = now // far behind (a suspended machine): start afresh
		}
		for !next.After(now) {
			marker, done := m.take(now, frame)
			hdr.Marker = marker
			payload = m.codec.encode(payload[:0], frame)
			pkt = appendRTP(pkt[:0], hdr, payload)
			m.mu.Lock()
			to := m.remote
			m.mu.Unlock()
			if _, err := m.conn.WriteToUDPAddrPort(pkt, to); err != nil {
				select {
				case <-m.stop:
					return
				default:
				}
				m.log.Debug("sending RTP failed", "err", err)
			} else {
				m.sent.Add(1)
			}
			if done != nil {
				close(done)
			}
			hdr.Seq++
			hdr.Timestamp += frameLen
			next = next.Add(20 * time.Millisecond)
		}
		timer.Reset(time.Until(next))
	}
}

// take fills frame with the next queued samples (silence after them),
// going out at now, and reports whether it starts a talk spurt, and the
// drained channel to close when it emptied the queue.
func (m *media) take(now time.Time, frame []int16) (bool, chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := copy(frame, m.queue)
	clear(frame[n:])
	level := silenceLevel
	if n > 0 {
		level = frameLevel(frame)
	}
	m.out.add(now, level)
	m.queue = m.queue[n:]
	if n > 0 && len(m.queue) == 0 {
		m.queue = nil
	}
	marker := n > 0 && m.marker
	if marker {
		m.marker = false
	}
	var done chan struct{}
	if len(m.queue) == 0 && m.drained != nil {
		done, m.drained = m.drained, nil
	}
	return marker, done
}

// receive reads packets until the socket closes.
func (m *media) receive() {
	defer m.wg.Done()
	buf := make([]byte, 2048)
	pcm := make([]int16, 0, 2*frameLen)
	for {
		n, from, err := m.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			select {
			case <-m.stop:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		h, payload, err := parseRTP(buf[:n])
		if err != nil {
			continue // stray datagrams (STUN, RTCP on a muxed port) are not ours
		}
		if !m.accept(netip.AddrPortFrom(from.Addr().Unmap(), from.Port())) {
			continue
		}
		switch {
		case h.PayloadType == m.pt:
			m.lastRecv.Store(time.Now().UnixNano())
			m.recvd.Add(1)
			pcm = m.codec.decode(pcm[:0], payload)
			if h := m.handlers.Load(); h.onAudio != nil && len(pcm) > 0 {
				h.onAudio(pcm)
			}
		case m.dtmfPT >= 0 && int(h.PayloadType) == m.dtmfPT:
			m.lastRecv.Store(time.Now().UnixNano())
			m.recvd.Add(1)
			ev, err := parseDTMF(payload)
			if err != nil {
				continue
			}
			// One event spans many packets with the same timestamp (RFC
			// 4733 §2.5.1.2), its end repeated three times: it is one
			// key press, reported at its first packet.
			m.mu.Lock()
			fresh := !m.haveDTMF || h.Timestamp != m.lastDTMF
			m.lastDTMF, m.haveDTMF = h.Timestamp, true
			m.mu.Unlock()
			if d, h := ev.digit(), m.handlers.Load(); fresh && d != 0 && h.onDigit != nil {
				h.onDigit(d)
			}
		case h.PayloadType == 13: // comfort noise (RFC 3389): the line is alive
			m.lastRecv.Store(time.Now().UnixNano())
		}
	}
}

// accept decides whether a packet from "from" is the phone's (strict
// RTP). The first packet latches the stream to its source — symmetric RTP
// (RFC 4961): a phone behind NAT announces an address nobody can reach,
// so Hestia answers where its audio comes from — but only from the
// address or the port the SDP named (a phone with several interfaces
// sends from its announced port on another one), or from anywhere when
// the named address is a private one (the NAT case). After that, packets
// from any other source are dropped: a stranger who guesses Hestia's port
// can neither speak into the conversation nor press 1 on an approval.
func (m *media) accept(from netip.AddrPort) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latched {
		return from == m.remote
	}
	sdp := m.announced.Addr().Unmap()
	if from.Addr() != sdp && from.Port() != m.announced.Port() && !(sdp.IsPrivate() || sdp.IsLoopback() || sdp.IsLinkLocalUnicast() || sdp.IsUnspecified()) {
		if !m.dropped {
			m.dropped = true
			m.log.Warn("dropping RTP from an address the phone did not announce", "sdp", m.remote.String(), "from", from.String())
		}
		return false
	}
	m.latched = true
	if from != m.remote {
		m.log.Info("the phone's RTP comes from another address than its SDP named; answering there", "sdp", m.remote.String(), "from", from.String())
		m.remote = from
	}
	return true
}

// watch returns errRTPTimeout once no RTP has arrived for timeout, or nil
// when ctx ends first.
func (m *media) watch(ctx context.Context, timeout time.Duration) error {
	t := time.NewTicker(min(timeout/4, 250*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-m.stop:
			return nil
		case now := <-t.C:
			if d := m.silentFor(now); d > timeout {
				return fmt.Errorf("%w for %s (%d packets received in all)", errRTPTimeout, d.Round(100*time.Millisecond), m.recvd.Load())
			}
		}
	}
}
