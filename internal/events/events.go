// Package events is the in-process event bus the agent publishes to and the
// server's SSE stream reads from. Every event gets a sequence number; the
// last events are kept in a ring so a reconnecting client can resume with
// Last-Event-ID. Each subscriber has a bounded buffer: a subscriber that
// falls behind is shed (its stream ends) instead of ever blocking Publish,
// so a slow browser tab can never stall a turn.
package events

import (
	"encoding/json"
	"sync"
	"time"
)

// Event is one published event.
type Event struct {
	Seq    int64     `json:"seq"`
	Type   string    `json:"type"`
	TS     time.Time `json:"ts"`
	ChatID string    `json:"chat_id,omitempty"`
	Data   any       `json:"data"`
	// raw caches the encoded envelope; encoding once serves every subscriber.
	raw []byte
}

// JSON returns the encoded envelope.
func (e *Event) JSON() []byte {
	if e.raw == nil {
		b, err := json.Marshal(e)
		if err != nil {
			b = []byte(`{"seq":0,"type":"error","data":{"message":"event could not be encoded"}}`)
		}
		e.raw = b
	}
	return e.raw
}

// Defaults for NewBus.
const (
	DefaultRing      = 4096
	DefaultBuffer    = 512
	DefaultRingBytes = 32 << 20
)

// Bus fans events out to subscribers.
type Bus struct {
	// Heartbeat overrides the SSE keep-alive interval (tests); 0 means
	// the package default. Set before serving.
	Heartbeat time.Duration

	clock func() time.Time
	ringN int
	bufN  int
	mu    sync.Mutex // guards the fields below
	seq   int64
	// ring[start:] holds the replayable events, oldest first: at most
	// ringN of them and at most ringBytes of encoded JSON, so a burst of
	// large tool results cannot pin unbounded memory.
	ring      []*Event
	start     int
	ringBytes int
	heldBytes int
	subs      map[*Subscription]struct{}
	nAppr     int // subscribers that count as approvers
	shed      int64
	closed    bool
}

// Stats is the bus's runtime state, for the system page and metrics.
type Stats struct {
	Subscribers int   `json:"subscribers"`
	Approvers   int   `json:"approvers"`
	Shed        int64 `json:"shed_total"` // slow consumers dropped since start
	LastSeq     int64 `json:"last_seq"`
}

// Stats returns the current subscriber counts and the shed total.
func (b *Bus) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Stats{Subscribers: len(b.subs), Approvers: b.nAppr, Shed: b.shed, LastSeq: b.seq}
}

// NewBus returns a bus keeping ring events for replay and buffering buf
// events per subscriber. Zero values take the defaults.
func NewBus(clock func() time.Time, ring, buf int) *Bus {
	if clock == nil {
		clock = time.Now
	}
	if ring <= 0 {
		ring = DefaultRing
	}
	if buf <= 0 {
		buf = DefaultBuffer
	}
	return &Bus{clock: clock, ringN: ring, bufN: buf, ringBytes: DefaultRingBytes, subs: map[*Subscription]struct{}{}}
}

