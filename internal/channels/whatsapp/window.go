package whatsapp

import (
	"slices"
	"sync"
	"time"
)

// The customer service window: a business may send free-form messages to
// a person only within 24 hours of that person's last message; outside it
// only approved templates go through (Meta answers error 131047).
const (
	serviceWindow = 24 * time.Hour
	// windowSlack treats the window as closed a little early: a message
	// accepted just before the deadline can still fail after it, and that
	// failure only comes back later by status webhook.
	windowSlack = 2 * time.Minute
	// nudgeEvery spaces re-engagement templates that carry no text: one
	// is enough until the person answers.
	nudgeEvery = 12 * time.Hour
	// maxPeers bounds the table; older entries are dropped beyond it.
	maxPeers = 10000
)

type windowState int

const (
	windowUnknown windowState = iota // never seen since start: let the API say
	windowOpen
	windowClosed
)

// peers remembers, in memory only, when each wa_id last wrote and whether
// the API said their window is closed. A restart forgets everything, and
// an unknown window is tried as if open.
type peers struct {
	mu sync.Mutex // guards m
	m  map[string]*peer
}

type peer struct {
	lastIn time.Time // the newest inbound message's time (Meta's timestamp)
	closed bool      // the API reported the window closed since lastIn
	nudged time.Time // when a text-less template last went out
}

func newPeers() *peers { return &peers{m: map[string]*peer{}} }

func (p *peers) get(id string) *peer {
	e := p.m[id]
	if e == nil {
		if len(p.m) >= maxPeers {
			p.prune()
		}
		e = &peer{}
		p.m[id] = e
	}
	return e
}

// prune drops the entries that wrote longest ago, down to three
// quarters of the bound; it runs only when the table is full.
func (p *peers) prune() {
	ids := make([]string, 0, len(p.m))
	for id := range p.m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return p.m[a].lastIn.Compare(p.m[b].lastIn) })
	for _, id := range ids[:len(ids)-maxPeers*3/4] {
		delete(p.m, id)
	}
}

// inbound records a message from id written at t.
func (p *peers) inbound(id string, t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.get(id)
	if t.After(e.lastIn) {
		e.lastIn, e.closed, e.nudged = t, false, time.Time{}
	}
}

// markClosed records that the API refused a free-form message to id.
func (p *peers) markClosed(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.get(id).closed = true
}

func (p *peers) state(id string, now time.Time) windowState {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[id]
	switch {
	case e == nil:
		return windowUnknown
	case e.closed:
		return windowClosed
	case e.lastIn.IsZero():
		return windowUnknown
	case now.Sub(e.lastIn) >= serviceWindow-windowSlack:
		return windowClosed
	default:
		return windowOpen
	}
}

// nudge reports whether a text-less template may go to id now and, if
// so, records it as sent; the time of the last one otherwise.
func (p *peers) nudge(id string, now time.Time) (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.get(id)
	if !e.nudged.IsZero() && now.Sub(e.nudged) < nudgeEvery {
		return false, e.nudged
	}
	e.nudged = now
	return true, time.Time{}
}

// unnudge forgets a nudge whose template failed to send.
func (p *peers) unnudge(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.m[id]; e != nil {
		e.nudged = time.Time{}
	}
}
