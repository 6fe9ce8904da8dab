package siptest

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/icholy/digest"
)

// PeerOptions say how a Peer answers.
type PeerOptions struct {
	// Status is the final answer to an INVITE: 0 or 200 answers the call;
	// 486, 603, 404… refuse it. Ring sends 180 Ringing first.
	Status int
	Ring   bool
	// NeverAnswer rings until the caller cancels.
	NeverAnswer bool
	// Mute answers nothing at all, to any request (an unreachable host).
	Mute bool
	// RTPFor is how long an answered call sends audio before falling
	// silent (0: it sends none at all).
	RTPFor time.Duration
	// Users are the registrar's accounts (user → password); REGISTER is
	// challenged (RFC 3261 §22.4) and accepted with the right password.
	// RefuseAuthWith answers an authenticated REGISTER with this status
	// (401 re-challenges, 403 forbids) whatever the password.
	Users          map[string]string
	RefuseAuthWith int
	// ChallengeInvites challenges INVITEs too (as providers do) against
	// Users: the right password proceeds, a wrong one is 403.
	ChallengeInvites bool
	// TLS serves SIP over TLS with this configuration instead of UDP.
	TLS *tls.Config
	// ReInviteAfter sends a re-INVITE (a session refresh with the same
	// SDP, or ReInviteSDP) this long after answering.
	ReInviteAfter time.Duration
	ReInviteSDP   string
	// Host is the loopback address the peer binds (default 127.0.0.1);
	// another one (127.0.0.2) is a second machine as the far end sees it.
	Host string
}

// Peer is an in-process SIP endpoint on loopback UDP.
type Peer struct {
	// URI addresses the peer ("sip:peer@127.0.0.1:PORT").
	URI string
	// Addr is its host:port.
	Addr string
	o    PeerOptions
	host string
	ua   *sipgo.UserAgent
	srv  *sipgo.Server
	conn io.Closer
	// out places the peer's own calls (Call); nil for a Mute peer.
	out     *sipgo.DialogClientCache
	outCtx  context.Context
	outWG   *sync.WaitGroup
	network string

	mu        sync.Mutex
	invites   int
	cancels   int
	registers []string // "user:result"
	byes      int
	reinvites []int // the final status of each re-INVITE sent
}

// ReInvites lists the answers to the re-INVITEs the peer sent.
func (p *Peer) ReInvites() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int(nil), p.reinvites...)
}

