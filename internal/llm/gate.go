package llm

import (
	"context"
	"errors"
	"sync"
)

// A local model serves one request at a time at full speed: a background
// call (memory review, mail promotion, the Action Center planner, a watch's
// message) that runs beside the user's chat turn on the same CPU slows
// both, and made the turn time out. On local endpoints the router therefore
// runs background calls one at a time, only while no foreground call (a chat
// turn, a sub-agent, a gateway client) runs, and stops a background call
// that has not shown output when a foreground one starts; it is sent again
// once the foreground calls are done.

// errPreempted is the cause a background call is stopped with.
var errPreempted = errors.New("llm: background call paused for a foreground call")

// priorityGate orders calls to local endpoints.
type priorityGate struct {
	mu      sync.Mutex    // guards the fields below
	fg      int           // foreground calls running
	bg      bool          // a background call holds the slot
	stopBg  func()        // preempts the running background call
	changed chan struct{} // closed on every change, then replaced
}

func newPriorityGate() *priorityGate { return &priorityGate{changed: make(chan struct{})} }

func (g *priorityGate) broadcast() {
	close(g.changed)
	g.changed = make(chan struct{})
}

// foreground registers a foreground call, preempting a running background
// one, and returns the function that ends it.
func (g *priorityGate) foreground() (done func()) {
	g.mu.Lock()
	g.fg++
	if g.bg && g.stopBg != nil {
		g.stopBg()
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.fg--
			g.broadcast()
			g.mu.Unlock()
		})
	}
}

// background waits until no foreground call runs and the background slot
// is free, then takes the slot. The returned context is cancelled with
// errPreempted when a foreground call starts; done frees the slot.
func (g *priorityGate) background(ctx context.Context) (context.Context, func(), error) {
	g.mu.Lock()
	for g.fg > 0 || g.bg {
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-ch:
		}
		g.mu.Lock()
	}
	bctx, cancel := context.WithCancelCause(ctx)
	g.bg = true
	g.stopBg = func() { cancel(errPreempted) }
	g.mu.Unlock()
	var once sync.Once
	return bctx, func() {
		once.Do(func() {
			g.mu.Lock()
			g.bg, g.stopBg = false, nil
			g.broadcast()
			g.mu.Unlock()
			cancel(nil)
		})
	}, nil
}

// Background reports whether a request is background work: anything but
// the agent's turns (chat, sub-agents) and gateway clients that name no
// Hestia service.
func (req Request) Background() bool {
	switch req.Service {
	case "", "unknown", "agent", "gateway":
		return false
	}
	return true
}
