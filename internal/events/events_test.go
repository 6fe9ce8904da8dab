package events

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPublishSubscribeFilterAndReplay(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 8, 16)
	all := b.Subscribe(SubscribeOptions{})
	c1 := b.Subscribe(SubscribeOptions{ChatID: "c1", Approver: true})
	if b.Approvers() != 1 {
		t.Errorf("approvers = %d", b.Approvers())
	}
	b.Publish("a", "c1", nil)
	b.Publish("b", "c2", nil)
	b.Publish("global", "", map[string]int{"x": 1})
	if got := drain(all); got != "a,b,global" {
		t.Errorf("all got %s", got)
	}
	if got := drain(c1); got != "a,global" {
		t.Errorf("c1 got %s", got)
	}
	c1.Close()
	c1.Close()
	if b.Approvers() != 0 {
		t.Errorf("approvers after close = %d", b.Approvers())
	}
	// Resume after seq 1 replays 2 and 3.
	r := b.Subscribe(SubscribeOptions{After: 1})
	if got := drain(r); got != "b,global" || r.Gap {
		t.Errorf("replay got %s gap %v", got, r.Gap)
	}
	// Overflow the ring: resuming from 1 is now a gap.
	for i := 0; i < 10; i++ {
		b.Publish("x", "", nil)
	}
	if g := b.Subscribe(SubscribeOptions{After: 1}); !g.Gap || g.OldestSeq != 6 {
		t.Errorf("gap = %v oldest %d", g.Gap, g.OldestSeq)
	}
	if ev := b.Subscribe(SubscribeOptions{After: b.LastSeq()}); ev.Gap || len(ev.C()) != 0 {
		t.Error("resume at the head replayed something")
	}
}

func drain(s *Subscription) string {
	var out []string
	for {
		select {
		case ev := <-s.C():
			out = append(out, ev.Type)
		default:
			return strings.Join(out, ",")
		}
	}
}

func TestSlowConsumerIsShed(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 0, 4)
	slow := b.Subscribe(SubscribeOptions{Approver: true})
	fast := b.Subscribe(SubscribeOptions{})
	done := make(chan struct{})
	go func() {
		for range fast.C() {
		}
		close(done)
	}()
	start := time.Now()
	for i := 0; i < 1000; i++ {
		b.Publish("tick", "", nil)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("publishing stalled: %s", el)
	}
	n := 0
	for range slow.C() {
		n++
	}
	if !slow.Shed || n != 4 {
		t.Errorf("slow shed=%v after %d events", slow.Shed, n)
	}
	if b.Approvers() != 0 {
		t.Errorf("shed approver still counted")
	}
	if st := b.Stats(); st.Shed < 1 || st.Subscribers > 1 || st.Approvers != 0 || st.LastSeq != 1000 {
		t.Errorf("stats after shedding: %+v", st)
	}
	fast.Close()
	<-done
	if st := b.Stats(); st.Subscribers != 0 {
		t.Errorf("stats after close: %+v", st)
	}
}

func TestSSEResume(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 0, 0)
	mux := http.NewServeMux()
	b.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	b.Publish("one", "c1", map[string]string{"v": "1"})
	b.Publish("two", "c2", nil)
	b.Publish("three", "c1", nil)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?chat=c1", nil)
	req.Header.Set("Last-Event-ID", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	next := func() (id, typ, data string) {
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if typ != "" {
					return
				}
			case strings.HasPrefix(l, "id: "):
				id = l[4:]
			case strings.HasPrefix(l, "event: "):
				typ = l[7:]
			case strings.HasPrefix(l, "data: "):
				data = l[6:]
			}
		}
		return
	}
	if _, typ, data := next(); typ != "ready" || !strings.Contains(data, `"last_seq":3`) {
		t.Fatalf("first event %s %s", typ, data)
	}
	if id, typ, data := next(); id != "3" || typ != "three" || !strings.Contains(data, `"chat_id":"c1"`) {
		t.Errorf("replayed %s %s %s", id, typ, data)
	}
	b.Publish("four", "c1", map[string]string{"k": "v"})
	if id, typ, data := next(); id != "4" || typ != "four" || !strings.Contains(data, `"data":{"k":"v"}`) {
		t.Errorf("live %s %s %s", id, typ, data)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/api/events", nil)
	r.Header.Set("Last-Event-ID", "abc")
	mux.ServeHTTP(w, r)
	if w.Code != 400 {
		t.Errorf("bad Last-Event-ID: %d", w.Code)
	}
}

func TestSSEGapSendsReset(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 2, 0)
	for i := 0; i < 5; i++ {
		b.Publish("x", "", nil)
	}
	mux := http.NewServeMux()
	b.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events?last_event_id=1", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var types []string
	for sc.Scan() && len(types) < 2 {
		if l := sc.Text(); strings.HasPrefix(l, "event: ") {
			types = append(types, l[7:])
		}
	}
	if strings.Join(types, ",") != "ready,reset" {
		t.Errorf("types %v", types)
	}
	b.Close() // ends the stream
}

func TestRingBoundedByBytes(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 1000, 0)
	b.ringBytes = 10_000
	big := strings.Repeat("x", 3000)
	for i := 0; i < 50; i++ {
		b.Publish("big", "", big)
	}
	if held := len(b.ring) - b.start; held > 4 || b.heldBytes > 10_000 {
		t.Errorf("ring holds %d events, %d bytes", held, b.heldBytes)
	}
	s := b.Subscribe(SubscribeOptions{After: b.LastSeq() - 2})
	if got := drain(s); got != "big,big" || s.Gap {
		t.Errorf("replay %q gap %v", got, s.Gap)
	}
	// Sequence numbers and order survive compaction.
	for i := 0; i < 500; i++ {
		b.Publish("small", "", i)
	}
	prev := int64(0)
	for _, ev := range b.ring[b.start:] {
		if ev.Seq <= prev {
			t.Fatalf("ring out of order at %d", ev.Seq)
		}
		prev = ev.Seq
	}
}

func TestSSEHeartbeat(t *testing.T) {
	t.Parallel()
	b := NewBus(nil, 0, 0)
	b.Heartbeat = 20 * time.Millisecond
	mux := http.NewServeMux()
	b.Routes(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == ": ping" {
			return
		}
	}
	t.Fatal("no heartbeat")
}
