package events

import "testing"

// A client that kept a Last-Event-ID from before a daemon restart asks to
// resume after a sequence number the new bus never issued. It missed
// whatever happened in between, so it must be told to refetch (a gap),
// not be resumed silently.
func TestResumeFromAFutureSeqIsAGap(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 8, 16)
	b.Publish("a", "", nil)
	b.Publish("b", "", nil)
	s := b.Subscribe(SubscribeOptions{After: 500})
	if !s.Gap {
		t.Fatalf("resume after seq 500 on a bus at seq %d is not a gap", b.LastSeq())
	}
	if got := drain(s); got != "" {
		t.Errorf("replayed %s", got)
	}
	// On an empty bus (just restarted, nothing published yet) too.
	if e := NewBus(nil, 8, 16).Subscribe(SubscribeOptions{After: 3}); !e.Gap {
		t.Error("resume after seq 3 on a fresh bus is not a gap")
	}
	// At the head is no gap.
	if h := b.Subscribe(SubscribeOptions{After: b.LastSeq()}); h.Gap {
		t.Error("resume at the head is a gap")
	}
}

// A subscriber filtered to one chat never sees another chat's approval
// requests, so it must not count as that chat's approver.
func TestApproversForCountsOnlySubscribersThatSeeTheChat(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 8, 16)
	a := b.Subscribe(SubscribeOptions{ChatID: "A", Approver: true})
	b.Subscribe(SubscribeOptions{ChatID: "B"}) // not an approver
	if n := b.ApproversFor("A"); n != 1 {
		t.Errorf("approvers for A = %d, want 1", n)
	}
	if n := b.ApproversFor("B"); n != 0 {
		t.Errorf("approvers for B = %d, want 0 (only chat A's subscriber approves)", n)
	}
	all := b.Subscribe(SubscribeOptions{Approver: true})
	if b.ApproversFor("B") != 1 || b.ApproversFor("A") != 2 {
		t.Errorf("with an unfiltered approver: A %d, B %d", b.ApproversFor("A"), b.ApproversFor("B"))
	}
	a.Close()
	all.Close()
	if b.ApproversFor("A") != 0 || b.Approvers() != 0 {
		t.Errorf("after close: A %d, all %d", b.ApproversFor("A"), b.Approvers())
	}
}
