package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// collector is a Commit that records every committed item and fails the
// batch holding fail (when set).
type collector struct {
	mu        sync.Mutex
	committed []int
	batches   int
	fail      int
}

var errCommit = errors.New("disk full (injected)")

func (c *collector) commit(_ context.Context, batch []int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != 0 && slices.Contains(batch, c.fail) {
		return fmt.Errorf("writing batch: %w", errCommit)
	}
	c.committed = append(c.committed, batch...)
	c.batches++
	return nil
}

func numbers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i + 1)
	}
	return out
}

// parseNumber yields the input's number weighing 100 bytes; "bad" inputs fail.
func parseNumber(_ context.Context, in string, emit func(int, int64) error) error {
	n, err := strconv.Atoi(in)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", in, err)
	}
	return emit(n, 100)
}

// runWithin runs p and fails the test if it has not returned in time: a
// hang is the failure these tests look for.
func runWithin(t *testing.T, ctx context.Context, p Pipeline[string, int], inputs []string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, inputs) }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunCommitsEverything(t *testing.T) {
	t.Parallel()
	for _, l := range []Limits{
		{},
		{Workers: 1, BatchSize: 1},
		{Workers: 4, BatchSize: 7, BatchBytes: 250, QueueBytes: 500, QueueLen: 1},
		{BatchBytes: 100, QueueBytes: 1}, // raised to 2×BatchBytes
	} {
		t.Run(fmt.Sprintf("%+v", l), func(t *testing.T) {
			t.Parallel()
			c := &collector{}
			err := runWithin(t, context.Background(), Pipeline[string, int]{Parse: parseNumber, Commit: c.commit, Limits: l}, numbers(300))
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(c.committed)
			if len(c.committed) != 300 || c.committed[0] != 1 || c.committed[299] != 300 {
				t.Fatalf("committed %d items: %v", len(c.committed), c.committed)
			}
		})
	}
}

func TestRunNoInputs(t *testing.T) {
	t.Parallel()
	c := &collector{}
	if err := (Pipeline[string, int]{Parse: parseNumber, Commit: c.commit}).Run(context.Background(), nil); err != nil || c.batches != 0 {
		t.Fatalf("Run(nil) = %v after %d commits", err, c.batches)
	}
}

// TestRunBatchesByCountAndWeight: a batch is committed when it reaches
// BatchSize items or BatchBytes of weight, whichever comes first; an item
// heavier than BatchBytes counts as BatchBytes.
func TestRunBatchesByCountAndWeight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limits Limits
		weight int64
		want   int // batches for 12 items
	}{
		{"count", Limits{Workers: 1, BatchSize: 4, BatchBytes: 1 << 20}, 10, 3},
		{"weight", Limits{Workers: 1, BatchSize: 100, BatchBytes: 30}, 10, 4},
		{"heavy items", Limits{Workers: 1, BatchSize: 100, BatchBytes: 30}, 1 << 30, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := &collector{}
			p := Pipeline[string, int]{
				Parse:  func(_ context.Context, in string, emit func(int, int64) error) error { return emit(len(in), tc.weight) },
				Commit: c.commit, Limits: tc.limits,
			}
			if err := runWithin(t, context.Background(), p, numbers(12)); err != nil {
				t.Fatal(err)
			}
			if c.batches != tc.want || len(c.committed) != 12 {
				t.Fatalf("%d items in %d batches, want 12 in %d", len(c.committed), c.batches, tc.want)
			}
		})
	}
}

// TestRunCommitFailure: a failed commit ends the run promptly with its
// error, even with far more items left than the queue's budget holds, and
// parsing stops; the batches committed before it stay committed.
func TestRunCommitFailure(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 4} {
		t.Run(strconv.Itoa(workers), func(t *testing.T) {
			t.Parallel()
			c := &collector{fail: 50}
			var parsed atomic.Int64
			p := Pipeline[string, int]{
				Parse: func(ctx context.Context, in string, emit func(int, int64) error) error {
					parsed.Add(1)
					return parseNumber(ctx, in, emit)
				},
				Commit: c.commit,
				Limits: Limits{Workers: workers, BatchSize: 5, BatchBytes: 500, QueueBytes: 1000, QueueLen: 2},
			}
			// Under context.Background: a hang would last forever.
			err := runWithin(t, context.Background(), p, numbers(5000))
			if !errors.Is(err, errCommit) {
				t.Fatalf("Run = %v, want the commit's error", err)
			}
			if len(c.committed) == 0 || slices.Contains(c.committed, 50) {
				t.Fatalf("committed before the failure: %v", c.committed)
			}
			if n := parsed.Load(); n > 200 {
				t.Errorf("parsed %d of 5000 inputs after the failure", n)
			}
		})
	}
}

