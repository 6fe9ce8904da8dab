package sipcall

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// Each way a call can fail is classified, recorded in the audit trail and
// the chat, and bounded in time.
func TestCallOutcomesAgainstPeers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		peer    siptest.PeerOptions
		cfg     Config
		want    Outcome
		status  int
		invites int // INVITEs the peer should have seen (-1: any)
		within  time.Duration
	}{
		{name: "busy", peer: siptest.PeerOptions{Status: 486, Ring: true}, want: Busy, status: 486, invites: 1, within: 3 * time.Second},
		{name: "declined", peer: siptest.PeerOptions{Status: 603}, want: Rejected, status: 603, invites: 1, within: 3 * time.Second},
		{name: "no such number", peer: siptest.PeerOptions{Status: 404}, want: Unreachable, status: 404, invites: 1, within: 3 * time.Second},
		{name: "unavailable", peer: siptest.PeerOptions{Status: 480}, want: NoAnswer, status: 480, invites: 1, within: 3 * time.Second},
		{name: "codec refused", peer: siptest.PeerOptions{Status: 488}, want: MediaError, status: 488, invites: 1, within: 3 * time.Second},
		{name: "never answers", peer: siptest.PeerOptions{NeverAnswer: true}, cfg: Config{RingTimeout: 1500 * time.Millisecond}, want: NoAnswer, invites: 1, within: 6 * time.Second},
		{name: "host silent", peer: siptest.PeerOptions{Mute: true}, cfg: Config{ResponseTimeout: time.Second}, want: NetworkError, invites: -1, within: 4 * time.Second},
		{name: "unknown host", cfg: Config{ResponseTimeout: 2 * time.Second}, want: NetworkError, invites: 0, within: 4 * time.Second},
		{name: "rtp stops", peer: siptest.PeerOptions{RTPFor: 800 * time.Millisecond}, cfg: Config{RTPTimeout: time.Second}, want: MediaError, invites: 1, within: 6 * time.Second},
		{name: "no rtp at all", peer: siptest.PeerOptions{}, cfg: Config{RTPTimeout: time.Second}, want: MediaError, invites: 1, within: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer := siptest.StartPeer(t, tc.peer)
			cfg := tc.cfg
			cfg.To = peer.URI
			if tc.name == "unknown host" {
				cfg.To = "sip:phone@no-such-host.invalid"
			}
			r := newRig(t, cfg)
			start := time.Now()
			c, err := r.m.Call(context.Background(), CallRequest{Opening: "Hello.", Origin: "test"})
			if err != nil {
				t.Fatal(err)
			}
			res := waitResult(t, c, tc.within+5*time.Second)
			if took := time.Since(start); took > tc.within {
				t.Errorf("took %s, want under %s", took, tc.within)
			}
			if res.Outcome != tc.want || res.Status != tc.status {
				t.Fatalf("outcome %s %d (%s), want %s %d", res.Outcome, res.Status, res.Reason, tc.want, tc.status)
			}
			if inv, _, _ := peer.Counts(); tc.invites >= 0 && inv != tc.invites {
				t.Errorf("the peer saw %d INVITEs, want %d", inv, tc.invites)
			}
			if tc.name == "never answers" {
				if !siptest.WaitFor(context.Background(), 3*time.Second, func() bool { _, cancels, _ := peer.Counts(); return cancels == 1 }) {
					t.Error("the ringing was not cancelled")
				}
			}
			if tc.want == MediaError && res.Answered.IsZero() == (tc.status == 0) {
				t.Errorf("answered %v for %+v", res.Answered, res)
			}
			if tc.want == MediaError && tc.status == 0 {
				if !siptest.WaitFor(context.Background(), 3*time.Second, func() bool { _, _, byes := peer.Counts(); return byes == 1 }) {
					t.Error("a call whose audio stopped was not hung up with a BYE")
				}
			}
			audits := r.audits()
			if len(audits) != 1 || audits[0].typ != "voice.call" || audits[0].data.(map[string]any)["outcome"] != tc.want {
				t.Errorf("audit %+v", audits)
			}
			if notes := r.chats.all(); len(notes) != 1 || !strings.Contains(notes[0], "📞") {
				t.Errorf("chat %q", notes)
			}
			// The user agent is free for the next call.
			if r.m.Status().Current != nil {
				t.Error("the call is still current")
			}
		})
	}
}

