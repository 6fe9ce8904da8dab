// Package ingest is the parse-then-write pipeline the mail and calendar
// imports share: inputs (files) are parsed on every core, what they yield
// waits for one writer under a byte budget, and the writer commits it in
// batches. SQLite has one writer and parsing dominates an import's cost;
// the budget keeps a folder of huge items from piling up in memory.
//
// Run returns when every input is parsed and every batch committed, or at
// the first failed commit (with its error), or when the context ends. A
// parse failure skips that input only and is reported to Pipeline.Skip.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// the parse-then-write pipeline of the mail and calendar imports: parse workers on every core, a
// byte budget bounding what waits for the single writer, batches committed by count or bytes; a
// failed commit or cancellation stops the parsers and releases every waiting item's bytes, a
// failed parse skips that input and is reported.
package ingest

import (
	"context"
	"runtime"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Limits bound a pipeline's batches and what waits for its writer. Zero
// fields take the defaults.
type Limits struct {
	Workers    int   // parse workers (default GOMAXPROCS)
	BatchSize  int   // items per commit (default 500)
	BatchBytes int64 // item weight per commit (default 16 MiB)
	// QueueBytes bounds the weight parsed ahead of the writer (default
	// 64 MiB, at least 2×BatchBytes: see Run).
	QueueBytes int64
	QueueLen   int // items waiting for the writer (default 512)
}

func (l Limits) withDefaults() Limits {
	if l.Workers <= 0 {
		l.Workers = max(1, runtime.GOMAXPROCS(0))
	}
	if l.BatchSize <= 0 {
		l.BatchSize = 500
	}
	if l.BatchBytes <= 0 {
		l.BatchBytes = 16 << 20
	}
	if l.QueueBytes <= 0 {
		l.QueueBytes = 64 << 20
	}
	l.QueueBytes = max(l.QueueBytes, 2*l.BatchBytes)
	if l.QueueLen <= 0 {
		l.QueueLen = 512
	}
	return l
}

// Pipeline parses inputs of type In into items of type Out and commits
// them in batches.
type Pipeline[In, Out any] struct {
	// Parse reads one input and hands what it yields to emit, any number
	// of items (an mbox file holds many messages), each with its weight
	// (its bytes held in memory). An error from emit means the pipeline
	// stopped: Parse should return it. Parse runs on several goroutines.
	Parse func(ctx context.Context, in In, emit func(out Out, weight int64) error) error
	// Skip, when set, is told of each input whose Parse failed while the
	// pipeline was running; the others go on. It runs on the parsers'
	// goroutines.
	Skip func(in In, err error)
	// Commit writes one batch, from a single goroutine (Run's), with
	// Run's context as given: under one that cannot be cancelled,
	// database/sql starts no goroutine per statement to watch it. Its
	// error ends the run: the parsers stop and Run returns it.
	Commit func(ctx context.Context, batch []Out) error
	Limits Limits
}

type weighted[Out any] struct {
	out    Out
	weight int64
}

// Run parses inputs in order of hand-out (the order items reach Commit
// varies with the parsers' speed) and commits what they yield.
//
// An item weighs at most BatchBytes (heavier ones are counted at that),
// and the writer commits as soon as a batch reaches BatchBytes, so while
// it waits for items it holds less than BatchBytes: with QueueBytes at
// least twice that, a parser's Acquire never waits on a writer that waits
// on the parsers. Every item's weight is released once it is committed,
// or dropped after a failure or cancellation.
func (p Pipeline[In, Out]) Run(ctx context.Context, inputs []In) error {
	l := p.Limits.withDefaults()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	budget := semaphore.NewWeighted(l.QueueBytes)
	items := make(chan weighted[Out], l.QueueLen)
	emit := func(out Out, weight int64) error {
		weight = min(max(weight, 1), l.BatchBytes)
		if err := budget.Acquire(ctx, weight); err != nil {
			return err
		}
		select {
		case items <- weighted[Out]{out, weight}:
			return nil
		case <-ctx.Done():
			budget.Release(weight)
			return ctx.Err()
		}
	}
	jobs := make(chan In)
	var wg sync.WaitGroup
	for range min(l.Workers, max(1, len(inputs))) {
		wg.Go(func() {
			for in := range jobs {
				if err := p.Parse(ctx, in, emit); err != nil && ctx.Err() == nil && p.Skip != nil {
					p.Skip(in, err)
				}
			}
		})
	}
	go func() {
		defer close(items)
		defer wg.Wait()
		defer close(jobs)
		for _, in := range inputs {
			select {
			case jobs <- in:
			case <-ctx.Done():
				return
			}
		}
	}()
	w := writer[In, Out]{p: &p, budget: budget, batch: make([]Out, 0, min(l.BatchSize, 4096))}
	var err error
	for it := range items {
		if err == nil {
			err = ctx.Err() // cancelled: nothing more is committed
		}
		if err != nil {
			budget.Release(it.weight) // dropped: the parsers must not wait for it
			continue
		}
		w.batch = append(w.batch, it.out)
		w.bytes += it.weight
		// Commit by count or by weight, whichever comes first.
		if len(w.batch) >= l.BatchSize || w.bytes >= l.BatchBytes {
			if err = w.flush(parent); err != nil {
				cancel()
			}
		}
	}
	if err != nil {
		return err
	}
	if err := parent.Err(); err != nil {
		return err // what was parsed but not committed is dropped
	}
	return w.flush(parent)
}

// writer is Run's batch: the items and their total weight.
type writer[In, Out any] struct {
	p      *Pipeline[In, Out]
	budget *semaphore.Weighted
	batch  []Out
	bytes  int64
}

// flush commits the batch and releases its weight, committed or not.
func (w *writer[In, Out]) flush(ctx context.Context) error {
	if len(w.batch) == 0 {
		return nil
	}
	err := w.p.Commit(ctx, w.batch)
	w.budget.Release(w.bytes)
	clear(w.batch) // let the committed items go before the next batch fills
	w.batch, w.bytes = w.batch[:0], 0
	return err
}
