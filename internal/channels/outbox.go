package channels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// outRef is an Item.EditRef naming "the message the outbox item with this
// key was sent as", resolved when the edit is sent.
func outRef(key string) string { return "out:" + key }

// outbox sends a channel's queued items in order per conversation: an item
// that fails holds back the later ones of its conversation (replies stay
// in order) but not other conversations'.
type outbox struct {
	r     *Relay
	wakeC chan struct{}
	mu    sync.Mutex // one pass at a time (the worker, or Flush in tests)
}

func newOutbox(r *Relay) *outbox { return &outbox{r: r, wakeC: make(chan struct{}, 1)} }

func (o *outbox) wake() {
	select {
	case o.wakeC <- struct{}{}:
	default:
	}
}

// Flush sends everything due now (tests drive the outbox with it).
func (r *Relay) Flush(ctx context.Context) time.Duration { return r.ob.pass(ctx) }

func (o *outbox) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-o.wakeC:
		case <-timer.C:
		}
		wait := o.pass(ctx)
		if ctx.Err() != nil {
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// pass sends the due items and returns how long until the next is due.
func (o *outbox) pass(ctx context.Context) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.r
	const idle = time.Minute
	items, err := r.d.Store.Unsent(ctx, r.name)
	if err != nil {
		r.d.Log.Error("reading the channel outbox", "channel", r.name, "err", err)
		return 5 * time.Second
	}
	blocked := map[string]bool{}
	wait := idle
	for _, it := range items {
		if ctx.Err() != nil {
			return 0
		}
		if blocked[it.Conv] {
			continue
		}
		now := r.d.Clock()
		if it.State == "pending" && it.NextAt.After(now) {
			blocked[it.Conv] = true
			wait = min(wait, it.NextAt.Sub(now))
			continue
		}
		// Passes run one at a time and each settles what it tries, so an
		// item still "sending" was left by a run cut off mid-send.
		if !o.send(ctx, it, it.State == "sending") {
			blocked[it.Conv] = true
			wait = min(wait, time.Second)
		}
	}
	return max(wait, 10*time.Millisecond)
}

// send tries one item and records the outcome; false when the item is
// still unsent (its conversation waits).
func (o *outbox) send(ctx context.Context, it Item, inDoubt bool) bool {
	r := o.r
	p := r.d.Platform
	if inDoubt && it.EditRef == "" {
		// The previous run may have posted it before it could record so.
		switch f, ok := p.(Finder); {
		case r.lim.Idempotent:
			// Resent under the same key below: the platform drops the repeat.
		case ok:
			ref, found, err := f.Find(ctx, it.Conv, it.Key)
			if err != nil {
				return o.retry(ctx, it, fmt.Errorf("checking whether it was sent before a restart: %w", err))
			}
			if found {
				r.d.Log.Info("an outbound message in doubt had been sent", "channel", r.name, "key", it.Key)
				return o.sent(ctx, it, ref)
			}
		default:
			r.d.Log.Warn("an outbound message was in doubt after a restart and is sent again; the platform cannot tell whether it arrived, so it may show twice",
				"channel", r.name, "key", it.Key)
		}
	}
	if err := r.d.Store.Attempt(ctx, it.ID); err != nil {
		r.d.Log.Error("channel outbox", "err", err)
		return false
	}
	if it.EditRef != "" {
		ref, err := o.resolve(ctx, it.EditRef)
		if err == nil {
			err = p.Edit(ctx, it.Conv, ref, it.outgoing())
			if err == nil {
				return o.sent(ctx, it, ref)
			}
		}
		var pe *PermanentError
		if !errors.Is(err, ErrUnsupported) && !errors.As(err, &pe) && !errors.Is(err, errNoRef) {
			return o.retry(ctx, it, err)
		}
		// The message cannot be edited (gone, too old, never sent): the
		// text is posted anew instead, so it still reaches the person.
		r.d.Log.Info("editing a channel message failed; sending it anew", "channel", r.name, "err", err)
	}
	ref, err := p.Send(ctx, it.Conv, it.outgoing())
	if err != nil {
		return o.retry(ctx, it, err)
	}
	return o.sent(ctx, it, ref)
}

var errNoRef = errors.New("the message to edit was never sent")

// resolve turns an EditRef into a platform reference.
func (o *outbox) resolve(ctx context.Context, editRef string) (string, error) {
	key, ok := strings.CutPrefix(editRef, "out:")
	if !ok {
		return editRef, nil
	}
	ref, state, err := o.r.d.Store.RefOf(ctx, key)
	if err != nil {
		return "", err
	}
	if state != "sent" || ref == "" {
		return "", errNoRef
	}
	return ref, nil
}

func (o *outbox) sent(ctx context.Context, it Item, ref string) bool {
	r := o.r
	ctx = context.WithoutCancel(ctx)
	if err := r.d.Store.Sent(ctx, it.ID, ref); err != nil {
		r.d.Log.Error("channel outbox", "err", err)
		return false
	}
	if it.Prompt != nil && !it.Prompt.Closed {
		if err := r.d.Store.SetCardRef(ctx, r.name, it.Key, ref); err != nil {
			r.d.Log.Error("channel outbox", "err", err)
		}
	}
	return true
}

// retry reschedules an item with exponential backoff (or the platform's
// own wait), or gives it up when the error is permanent or attempts ran
// out; false either way so later items of the conversation wait a moment.
func (o *outbox) retry(ctx context.Context, it Item, err error) bool {
	r := o.r
	ctx = context.WithoutCancel(ctx)
	var pe *PermanentError
	if errors.As(err, &pe) || it.Attempts+1 >= r.cfg.MaxAttempts {
		r.d.Log.Warn("a channel message could not be sent; giving up", "channel", r.name, "key", it.Key, "attempts", it.Attempts+1, "err", err)
		if ferr := r.d.Store.Fail(ctx, it.ID, err.Error()); ferr != nil {
			r.d.Log.Error("channel outbox", "err", ferr)
			return false
		}
		r.d.Audit(ctx, "channel.send_failed", "", fmt.Sprintf("%s message could not be sent: %v", r.cfg.Label, err),
			map[string]any{"channel": r.name, "conv": it.Conv, "key": it.Key, "attempts": it.Attempts + 1})
		return true // the conversation moves on
	}
	wait := backoff(it.Attempts)
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After > 0 {
		wait = ra.After
	}
	r.d.Log.Warn("a channel message was not sent; retrying", "channel", r.name, "key", it.Key, "in", wait, "err", err)
	if rerr := r.d.Store.Retry(ctx, it.ID, r.d.Clock().Add(wait), err.Error()); rerr != nil {
		r.d.Log.Error("channel outbox", "err", rerr)
	}
	return false
}

// backoff is 1s, 2s, 4s … capped at an hour.
func backoff(attempts int) time.Duration {
	if attempts > 12 {
		return time.Hour
	}
	return min(time.Second<<attempts, time.Hour)
}