// Wrong credentials: the registrar refuses them (403 after the
// challenge, or a second 401), the call is auth_failed without dialling,
// and the right password registers.
func TestRegistrationCredentials(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reg      siptest.PeerOptions
		password string
		want     Outcome
		status   int
	}{
		{"wrong password", siptest.PeerOptions{Users: map[string]string{"alice": "right"}}, "wrong", AuthFailed, 403},
		{"rechallenged", siptest.PeerOptions{RefuseAuthWith: 401}, "whatever", AuthFailed, 401},
		{"forbidden", siptest.PeerOptions{RefuseAuthWith: 403}, "whatever", AuthFailed, 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			registrar := siptest.StartPeer(t, tc.reg)
			phone := siptest.StartPeer(t, siptest.PeerOptions{Status: 486})
			r := newRig(t, Config{Registrar: registrar.URI, Username: "alice", Password: tc.password, To: phone.URI})
			c, err := r.m.Call(context.Background(), CallRequest{Origin: "test"})
			if err != nil {
				t.Fatal(err)
			}
			res := waitResult(t, c, 5*time.Second)
			if res.Outcome != tc.want || res.Status != tc.status {
				t.Fatalf("outcome %s %d (%s)", res.Outcome, res.Status, res.Reason)
			}
			if inv, _, _ := phone.Counts(); inv != 0 {
				t.Errorf("the phone was dialled %d times with refused credentials", inv)
			}
			if st := r.m.Registration(); st.Registered || st.Outcome != AuthFailed {
				t.Errorf("registration %+v", st)
			}
		})
	}
	t.Run("right password", func(t *testing.T) {
		t.Parallel()
		registrar := siptest.StartPeer(t, siptest.PeerOptions{Users: map[string]string{"alice": "right"}})
		r := newRig(t, Config{Registrar: registrar.URI, Username: "alice", Password: "right", To: "100"})
		if !siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return r.m.Registration().Registered }) {
			t.Fatalf("not registered: %+v (registrar saw %q)", r.m.Registration(), registrar.Registers())
		}
		if got := registrar.Registers(); !slices.Equal(got[:2], []string{"alice:challenged", "alice:ok"}) {
			t.Errorf("registrar saw %q", got)
		}
		if !strings.HasPrefix(r.m.Target(), "sip:100@127.0.0.1:") {
			t.Errorf("a number is dialled at the registrar: %s", r.m.Target())
		}
	})
}

// A phone that rings and is never picked up: no_answer after the ring
// timeout, the INVITE cancelled.
func TestNoAnswerWithBaresip(t *testing.T) {
	siptest.NeedBaresip(t)
	t.Parallel()
	phone := siptest.StartPhone(t, siptest.PhoneOptions{AutoAnswer: false})
	r := newRig(t, Config{To: phone.URI, RingTimeout: 2 * time.Second})
	start := time.Now()
	c, err := r.m.Call(context.Background(), CallRequest{Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res := waitResult(t, c, 10*time.Second)
	if res.Outcome != NoAnswer || res.Ringing < 2*time.Second || time.Since(start) > 6*time.Second {
		t.Fatalf("result %+v after %s", res, time.Since(start))
	}
	if !siptest.WaitFor(context.Background(), 3*time.Second, func() bool { return strings.Contains(phone.Output(), "session closed") }) {
		t.Errorf("the phone kept ringing:\n%s", phone.Output())
	}
}

// Providers challenge the INVITE itself: the right password goes through
// (here to a busy line), a wrong one is auth_failed; over TLS the same
// call reaches a peer that trusts nothing but its own certificate.
func TestInviteAuthenticationAndTLS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		password string
		tls      bool
		want     Outcome
		status   int
	}{
		{"right password", "right", false, Busy, 486},
		{"wrong password", "wrong", false, AuthFailed, 403},
		{"over tls", "right", true, Busy, 486},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := siptest.PeerOptions{Status: 486, ChallengeInvites: true, Users: map[string]string{"alice": "right"}}
			cfg := Config{Username: "alice", Password: tc.password}
			if tc.tls {
				o.TLS, cfg.TLS = siptest.TLSPair(t)
				cfg.Transport = "tls"
			}
			peer := siptest.StartPeer(t, o)
			cfg.To = peer.URI
			r := newRig(t, cfg)
			c, err := r.m.Call(context.Background(), CallRequest{Origin: "test"})
			if err != nil {
				t.Fatal(err)
			}
			res := waitResult(t, c, 8*time.Second)
			if res.Outcome != tc.want || res.Status != tc.status {
				t.Fatalf("outcome %s %d (%s)", res.Outcome, res.Status, res.Reason)
			}
			if inv, _, _ := peer.Counts(); inv != 2 {
				t.Errorf("the peer saw %d INVITEs, want the first and the authenticated one", inv)
			}
		})
	}
}

// A re-INVITE within the call (a provider's session refresh) is answered
// with the format in use and the call goes on; one that changes the codec
// is refused with 488 and the call still goes on.
func TestReInviteKeepsTheCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		sdp  string
		want int
	}{
		{"refresh", "", 200},
		{"codec change", "v=0\r\no=peer 1 2 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/AVP 8\r\na=rtpmap:8 PCMA/8000\r\n", 488},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			peer := siptest.StartPeer(t, siptest.PeerOptions{RTPFor: time.Minute, ReInviteAfter: 500 * time.Millisecond, ReInviteSDP: tc.sdp})
			r := newRig(t, Config{To: peer.URI})
			c, err := r.m.Call(context.Background(), CallRequest{Origin: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if !siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return len(peer.ReInvites()) == 1 }) {
				t.Fatal("no answer to the re-INVITE")
			}
			if got := peer.ReInvites(); got[0] != tc.want {
				t.Errorf("re-INVITE answered %d, want %d", got[0], tc.want)
			}
			time.Sleep(300 * time.Millisecond)
			if c.State() != StateAnswered {
				t.Fatalf("the call ended: %+v", c.Result())
			}
			c.Hangup()
			if res := waitResult(t, c, 5*time.Second); res.Outcome != Answered {
				t.Errorf("result %+v", res)
			}
		})
	}
}
