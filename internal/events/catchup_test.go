package events

import "testing"

// A shed subscriber catches up with everything it missed, however much,
// and then receives new events, with nothing missed or repeated.
func TestCatchupAfterShed(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 10000, 4)
	s := b.Subscribe(SubscribeOptions{ChatID: "c1"})
	if s.Start != 0 {
		t.Fatalf("start %d", s.Start)
	}
	b.Publish("a", "c1", nil) // seq 1, read below
	ev := <-s.C()
	for i := 0; i < 3000; i++ {
		b.Publish("message.delta", "c1", map[string]int{"i": i})
		b.Publish("other", "c2", nil)
	}
	fin := b.Publish("turn.finished", "c1", nil)
	if _, ok := <-drainTo(s); ok || !s.Shed {
		t.Fatal("the slow subscriber was not shed")
	}
	s2, missed := b.Catchup(SubscribeOptions{ChatID: "c1", After: ev.Seq})
	defer s2.Close()
	if s2.Gap || len(missed) != 3001 || missed[len(missed)-1].Seq != fin || missed[0].Seq != 2 {
		t.Fatalf("gap %v, missed %d", s2.Gap, len(missed))
	}
	for _, m := range missed {
		if m.ChatID != "c1" {
			t.Fatalf("another chat's event replayed: %+v", m)
		}
	}
	if s2.Start != fin {
		t.Fatalf("start %d, want %d", s2.Start, fin)
	}
	next := b.Publish("after", "c1", nil)
	if got := <-s2.C(); got.Seq != next {
		t.Fatalf("next event %d, want %d", got.Seq, next)
	}
	// A resume point the ring no longer holds is a gap.
	small := NewBus(nil, 8, 4)
	for i := 0; i < 20; i++ {
		small.Publish("x", "c1", nil)
	}
	s3, missed := small.Catchup(SubscribeOptions{ChatID: "c1", After: 2})
	defer s3.Close()
	if !s3.Gap || len(missed) != 8 {
		t.Fatalf("gap %v, missed %d", s3.Gap, len(missed))
	}
}

// drainTo reads s until it is closed and returns the closed channel.
func drainTo(s *Subscription) <-chan *Event {
	for range s.C() {
	}
	return s.C()
}
