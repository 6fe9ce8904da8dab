package channels

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// CatchUp is the bookkeeping a CatchUpper's adapter shares with the
// others: it holds the Cursors the relay lends, plans a catch-up (which
// conversations, from where), runs it conversation by conversation, and
// moves cursors so that a failed catch-up is tried again from the same
// place. What stays with the adapter is the platform's part: reading the
// messages after a cursor, turning them into updates, and the order of
// its message ids.
//
// Until its catch-up succeeds a conversation is behind: a live message
// there does not move its cursor (the catch-up's own messages do), so
// the next catch-up starts where the failed one did. When listing the
// conversations fails, every conversation is behind until a later plan
// succeeds.
//
// The zero value does nothing until Lend is given cursors; Less must be
// set before then. A CatchUp must not be copied after first use.
type CatchUp struct {
	// Platform names the platform in log lines ("slack", "discord").
	Platform string
	// Log receives what went wrong and what was done; nil: discarded.
	Log *slog.Logger
	// Less orders two of the platform's message ids (a cursor is one):
	// whether a was posted before b.
	Less func(a, b string) bool
	// Valid says whether a stored cursor is one of the platform's ids; a
	// cursor that is not one is overwritten by the next message. nil:
	// any non-empty cursor is.
	Valid func(cursor string) bool

	mu      sync.Mutex // guards cursors
	cursors *Cursors

	// cursorMu serializes moving a cursor (read, compare, write) and
	// guards the fields below.
	cursorMu sync.Mutex
	// behind are the conversations whose catch-up has not succeeded yet;
	// unplanned: listing them failed. Live messages there leave the
	// cursor alone.
	behind    map[string]bool
	unplanned bool
}

// CatchUpConv is one conversation to catch up, with its cursor as it was
// before any live update moved it ("" when it has none yet).
type CatchUpConv struct {
	Conv, Cursor string
}

// Lend keeps the cursors the relay lends (what CatchUpWith is given);
// nil turns catch-up off.
func (c *CatchUp) Lend(cs *Cursors) {
	c.mu.Lock()
	c.cursors = cs
	c.mu.Unlock()
}

func (c *CatchUp) store() *Cursors {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cursors
}

func (c *CatchUp) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// Plan reads where to catch up: at most maxConvs conversations, the most
// recently active first, each with its cursor, and marks them behind. It
// is read before live updates are taken. A failure is logged and the
// plan is empty: live receiving goes on without catch-up.
func (c *CatchUp) Plan(ctx context.Context, maxConvs int) []CatchUpConv {
	cs := c.store()
	if cs == nil {
		return nil
	}
	convs, err := cs.Conversations(ctx)
	if err != nil {
		c.log().Warn(c.Platform+" catch-up: listing the conversations failed; only live messages arrive",
			"event", c.Platform+"CatchUpFailed", "err", err)
		c.cursorMu.Lock()
		c.unplanned = true
		c.cursorMu.Unlock()
		return nil
	}
	if len(convs) > maxConvs {
		c.log().Info(c.Platform+" catch-up: only the most recently active conversations are read",
			"event", c.Platform+"CatchUpConversationsSkipped", "read", maxConvs, "skipped", len(convs)-maxConvs)
		convs = convs[:maxConvs]
	}
	plan := make([]CatchUpConv, 0, len(convs))
	for _, conv := range convs {
		cur, err := cs.Get(ctx, conv)
		if err != nil {
			c.log().Warn(c.Platform+" catch-up: reading a cursor failed; the conversation is not caught up",
				"event", c.Platform+"CatchUpFailed", "conv", conv, "err", err)
			continue
		}
		plan = append(plan, CatchUpConv{Conv: conv, Cursor: cur})
	}
	c.cursorMu.Lock()
	c.unplanned = false
	if c.behind == nil {
		c.behind = map[string]bool{}
	}
	for _, p := range plan {
		c.behind[p.Conv] = true
	}
	c.cursorMu.Unlock()
	return plan
}

// Run catches up the plan's conversations one by one with conv, which
// delivers what was posted after cursor (moving the cursor with Advance,
// live false) and says how many updates it delivered. A conversation
// stops being behind once conv succeeds; an error is logged and the next
// conversation tried, since live receiving never waits on a failed
// catch-up. Run stops when ctx ends.
func (c *CatchUp) Run(ctx context.Context, plan []CatchUpConv, conv func(ctx context.Context, conv, cursor string) (delivered int, err error)) {
	delivered := 0
	for _, p := range plan {
		n, err := conv(ctx, p.Conv, p.Cursor)
		delivered += n
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.log().Warn(c.Platform+" catch-up failed for a conversation; live messages still arrive, and the next catch-up tries again",
				"event", c.Platform+"CatchUpFailed", "conv", p.Conv, "err", err)
			continue
		}
		c.cursorMu.Lock()
		delete(c.behind, p.Conv)
		c.cursorMu.Unlock()
	}
	if len(plan) > 0 {
		c.log().Info(c.Platform+" catch-up done", "event", c.Platform+"CatchUpDone", "conversations", len(plan), "delivered", delivered)
	}
}

// Advance records id as a conversation's cursor unless it already points
// later (a live update and a catch-up may finish in either order). A
// live message (live) leaves the cursor of a conversation that is behind
// where it is. A failure is logged: the message may be read again.
func (c *CatchUp) Advance(ctx context.Context, conv, id string, live bool) {
	cs := c.store()
	if cs == nil {
		return
	}
	// What was delivered stays delivered when the daemon is stopping.
	ctx = context.WithoutCancel(ctx)
	c.cursorMu.Lock()
	defer c.cursorMu.Unlock()
	if live && (c.unplanned || c.behind[conv]) {
		return
	}
	cur, err := cs.Get(ctx, conv)
	if err == nil && cur != "" && (c.Valid == nil || c.Valid(cur)) && !c.Less(cur, id) {
		return
	}
	if err == nil {
		err = cs.Set(ctx, conv, id)
	}
	if err != nil {
		c.log().Warn(c.Platform+" catch-up: recording a cursor failed; the message may be read again after a restart",
			"event", c.Platform+"CursorNotRecorded", "conv", conv, "err", err)
	}
}

// RetryAfter calls f, waiting out the rate limits it answers with
// (*RetryAfterError) for as long as they ask, at most tries calls in
// all; the last error is returned, or ctx's when it ends during a wait.
func (c *CatchUp) RetryAfter(ctx context.Context, tries int, f func() error) error {
	for try := 1; ; try++ {
		err := f()
		var ra *RetryAfterError
		if !errors.As(err, &ra) || try >= tries {
			return err
		}
		c.log().Info(c.Platform+" catch-up: rate limited; waiting", "event", c.Platform+"CatchUpRateLimited", "after", ra.After)
		t := time.NewTimer(ra.After)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
