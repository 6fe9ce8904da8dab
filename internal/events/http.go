package events

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/httpjson"
)

// Heartbeat is how often an idle stream gets a comment line, so proxies and
// clients can tell a quiet stream from a dead one.
const Heartbeat = 15 * time.Second

// Routes registers GET /api/events.
func (b *Bus) Routes(mux *http.ServeMux) { mux.HandleFunc("GET /api/events", b.serveSSE) }

func (b *Bus) serveSSE(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpjson.Error(w, http.StatusInternalServerError, "internal", "streaming is not supported by this connection")
		return
	}
	var after int64
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("last_event_id")
	}
	if last != "" {
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			httpjson.Error(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("Last-Event-ID %q is not a sequence number", last))
			return
		}
		after = n
	}
	q := r.URL.Query()
	sub := b.Subscribe(SubscribeOptions{ChatID: q.Get("chat"), After: after, Approver: q.Get("approver") != "0"})
	defer sub.Close()

	// The write deadline of the server must not cut a long-lived stream.
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	writeEv := func(id int64, typ string, data []byte) error {
		if id > 0 {
			if _, err := fmt.Fprintf(w, "id: %d\n", id); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data); err != nil {
			return err
		}
		fl.Flush()
		return nil
	}
	ready := &Event{Type: "ready", TS: b.clock().UTC(), Data: map[string]int64{"last_seq": b.LastSeq()}}
	if err := writeEv(0, "ready", ready.JSON()); err != nil {
		return
	}
	if sub.Gap {
		gap := &Event{Type: "reset", TS: b.clock().UTC(), Data: map[string]any{"reason": "gap", "oldest_seq": sub.OldestSeq}}
		if err := writeEv(0, "reset", gap.JSON()); err != nil {
			return
		}
	}
	hb := b.Heartbeat
	if hb <= 0 {
		hb = Heartbeat
	}
	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			fl.Flush()
		case ev, ok := <-sub.C():
			if !ok {
				if sub.Shed {
					shed := &Event{Type: "shed", TS: b.clock().UTC(), Data: map[string]string{"reason": "slow consumer"}}
					_ = writeEv(0, "shed", shed.JSON())
				}
				return
			}
			if err := writeEv(ev.Seq, ev.Type, ev.JSON()); err != nil {
				return
			}
		}
	}
}
