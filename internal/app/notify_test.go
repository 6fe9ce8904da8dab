package app

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/approval"
	"github.com/hestia-dev/hestia/internal/events"
	"github.com/hestia-dev/hestia/internal/notify"
)

// A decided approval leaves the inbox's "new" list: the worker that turns
// approval.requested into a notification marks it read on approval.resolved.
func TestDecidedApprovalNotificationIsRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n, err := notify.Open(ctx, filepath.Join(t.TempDir(), "notify.db"), notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	bus := events.NewBus(time.Now, 64, 64)
	a := &App{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	done := make(chan error, 1)
	go func() { done <- a.notifyFromEvents(ctx, bus, n) }()
	defer func() { cancel(); <-done }()

	unread := func() int {
		in, err := n.List(ctx, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		return in.Unread
	}
	wait := func(want int) {
		t.Helper()
		for i := 0; i < 200 && unread() != want; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if got := unread(); got != want {
			t.Fatalf("unread = %d, want %d", got, want)
		}
	}
	// The subscription starts in the goroutine: publish until it is seen.
	for i := 0; i < 200 && unread() == 0; i++ {
		bus.Publish("approval.requested", "c1", map[string]any{"approval": approval.Request{ID: "a1", ChatID: "c1", Tool: "write_file"}})
		time.Sleep(10 * time.Millisecond)
	}
	bus.Publish("approval.requested", "c1", map[string]any{"approval": approval.Request{ID: "a2", ChatID: "c1", Tool: "send_mail"}})
	wait(2)
	bus.Publish("approval.resolved", "c1", map[string]any{"id": "a1", "decision": "approved"})
	wait(1)
	// A resolution without an id, or of an approval never notified, changes nothing.
	bus.Publish("approval.resolved", "c1", map[string]any{"decision": "denied"})
	bus.Publish("approval.resolved", "c1", map[string]any{"id": "zz", "decision": "denied"})
	bus.Publish("approval.resolved", "c1", map[string]any{"id": "a2", "decision": "timeout"})
	wait(0)
}