// StartPeer runs a peer until the test ends.
func StartPeer(t testing.TB, o PeerOptions) *Peer {
	t.Helper()
	host := o.Host
	if host == "" {
		host = "127.0.0.1"
	}
	log := slog.New(slog.DiscardHandler)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("siptest"), sipgo.WithUserAgentHostname(host),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(log)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(log)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	var (
		conn    net.PacketConn
		tlsLn   net.Listener
		closer  io.Closer
		addr    string
		network = "udp"
	)
	if o.TLS != nil {
		network = "tls"
		tlsLn, err = tls.Listen("tcp", net.JoinHostPort(host, "0"), o.TLS)
		if err != nil {
			t.Fatal(err)
		}
		closer, addr = tlsLn, tlsLn.Addr().String()
	} else {
		conn, err = net.ListenPacket("udp", net.JoinHostPort(host, "0"))
		if err != nil {
			if host != "127.0.0.1" {
				t.Skipf("cannot bind the loopback address %s: %v", host, err)
			}
			t.Fatal(err)
		}
		closer, addr = conn, conn.LocalAddr().String()
	}
	p := &Peer{o: o, host: host, ua: ua, srv: srv, conn: closer, Addr: addr, network: network}
	p.URI = "sip:peer@" + p.Addr
	if network == "tls" {
		p.URI += ";transport=tls"
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if o.Mute && conn != nil {
		// Read and drop everything.
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for {
				if _, _, err := conn.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
	} else {
		opts := []sipgo.ClientOption{sipgo.WithClientHostname(host)}
		if conn != nil {
			opts = append(opts, sipgo.WithClientConnectionAddr(p.Addr))
		}
		cl, _ := sipgo.NewClient(ua, opts...)
		_, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		contact := sip.Uri{Scheme: "sip", User: "peer", Host: host, Port: port}
		if network == "tls" {
			contact.UriParams = sip.NewParams()
			contact.UriParams.Add("transport", "tls")
		}
		dialogs := sipgo.NewDialogServerCache(cl, sip.ContactHeader{Address: contact})
		p.out, p.outCtx, p.outWG = sipgo.NewDialogClientCache(cl, sip.ContactHeader{Address: contact}), ctx, &wg
		srv.OnInvite(func(req *sip.Request, tx sip.ServerTransaction) { p.invite(ctx, dialogs, req, tx) })
		srv.OnAck(func(req *sip.Request, tx sip.ServerTransaction) { _ = dialogs.ReadAck(req, tx) })
		srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
			p.mu.Lock()
			p.byes++
			p.mu.Unlock()
			// A BYE ends a call the peer answered or one it placed.
			if err := dialogs.ReadBye(req, tx); err != nil {
				if err := p.out.ReadBye(req, tx); err != nil {
					_ = tx.Respond(sip.NewResponseFromRequest(req, 481, "Call/Transaction Does Not Exist", nil))
				}
			}
		})
		srv.OnRegister(p.register)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if conn != nil {
				_ = srv.ServeUDP(conn)
			} else {
				_ = srv.ServeTLS(tlsLn)
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		closer.Close()
		ua.Close()
		wg.Wait()
	})
	if conn != nil && !o.Mute {
		// The peer's own calls go out from its socket once the transport
		// layer knows it; ServeUDP registers it from its goroutine.
		for i := 0; ; i++ {
			if _, err := ua.TransportLayer().GetConnection("udp", addr); err == nil {
				break
			}
			if i == 1000 {
				t.Fatalf("the peer's socket %s did not start serving", addr)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return p
}

// Counts reports the INVITEs, CANCELs and BYEs received.
func (p *Peer) Counts() (invites, cancels, byes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.invites, p.cancels, p.byes
}

// Registers lists the REGISTER requests seen as "user:outcome".
func (p *Peer) Registers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.registers...)
}

func (p *Peer) invite(ctx context.Context, dialogs *sipgo.DialogServerCache, req *sip.Request, tx sip.ServerTransaction) {
	p.mu.Lock()
	p.invites++
	p.mu.Unlock()
	if p.o.ChallengeInvites {
		ok, res := p.authorize(req, "INVITE")
		if res != nil {
			_ = tx.Respond(res)
			return
		}
		if !ok {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 403, "Forbidden", nil))
			return
		}
	}
	d, err := dialogs.ReadInvite(req, tx)
	if err != nil {
		return
	}
	defer d.Close()
	if p.o.Ring || p.o.NeverAnswer {
		_ = d.Respond(180, "Ringing", nil)
	}
	if p.o.NeverAnswer {
		select {
		case <-tx.Done():
		case <-d.Context().Done():
		case <-ctx.Done():
		}
		p.mu.Lock()
		p.cancels++
		p.mu.Unlock()
		return
	}
	if p.o.Status != 0 && p.o.Status != 200 {
		_ = d.Respond(p.o.Status, reasonFor(p.o.Status), nil)
		return
	}
	to, ok := offerAddr(req.Body())
	rtp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(p.host)})
	if err != nil || !ok {
		_ = d.Respond(488, "Not Acceptable Here", nil)
		return
	}
	defer rtp.Close()
	port := rtp.LocalAddr().(*net.UDPAddr).Port
	sdp := fmt.Sprintf("v=0\r\no=peer 1 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\nm=audio %d RTP/AVP 0 101\r\na=rtpmap:0 PCMU/8000\r\na=rtpmap:101 telephone-event/8000\r\na=sendrecv\r\n", p.host, p.host, port)
	if err := d.RespondSDP([]byte(sdp)); err != nil {
		return
	}
	// Send silence for RTPFor, then nothing, until the call ends.
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := rtp.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	if p.o.ReInviteAfter > 0 {
		go p.reinvite(ctx, d, req, sdp)
	}
	end := time.Now().Add(p.o.RTPFor)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var seq uint16
	var ts uint32
	pkt := make([]byte, 12+160)
	for {
		select {
		case <-d.Context().Done():
			return
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.After(end) {
				continue
			}
			pkt[0], pkt[1] = 0x80, 0
			binary.BigEndian.PutUint16(pkt[2:], seq)
			binary.BigEndian.PutUint32(pkt[4:], ts)
			binary.BigEndian.PutUint32(pkt[8:], 0x5EED)
			for i := 12; i < len(pkt); i++ {
				pkt[i] = 0xFF
			}
			_, _ = rtp.WriteToUDPAddrPort(pkt, to)
			seq++
			ts += 160
		}
	}
}

// reinvite refreshes the session within the dialog (RFC 3261 §14.1)
// and acknowledges a 2xx.
func (p *Peer) reinvite(ctx context.Context, d *sipgo.DialogServerSession, invite *sip.Request, sdp string) {
	select {
	case <-time.After(p.o.ReInviteAfter):
	case <-d.Context().Done():
		return
	case <-ctx.Done():
		return
	}
	if p.o.ReInviteSDP != "" {
		sdp = p.o.ReInviteSDP
	}
	target := invite.Contact().Address
	req := sip.NewRequest(sip.INVITE, target)
	req.SetBody([]byte(sdp))
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := d.Do(rctx, req)
	code := 0
	if err == nil {
		code = res.StatusCode
	}
	p.mu.Lock()
	p.reinvites = append(p.reinvites, code)
	p.mu.Unlock()
	if err == nil && res.IsSuccess() {
		ack := sip.NewRequest(sip.ACK, target)
		ack.AppendHeader(&sip.CSeqHeader{SeqNo: req.CSeq().SeqNo, MethodName: sip.ACK})
		_ = d.WriteRequest(ack)
	}
}

