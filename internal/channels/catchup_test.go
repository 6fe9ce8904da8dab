package channels_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
	"github.com/hestia-dev/hestia/internal/store"
)

// numLess orders ids as numbers without leading zeros (like snowflakes).
func numLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func numeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// lockedBuffer is a log destination safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// catchUpFixture is a store with chats in convs (the first made first)
// and a CatchUp logging to log.
type catchUpFixture struct {
	st  *channels.Store
	cs  *channels.Cursors
	cu  *channels.CatchUp
	log *lockedBuffer
}

func newCatchUpFixture(t *testing.T, convs ...string) *catchUpFixture {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, dbPath(t), channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	st := channels.NewStore(db, clock)
	for _, conv := range convs {
		if err := st.SetChat(ctx, channels.Mapping{Channel: "test", Conv: conv, Sender: "U1", ChatID: "c-" + conv}); err != nil {
			t.Fatal(err)
		}
	}
	log := &lockedBuffer{}
	f := &catchUpFixture{
		st:  st,
		cs:  channels.NewCursors(st, "test", ""),
		cu:  &channels.CatchUp{Platform: "test", Log: slog.New(slog.NewTextHandler(log, nil)), Less: numLess, Valid: numeric},
		log: log,
	}
	f.cu.Lend(f.cs)
	return f
}

func (f *catchUpFixture) set(t *testing.T, conv, id string) {
	t.Helper()
	if err := f.cs.Set(context.Background(), conv, id); err != nil {
		t.Fatal(err)
	}
}

func (f *catchUpFixture) cursor(t *testing.T, conv string) string {
	t.Helper()
	v, err := f.cs.Get(context.Background(), conv)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCatchUpPlanIsCappedAndMarksBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCatchUpFixture(t, "D1", "D2", "D3")
	f.set(t, "D1", "10")
	plan := f.cu.Plan(ctx, 2)
	// D1's cursor made it the most recently active.
	want := []channels.CatchUpConv{{Conv: "D1", Cursor: "10"}, {Conv: "D3"}}
	if !slices.Equal(plan, want) {
		t.Fatalf("plan = %+v, want %+v", plan, want)
	}
	if !strings.Contains(f.log.String(), "only the most recently active conversations are read") {
		t.Errorf("the cap is not logged:\n%s", f.log.String())
	}
	// Planned conversations are behind: live messages leave them alone;
	// the one left out is not.
	f.cu.Advance(ctx, "D1", "20", true)
	f.cu.Advance(ctx, "D3", "20", true)
	f.cu.Advance(ctx, "D2", "20", true)
	if got := []string{f.cursor(t, "D1"), f.cursor(t, "D3"), f.cursor(t, "D2")}; !slices.Equal(got, []string{"10", "", "20"}) {
		t.Errorf("cursors D1, D3, D2 after live messages = %q, want [10 \"\" 20]", got)
	}
	// The catch-up's own messages move them.
	f.cu.Advance(ctx, "D1", "15", false)
	if got := f.cursor(t, "D1"); got != "15" {
		t.Errorf("cursor after a caught-up message = %q, want 15", got)
	}
}

func TestCatchUpFailedListingHoldsEveryCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCatchUpFixture(t, "D1")
	f.set(t, "D1", "10")

	// Cursors whose store is closed: listing fails.
	db, err := store.Open(ctx, dbPath(t), channels.Schema)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	f.cu.Lend(channels.NewCursors(channels.NewStore(db, time.Now), "test", ""))
	if plan := f.cu.Plan(ctx, 20); len(plan) != 0 {
		t.Fatalf("plan after a failed listing = %+v, want none", plan)
	}
	if !strings.Contains(f.log.String(), "listing the conversations failed") {
		t.Errorf("the failure is not logged:\n%s", f.log.String())
	}

	// Unplanned: no conversation's cursor moves for a live message.
	f.cu.Lend(f.cs)
	f.cu.Advance(ctx, "D1", "20", true)
	f.cu.Advance(ctx, "D9", "20", true)
	if got := []string{f.cursor(t, "D1"), f.cursor(t, "D9")}; !slices.Equal(got, []string{"10", ""}) {
		t.Errorf("cursors after live messages, unplanned = %q, want [10 \"\"]", got)
	}

	// A plan that succeeds ends it for conversations not behind.
	if plan := f.cu.Plan(ctx, 20); len(plan) != 1 {
		t.Fatalf("plan = %+v, want D1", plan)
	}
	f.cu.Advance(ctx, "D9", "20", true)
	if got := f.cursor(t, "D9"); got != "20" {
		t.Errorf("cursor of a conversation not behind = %q, want 20", got)
	}
}

func TestCatchUpAdvanceNeverMovesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCatchUpFixture(t, "D1")
	f.cu.Advance(ctx, "D1", "100", true)
	// 99 is before 100 though it sorts after "100" as text.
	for _, id := range []string{"99", "100"} {
		f.cu.Advance(ctx, "D1", id, true)
		f.cu.Advance(ctx, "D1", id, false)
	}
	if got := f.cursor(t, "D1"); got != "100" {
		t.Errorf("cursor = %q, want 100 (never moved back)", got)
	}
	f.cu.Advance(ctx, "D1", "101", true)
	if got := f.cursor(t, "D1"); got != "101" {
		t.Errorf("cursor = %q, want 101", got)
	}
	// A cursor that is not one of the platform's ids is replaced.
	f.set(t, "D1", "not-an-id")
	f.cu.Advance(ctx, "D1", "5", false)
	if got := f.cursor(t, "D1"); got != "5" {
		t.Errorf("cursor after a bad one = %q, want 5", got)
	}
	// Recording goes on when the caller's context has ended: what was
	// delivered stays delivered.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	f.cu.Advance(cctx, "D1", "6", false)
	if got := f.cursor(t, "D1"); got != "6" {
		t.Errorf("cursor after a cancelled context = %q, want 6", got)
	}
}

func TestCatchUpWithoutCursorsDoesNothing(t *testing.T) {
	t.Parallel()
	var cu channels.CatchUp
	ctx := context.Background()
	if plan := cu.Plan(ctx, 20); plan != nil {
		t.Errorf("plan without cursors = %+v", plan)
	}
	cu.Advance(ctx, "D1", "1", true) // must not panic
}

func TestCatchUpRunClearsBehindOnlyOnSuccess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newCatchUpFixture(t, "D1", "D2")
	plan := f.cu.Plan(ctx, 20)
	var seen []string
	f.cu.Run(ctx, plan, func(ctx context.Context, conv, cursor string) (int, error) {
		seen = append(seen, conv)
		f.cu.Advance(ctx, conv, "10", false)
		if conv == "D1" {
			return 1, errors.New("history unavailable")
		}
		return 2, nil
	})
	if !slices.Equal(seen, []string{"D2", "D1"}) {
		t.Errorf("ran %q, want the plan's order [D2 D1]", seen)
	}
	f.cu.Advance(ctx, "D1", "20", true)
	f.cu.Advance(ctx, "D2", "20", true)
	if got := []string{f.cursor(t, "D1"), f.cursor(t, "D2")}; !slices.Equal(got, []string{"10", "20"}) {
		t.Errorf("cursors D1 (failed), D2 (caught up) after live messages = %q, want [10 20]", got)
	}
	for _, w := range []string{"history unavailable", "live messages still arrive", "test catch-up done", "delivered=3", "event=testCatchUpDone"} {
		if !strings.Contains(f.log.String(), w) {
			t.Errorf("the log does not say %q:\n%s", w, f.log.String())
		}
	}
}

func TestCatchUpRunStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newCatchUpFixture(t, "D1", "D2")
	ctx, cancel := context.WithCancel(context.Background())
	plan := f.cu.Plan(ctx, 20)
	calls := 0
	f.cu.Run(ctx, plan, func(context.Context, string, string) (int, error) {
		calls++
		cancel()
		return 0, nil
	})
	if calls != 1 {
		t.Errorf("%d conversations run after the context ended, want 1", calls)
	}
	// Cut short, the conversation is still behind.
	f.cu.Advance(context.Background(), plan[0].Conv, "20", true)
	if got := f.cursor(t, plan[0].Conv); got != "" {
		t.Errorf("cursor of a conversation cut short = %q, want none", got)
	}
}

func TestCatchUpRetryAfter(t *testing.T) {
	t.Parallel()
	limited := &channels.RetryAfterError{Err: errors.New("HTTP 429"), After: time.Millisecond}

	t.Run("waits out rate limits", func(t *testing.T) {
		t.Parallel()
		f := newCatchUpFixture(t)
		calls := 0
		err := f.cu.RetryAfter(context.Background(), 5, func() error {
			if calls++; calls < 3 {
				return limited
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Errorf("RetryAfter = %v after %d calls, want nil after 3", err, calls)
		}
		if !strings.Contains(f.log.String(), "rate limited; waiting") {
			t.Errorf("the wait is not logged:\n%s", f.log.String())
		}
	})

	t.Run("gives up after the tries", func(t *testing.T) {
		t.Parallel()
		f := newCatchUpFixture(t)
		calls := 0
		err := f.cu.RetryAfter(context.Background(), 3, func() error {
			calls++
			return limited
		})
		if !errors.Is(err, limited) || calls != 3 {
			t.Errorf("RetryAfter = %v after %d calls, want the rate limit after 3", err, calls)
		}
	})

	t.Run("other errors are not retried", func(t *testing.T) {
		t.Parallel()
		f := newCatchUpFixture(t)
		calls := 0
		boom := errors.New("HTTP 500")
		err := f.cu.RetryAfter(context.Background(), 5, func() error {
			calls++
			return boom
		})
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("RetryAfter = %v after %d calls, want the error after 1", err, calls)
		}
	})

	t.Run("stops when the context ends", func(t *testing.T) {
		t.Parallel()
		f := newCatchUpFixture(t)
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		done := make(chan error, 1)
		go func() {
			done <- f.cu.RetryAfter(ctx, 5, func() error {
				calls++
				return &channels.RetryAfterError{Err: errors.New("HTTP 429"), After: time.Hour}
			})
		}()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || calls != 1 {
				t.Errorf("RetryAfter = %v after %d calls, want context.Canceled after 1", err, calls)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("RetryAfter waited out an hour-long rate limit after its context ended")
		}
	})
}