// TestRunParseFailureSkipped: an input that fails to parse is reported to
// Skip with its error and left out; the others are committed.
func TestRunParseFailureSkipped(t *testing.T) {
	t.Parallel()
	c := &collector{}
	var mu sync.Mutex
	skipped := map[string]error{}
	inputs := append(numbers(40), "bad")
	inputs = append(inputs, numbers(40)...)
	p := Pipeline[string, int]{
		Parse:  parseNumber,
		Commit: c.commit,
		Skip: func(in string, err error) {
			mu.Lock()
			skipped[in] = err
			mu.Unlock()
		},
		Limits: Limits{BatchSize: 8},
	}
	if err := runWithin(t, context.Background(), p, inputs); err != nil {
		t.Fatal(err)
	}
	if len(c.committed) != 80 {
		t.Errorf("committed %d items, want 80", len(c.committed))
	}
	if err := skipped["bad"]; len(skipped) != 1 || err == nil || !errors.Is(err, strconv.ErrSyntax) {
		t.Errorf("skipped = %v, want only \"bad\" with its parse error", skipped)
	}
}

// TestRunCancelled: cancelling the context ends the run with the
// context's error, whether the parsers or the writer are waiting, and
// nothing is committed after it.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	t.Run("parsers blocked on the budget", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		var after atomic.Int64
		var cancelled atomic.Bool
		p := Pipeline[string, int]{
			Parse: parseNumber,
			Commit: func(ctx context.Context, batch []int) error {
				if cancelled.Load() {
					after.Add(1)
				}
				cancelled.Store(true)
				cancel()
				return nil
			},
			Limits: Limits{Workers: 2, BatchSize: 3, BatchBytes: 300, QueueBytes: 600, QueueLen: 1},
		}
		if err := runWithin(t, ctx, p, numbers(10000)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if n := after.Load(); n != 0 {
			t.Errorf("%d batches committed after the cancellation", n)
		}
	})
	t.Run("writer waiting", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		c := &collector{}
		p := Pipeline[string, int]{
			Parse: func(ctx context.Context, in string, emit func(int, int64) error) error {
				if in == "3" {
					cancel()
					<-ctx.Done()
					return ctx.Err()
				}
				return parseNumber(ctx, in, emit)
			},
			Skip:   func(in string, err error) { t.Errorf("skipped %s (%v) after the cancellation", in, err) },
			Commit: c.commit,
			Limits: Limits{Workers: 1, BatchSize: 100},
		}
		if err := runWithin(t, ctx, p, numbers(10)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if c.batches != 0 {
			t.Errorf("committed %v after the cancellation", c.committed)
		}
	})
}

// TestRunCommitsUnderTheCallersContext: Commit gets Run's context as
// given, not one derived to stop the parsers: under a context that cannot
// be cancelled database/sql starts no watcher goroutine per statement (a
// mail import runs several statements per message).
func TestRunCommitsUnderTheCallersContext(t *testing.T) {
	t.Parallel()
	commits := 0
	p := Pipeline[string, int]{
		Parse: parseNumber,
		Commit: func(ctx context.Context, batch []int) error {
			commits++
			if ctx.Done() != nil {
				t.Error("Commit got a cancellable context under context.Background")
			}
			return nil
		},
		Limits: Limits{BatchSize: 3},
	}
	if err := runWithin(t, context.Background(), p, numbers(10)); err != nil || commits != 4 {
		t.Fatalf("Run = %v after %d commits, want 4", err, commits)
	}
}