// register is a registrar with digest authentication.
func (p *Peer) register(req *sip.Request, tx sip.ServerTransaction) {
	user := req.From().Address.User
	record := func(what string) {
		p.mu.Lock()
		p.registers = append(p.registers, user+":"+what)
		p.mu.Unlock()
	}
	h := req.GetHeader("Authorization")
	chal := digest.Challenge{Realm: "siptest", Nonce: "n0nce" + strconv.Itoa(int(time.Now().UnixNano()%1e6)), Algorithm: "MD5"}
	if h == nil {
		record("challenged")
		res := sip.NewResponseFromRequest(req, 401, "Unauthorized", nil)
		res.AppendHeader(sip.NewHeader("WWW-Authenticate", chal.String()))
		_ = tx.Respond(res)
		return
	}
	if p.o.RefuseAuthWith != 0 {
		record("refused")
		res := sip.NewResponseFromRequest(req, p.o.RefuseAuthWith, reasonFor(p.o.RefuseAuthWith), nil)
		if p.o.RefuseAuthWith == 401 {
			res.AppendHeader(sip.NewHeader("WWW-Authenticate", chal.String()))
		}
		_ = tx.Respond(res)
		return
	}
	if ok, _ := p.authorize(req, "REGISTER"); ok {
		record("ok")
		res := sip.NewResponseFromRequest(req, 200, "OK", nil)
		if c := req.Contact(); c != nil {
			res.AppendHeader(sip.HeaderClone(c))
		}
		res.AppendHeader(sip.NewHeader("Expires", "60"))
		_ = tx.Respond(res)
		return
	}
	record("wrong")
	_ = tx.Respond(sip.NewResponseFromRequest(req, 403, "Forbidden", nil))
}

// authorize checks a request's digest credentials against Users. A
// request without them gets the challenge to send (res).
func (p *Peer) authorize(req *sip.Request, method string) (ok bool, res *sip.Response) {
	h := req.GetHeader("Authorization")
	if h == nil {
		chal := digest.Challenge{Realm: "siptest", Nonce: "n0nce" + strconv.Itoa(int(time.Now().UnixNano()%1e6)), Algorithm: "MD5"}
		res = sip.NewResponseFromRequest(req, 401, "Unauthorized", nil)
		res.AppendHeader(sip.NewHeader("WWW-Authenticate", chal.String()))
		return false, res
	}
	cred, err := digest.ParseCredentials(h.Value())
	if err != nil {
		return false, nil
	}
	pw, known := p.o.Users[cred.Username]
	if !known {
		return false, nil
	}
	c := digest.Challenge{Realm: cred.Realm, Nonce: cred.Nonce, Algorithm: cred.Algorithm, Opaque: cred.Opaque}
	if cred.QOP != "" {
		c.QOP = []string{cred.QOP}
	}
	want, err := digest.Digest(&c, digest.Options{Method: method, URI: cred.URI, Username: cred.Username, Password: pw, Cnonce: cred.Cnonce, Count: cred.Nc})
	return err == nil && want.Response == cred.Response, nil
}

// offerAddr reads where the caller's SDP offer wants RTP.
func offerAddr(sdp []byte) (netip.AddrPort, bool) {
	var ip netip.Addr
	port := 0
	for _, l := range strings.Split(string(sdp), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "c=IN IP4 "); ok {
			ip, _ = netip.ParseAddr(v)
		}
		if v, ok := strings.CutPrefix(l, "m=audio "); ok {
			port, _ = strconv.Atoi(strings.Fields(v)[0])
		}
	}
	if !ip.IsValid() || port == 0 {
		return netip.AddrPort{}, false
	}
	if ip.IsUnspecified() {
		ip = netip.MustParseAddr("127.0.0.1")
	}
	return netip.AddrPortFrom(ip, uint16(port)), true
}

func reasonFor(code int) string {
	switch code {
	case 401:
		return "Unauthorized"
	case 403:
		return "Forbidden"
	case 404:
		return "Not Found"
	case 480:
		return "Temporarily Unavailable"
	case 486:
		return "Busy Here"
	case 488:
		return "Not Acceptable Here"
	case 503:
		return "Service Unavailable"
	case 603:
		return "Decline"
	}
	return "Refused"
}
