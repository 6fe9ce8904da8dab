package usage

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/store"
)

func countCalls(t *testing.T, l *Ledger, provider string) int {
	t.Helper()
	var n int
	if err := l.db.QueryRowContext(context.Background(), `SELECT count(*) FROM llm_calls WHERE provider = ?`, provider).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLocalRowsWrittenInBackground: while Run runs, rows of the local
// provider are queued and written in batches, every one of them by the
// time Run returns; a billed row is written before RecordCall returns, so
// budgets see it at once; without Run, and with a full queue, local rows
// are written by their callers.
func TestLocalRowsWrittenInBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "usage.db"), Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	l := New(db, slog.New(slog.NewTextHandler(t.Output(), nil)), func() time.Time { return at }, nil)
	local := llm.CallRecord{Start: at, Service: "mail", Action: "embed", Kind: "embed", Provider: llm.LocalProvider, Model: llm.LocalEmbedModel, Outcome: "ok", Attempts: 1}
	paid := llm.CallRecord{Start: at, Service: "agent", Action: "turn", Provider: "openai", Model: "gpt-x", Usage: llm.Usage{InputTokens: 1000}, Outcome: "ok", Attempts: 1}

	// No writer: written by the caller.
	l.RecordCall(ctx, local)
	if n := countCalls(t, l, llm.LocalProvider); n != 1 {
		t.Fatalf("without Run: %d local rows, want 1", n)
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- l.Run(runCtx) }()
	for {
		l.qmu.RLock()
		running := l.queue != nil
		l.qmu.RUnlock()
		if running {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Run(ctx); err == nil {
		t.Fatal("a second writer started")
	}
	const n = 3000 // more than the queue holds at once, whatever the writer keeps up with
	for range n {
		l.RecordCall(ctx, local)
	}
	l.RecordCall(ctx, paid)
	if got := countCalls(t, l, "openai"); got != 1 {
		t.Fatalf("billed row not written before RecordCall returned: %d", got)
	}
	if s, err := l.SpendSince(ctx, at.Add(-time.Hour)); err != nil || s.Tokens != 1000 {
		t.Fatalf("spend right after the billed call: %+v, %v", s, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := countCalls(t, l, llm.LocalProvider); got != n+1 {
		t.Fatalf("after Run returned: %d local rows, want %d", got, n+1)
	}

	// After Run: written by the caller again.
	l.RecordCall(ctx, local)
	if got := countCalls(t, l, llm.LocalProvider); got != n+2 {
		t.Fatalf("after Run: %d local rows, want %d", got, n+2)
	}
	// A full queue: written by the caller.
	l.qmu.Lock()
	l.queue = make(chan llm.CallRecord) // nobody receives
	l.qmu.Unlock()
	l.RecordCall(ctx, local)
	if got := countCalls(t, l, llm.LocalProvider); got != n+3 {
		t.Fatalf("full queue: %d local rows, want %d", got, n+3)
	}
}