// Publish records an event and offers it to every matching subscriber. It
// never blocks on a subscriber.
func (b *Bus) Publish(typ, chatID string, data any) int64 {
	if data == nil {
		data = struct{}{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	ev := &Event{Seq: b.seq, Type: typ, TS: b.clock().UTC(), ChatID: chatID, Data: data}
	ev.JSON() // encode under the lock: Data may be mutated by the caller later
	b.ring = append(b.ring, ev)
	b.heldBytes += len(ev.raw)
	for len(b.ring)-b.start > 1 && (len(b.ring)-b.start > b.ringN || b.heldBytes > b.ringBytes) {
		b.heldBytes -= len(b.ring[b.start].raw)
		b.ring[b.start] = nil
		b.start++
	}
	if b.start > len(b.ring)/2 && b.start > 64 {
		n := copy(b.ring, b.ring[b.start:])
		clear(b.ring[n:])
		b.ring, b.start = b.ring[:n], 0
	}
	for s := range b.subs {
		if !s.wants(ev) {
			continue
		}
		select {
		case s.ch <- ev:
		default:
			b.shedLocked(s)
		}
	}
	return ev.Seq
}

func (b *Bus) shedLocked(s *Subscription) {
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	if s.approver {
		b.nAppr--
	}
	s.Shed = true
	b.shed++
	close(s.ch)
}

// LastSeq is the sequence number of the newest event.
func (b *Bus) LastSeq() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// Approvers reports how many subscribers can answer approvals right now.
func (b *Bus) Approvers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nAppr
}

// ApproversFor reports how many subscribers that receive chatID's events
// can answer approvals: unfiltered ones and those filtered to that chat. A
// client watching another chat never sees the request, so it cannot answer.
func (b *Bus) ApproversFor(chatID string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for s := range b.subs {
		if s.approver && (s.chatID == "" || s.chatID == chatID) {
			n++
		}
	}
	return n
}

// Subscription is one subscriber's stream.
type Subscription struct {
	ch       chan *Event
	chatID   string
	approver bool
	// Gap is set when the requested resume point was older than the ring;
	// the client must refetch state. OldestSeq is the oldest replayable seq.
	Gap       bool
	OldestSeq int64
	// Shed is set (before C is closed) when the bus dropped a slow consumer.
	Shed bool
	// Start is the newest seq when the subscription began; C delivers
	// only later events (besides any replay asked for).
	Start int64
	bus   *Bus
}

// C delivers events; it is closed when the subscription ends or is shed.
func (s *Subscription) C() <-chan *Event { return s.ch }

func (s *Subscription) wants(ev *Event) bool {
	return s.chatID == "" || ev.ChatID == "" || ev.ChatID == s.chatID
}

// SubscribeOptions select what a subscriber gets.
type SubscribeOptions struct {
	ChatID string // only this chat's events plus global ones; "" for all
	// After resumes after this sequence number (Last-Event-ID); 0 starts
	// with new events only.
	After    int64
	Approver bool // counts as an attached approver
}

// Subscribe starts a subscription, first queueing replayed events after
// o.After still held in the ring. Replay beyond the buffer size marks the
// subscription as a gap instead of overflowing it.
func (b *Bus) Subscribe(o SubscribeOptions) *Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &Subscription{ch: make(chan *Event, b.bufN), chatID: o.ChatID, approver: o.Approver, bus: b, Start: b.seq}
	if len(b.ring) > b.start {
		s.OldestSeq = b.ring[b.start].Seq
	} else {
		s.OldestSeq = b.seq + 1
	}
	switch {
	case o.After > b.seq:
		// A seq this bus never issued comes from before a daemon restart
		// (seq starts again at 1): what happened since is unknown.
		s.Gap = true
	case o.After > 0 && o.After < b.seq:
		if o.After+1 < s.OldestSeq {
			s.Gap = true
		} else {
			for _, ev := range b.ring[b.start:] {
				if ev.Seq <= o.After || !s.wants(ev) {
					continue
				}
				select {
				case s.ch <- ev:
				default:
					s.Gap = true // too much to replay; client refetches
				}
			}
		}
	}
	if b.closed {
		close(s.ch)
		return s
	}
	b.subs[s] = struct{}{}
	if s.approver {
		b.nAppr++
	}
	return s
}

// Close ends the subscription. Safe to call more than once.
func (s *Subscription) Close() {
	b := s.bus
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; !ok {
		return
	}
	delete(b.subs, s)
	if s.approver {
		b.nAppr--
	}
	close(s.ch)
}

// Close ends every subscription (daemon shutdown).
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
	b.nAppr = 0
}

// Catchup subscribes to new events and returns, as a slice rather than
// through the bounded channel, the ring's events after o.After that the
// subscription would match. Both happen under one lock, so nothing is
// missed or repeated between them. A subscriber that was shed resumes this
// way however much it missed (a burst of thousands of deltas replays in
// full). Gap is set when the ring no longer holds o.After+1.
func (b *Bus) Catchup(o SubscribeOptions) (*Subscription, []*Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := &Subscription{ch: make(chan *Event, b.bufN), chatID: o.ChatID, approver: o.Approver, bus: b, Start: b.seq}
	s.OldestSeq = b.seq + 1
	if len(b.ring) > b.start {
		s.OldestSeq = b.ring[b.start].Seq
	}
	var missed []*Event
	switch {
	case o.After > b.seq:
		s.Gap = true
	case o.After < b.seq:
		if o.After+1 < s.OldestSeq {
			s.Gap = true
		}
		for _, ev := range b.ring[b.start:] {
			if ev.Seq > o.After && s.wants(ev) {
				missed = append(missed, ev)
			}
		}
	}
	if b.closed {
		close(s.ch)
		return s, missed
	}
	b.subs[s] = struct{}{}
	if s.approver {
		b.nAppr++
	}
	return s, missed
}
