package sipcall

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/voice/sipcall/siptest"
)

// A user agent that placed calls (one answered and hung up, one refused)
// or took one leaves no goroutine behind once closed. Not parallel: it counts the
// process's goroutines.
func TestClosedManagerLeavesNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Run("calls", func(t *testing.T) {
		answering := siptest.StartPeer(t, siptest.PeerOptions{RTPFor: time.Minute})
		busy := siptest.StartPeer(t, siptest.PeerOptions{Status: 486})
		r := newRig(t, Config{To: answering.URI})
		c, err := r.m.Call(context.Background(), CallRequest{Origin: "test"})
		if err != nil {
			t.Fatal(err)
		}
		if !siptest.WaitFor(context.Background(), 5*time.Second, func() bool { return c.State() == StateAnswered }) {
			t.Fatal("not answered")
		}
		c.Hangup()
		waitResult(t, c, 5*time.Second)
		r2 := newRig(t, Config{To: busy.URI})
		c2, err := r2.m.Call(context.Background(), CallRequest{Origin: "test"})
		if err != nil {
			t.Fatal(err)
		}
		waitResult(t, c2, 5*time.Second)
		// An inbound call, answered and hung up by the caller at the PIN.
		r3 := newRig(t, inboundConfig(Config{}))
		out := callHestia(t, r3, siptest.StartPeer(t, siptest.PeerOptions{}), siptest.CallOptions{From: owner})
		if out.Status != 200 {
			t.Fatalf("inbound call answered %d", out.Status)
		}
		hctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = out.Hangup(hctx)
		waitResult(t, lastCall(t, r3), 10*time.Second)
	})
	// Timers of finished transactions end within their own timeouts; a
	// leak is a goroutine that stays.
	var after int
	if !siptest.WaitFor(context.Background(), 40*time.Second, func() bool { after = runtime.NumGoroutine(); return after <= before+1 }) {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		t.Fatalf("%d goroutines before, %d after closing:\n%s", before, after, buf[:n])
	}
}
