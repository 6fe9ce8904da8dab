package slack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Catching up (channels.CatchUpper): Slack does not keep events for an
// app that is not connected, so each new connection (and the start of the
// Events API mode) first reads, in the conversations that have a chat,
// what was posted after the last message delivered there, and hands it
// to the Handler in order before any live envelope.

// Catch-up bounds.
const (
	// catchUpWindow: older messages are not fetched; what the owner wrote
	// a day ago and got no answer to has been asked again or elsewhere.
	catchUpWindow = 24 * time.Hour
	// catchUpMax is the most messages delivered per conversation: the
	// newest, the older ones skipped (and logged).
	catchUpMax = 50
	// catchUpConvs is the most conversations read per catch-up, the most
	// recently active first: every DM thread has its own chat, and a
	// reconnect (Slack asks for one every few hours) must not spend the
	// rate limit on threads long quiet.
	catchUpConvs = 20
	// A thread's replies come oldest first: up to catchUpPages pages of
	// catchUpPage are read to find its newest catchUpMax.
	catchUpPage  = 200
	catchUpPages = 5
	// catchUpTries bounds the rate-limited answers one call waits out.
	catchUpTries = 5
)

// CatchUpWith is called by the relay before the first Receive: with it,
// every connection catches up (channels.CatchUpper).
func (a *Adapter) CatchUpWith(c *channels.Cursors) {
	a.cu.Lend(c)
}

// catchUp delivers, conversation by conversation, the messages posted
// after each cursor (within the bounds), oldest first; the plan was read
// (channels.CatchUp.Plan) before live updates were taken. Errors are
// logged and the next conversation tried: live receiving never waits on
// a failed catch-up.
func (a *Adapter) catchUp(ctx context.Context, me identity, plan []channels.CatchUpConv, h channels.Handler) {
	a.cu.Run(ctx, plan, func(ctx context.Context, conv, cursor string) (int, error) {
		return a.catchUpConv(ctx, me, conv, cursor, h)
	})
}

func (a *Adapter) catchUpConv(ctx context.Context, me identity, conv, cursor string, h channels.Handler) (int, error) {
	channel, thread, err := splitConv(conv)
	if err != nil {
		return 0, err
	}
	oldest := tsAt(a.cfg.Clock().Add(-catchUpWindow))
	switch {
	case cursor == "":
		// A conversation from before catch-up existed: the window, with
		// the relay's dedupe dropping what was handled then.
	case !tsRe.MatchString(cursor):
		a.log.Warn("slack catch-up: a stored cursor is not a Slack ts; reading the last day", "conv", conv, "cursor", cursor)
	case tsLess(cursor, oldest):
		a.log.Warn("slack catch-up: only the last 24 hours are read; older messages of the conversation are skipped", "conv", conv, "since", cursor)
	default:
		oldest = cursor
	}
	msgs, skipped, err := a.messagesSince(ctx, channel, thread, oldest)
	if err != nil {
		return 0, err
	}
	if skipped != 0 {
		count := strconv.Itoa(skipped)
		if skipped < 0 {
			count = "some"
		}
		a.log.Warn("slack catch-up: more messages than are delivered; the older ones are skipped", "conv", conv, "delivered", len(msgs), "skipped", count)
	}
	n := 0
	for _, m := range msgs {
		if ctx.Err() != nil {
			return n, nil
		}
		ev := event{Type: "message", Subtype: m.Subtype, Channel: channel, User: m.User, BotID: m.BotID, Text: m.Text,
			TS: m.TS, ThreadTS: m.ThreadTS, ParentUserID: m.ParentUserID, Files: m.Files}
		if ev.ThreadTS == ev.TS {
			// A thread's root is a message of the conversation it was
			// posted in, as its live event said before it had replies.
			ev.ThreadTS = ""
		}
		in, ok, err := eventInbound(me, ev, "history:"+channel+"/"+m.TS)
		if err != nil {
			a.log.Warn("slack catch-up: skipped a malformed message", "conv", conv, "err", err)
		}
		if ok {
			h(ctx, a.complete(ctx, in))
			n++
		}
		// Skipped ones too: the next catch-up starts after them.
		a.cu.Advance(ctx, conv, m.TS, false)
	}
	return n, nil
}

// messagesSince returns the messages of a conversation (or a thread's
// replies) posted after oldest, oldest first, at most catchUpMax: the
// newest. skipped counts those left out, -1 when Slack only said there
// were more.
func (a *Adapter) messagesSince(ctx context.Context, channel, thread, oldest string) (msgs []message, skipped int, err error) {
	if thread == "" {
		// Newest first: the first page is the newest catchUpMax.
		var p page
		err := a.cu.RetryAfter(ctx, catchUpTries, func() error {
			var err error
			p, err = a.api.history(ctx, a.cfg.BotToken, channel, "", oldest, "", catchUpMax)
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		for _, m := range p.Messages {
			if tsRe.MatchString(m.TS) && tsLess(oldest, m.TS) {
				msgs = append(msgs, m)
			}
		}
		sortByTS(msgs)
		if len(msgs) > catchUpMax {
			skipped, msgs = len(msgs)-catchUpMax, msgs[len(msgs)-catchUpMax:]
		}
		if p.HasMore || p.Meta.NextCursor != "" {
			skipped = -1
		}
		return msgs, skipped, nil
	}
	cursor := ""
	for range catchUpPages {
		var p page
		err := a.cu.RetryAfter(ctx, catchUpTries, func() error {
			var err error
			p, err = a.api.history(ctx, a.cfg.BotToken, channel, thread, oldest, cursor, catchUpPage)
			return err
		})
		if err != nil {
			return nil, 0, err
		}
		for _, m := range p.Messages {
			// The root leads every answer; it belongs to the conversation
			// the thread hangs from.
			if m.TS != thread && tsRe.MatchString(m.TS) && tsLess(oldest, m.TS) {
				msgs = append(msgs, m)
			}
		}
		if cursor = p.Meta.NextCursor; cursor == "" {
			break
		}
	}
	sortByTS(msgs)
	if len(msgs) > catchUpMax {
		skipped, msgs = len(msgs)-catchUpMax, msgs[len(msgs)-catchUpMax:]
	}
	if cursor != "" {
		skipped = -1
	}
	return msgs, skipped, nil
}

// delivered moves the cursor of a private conversation past a live
// message the Handler took (only private conversations can have chats,
// so only they are caught up), unless the conversation is behind.
func (a *Adapter) delivered(ctx context.Context, in inbound) {
	if in.u.Action != nil || !in.u.Private || in.ts == "" {
		return
	}
	a.cu.Advance(ctx, in.u.Conv, in.ts, true)
}

// tsAt is the Slack ts of a moment.
func tsAt(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}

// tsLess orders two Slack timestamps (seconds, then the fraction as
// digits after the point), which text order gets wrong across lengths.
func tsLess(a, b string) bool {
	as, af := tsParts(a)
	bs, bf := tsParts(b)
	if as != bs {
		return as < bs
	}
	return af < bf
}

func tsParts(ts string) (int64, int64) {
	sec, frac, _ := strings.Cut(ts, ".")
	s, _ := strconv.ParseInt(sec, 10, 64)
	frac = (frac + "000000000")[:9]
	f, _ := strconv.ParseInt(frac, 10, 64)
	return s, f
}

func sortByTS(msgs []message) {
	slices.SortStableFunc(msgs, func(x, y message) int {
		switch {
		case tsLess(x.TS, y.TS):
			return -1
		case tsLess(y.TS, x.TS):
			return 1
		}
		return 0
	})
}
