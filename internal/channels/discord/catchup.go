package discord

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/hestia-dev/hestia/internal/channels"
)

// Catching up (channels.CatchUpper): a Resume replays what a dropped
// connection missed, but a new session (the daemon started, or Discord
// invalidated the old one) starts with nothing, so every READY queues a
// catch-up ahead of the session's events: for each conversation that has
// a chat, GET /channels/{id}/messages?after= the last message delivered
// there, handed to the Handler oldest first.

// Catch-up bounds.
const (
	// catchUpWindow: older messages are not fetched; what the owner wrote
	// a day ago and got no answer to has been asked again or elsewhere.
	catchUpWindow = 24 * time.Hour
	// catchUpMax is the most messages delivered per conversation: the
	// newest, the older ones skipped (and logged).
	catchUpMax = 50
	// catchUpConvs is the most conversations read per catch-up, the most
	// recently active first.
	catchUpConvs = 20
	// Messages come catchUpPage at a time (Discord's largest page), at
	// most catchUpPages pages per conversation.
	catchUpPage  = 100
	catchUpPages = 5
	// catchUpTries bounds the rate-limited answers one call waits out.
	catchUpTries = 5
)

// discordEpoch is the first moment of Discord's snowflakes (2015, in ms).
const discordEpoch = 1420070400000

// CatchUpWith is called by the relay before the first Receive: with it,
// every new session catches up (channels.CatchUpper).
func (a *Adapter) CatchUpWith(c *channels.Cursors) {
	a.cu.Lend(c)
}

// catchUp delivers, conversation by conversation, the messages posted
// after each cursor (within the bounds), oldest first. It runs on the
// update queue, so the session's live events wait behind it and arrive
// after what they follow. Errors are logged (discordCatchUpFailed) and
// the next conversation tried: live receiving goes on.
func (a *Adapter) catchUp(ctx context.Context, h channels.Handler) {
	plan := a.cu.Plan(ctx, catchUpConvs)
	a.cu.Run(ctx, plan, func(ctx context.Context, conv, cursor string) (int, error) {
		return a.catchUpConv(ctx, conv, cursor, h)
	})
}

func (a *Adapter) catchUpConv(ctx context.Context, conv, cursor string, h channels.Handler) (int, error) {
	if !snowflake(conv) {
		return 0, errors.New("the conversation is not a channel id")
	}
	after := snowflakeAt(time.Now().Add(-catchUpWindow))
	switch {
	case cursor == "":
		// A conversation from before catch-up existed: the window, with
		// the relay's dedupe dropping what was handled then.
	case !snowflake(cursor):
		a.log.Warn("discordCatchUpBadCursor", "channelID", conv, "cursor", clip(cursor, 40))
	case idLess(cursor, after):
		a.log.Warn("discordCatchUpWindow", "channelID", conv, "since", cursor,
			"skipped", "messages older than 24 hours are not read")
	default:
		after = cursor
	}
	msgs, skipped, more, err := a.messagesAfter(ctx, conv, after)
	if err != nil {
		return 0, err
	}
	if skipped > 0 || more {
		count := strconv.Itoa(skipped)
		if more {
			count += " and more"
		}
		a.log.Warn("discordCatchUpTruncated", "channelID", conv, "delivered", len(msgs), "skipped", count,
			"why", "only the newest 50 messages of a conversation are delivered")
	}
	n := 0
	for _, m := range msgs {
		if ctx.Err() != nil {
			return n, nil
		}
		if u, ok := a.messageUpdate(ctx, m); ok {
			h(ctx, u)
			n++
		}
		// Skipped ones too: the next catch-up starts after them.
		a.cu.Advance(ctx, conv, m.ID, false)
	}
	return n, nil
}

// messagesAfter returns a channel's messages posted after the message (or
// moment) after, oldest first, at most catchUpMax: the newest. Discord
// answers the messages right after `after`, newest first, so pages are
// read forward; skipped counts those left out, and more says pages
// remained unread.
func (a *Adapter) messagesAfter(ctx context.Context, channel, after string) (msgs []message, skipped int, more bool, err error) {
	for page := 0; ; page++ {
		if page == catchUpPages {
			more = true
			break
		}
		var raw []json.RawMessage
		q := url.Values{"after": {after}, "limit": {strconv.Itoa(catchUpPage)}}
		// Rate limits (a 429, or a bucket empty for longer than do waits
		// itself) are waited out.
		err := a.cu.RetryAfter(ctx, catchUpTries, func() error {
			return a.do(ctx, request{method: http.MethodGet, path: "/channels/" + channel + "/messages?" + q.Encode(),
				route: "GET /channels/" + channel + "/messages", op: "read the messages of channel " + channel}, &raw)
		})
		if err != nil {
			return nil, 0, false, err
		}
		var got []message
		for _, r := range raw {
			m, err := parseMessage(r)
			if err != nil || m.ChannelID != channel {
				a.log.Warn("discordCatchUpBadMessage", "channelID", channel, "err", err)
				continue
			}
			if idLess(after, m.ID) {
				got = append(got, m)
			}
		}
		sortByID(got)
		msgs = append(msgs, got...)
		if len(raw) < catchUpPage || len(got) == 0 {
			break
		}
		after = got[len(got)-1].ID
	}
	sortByID(msgs)
	msgs = slices.CompactFunc(msgs, func(x, y message) bool { return x.ID == y.ID })
	if len(msgs) > catchUpMax {
		skipped, msgs = len(msgs)-catchUpMax, msgs[len(msgs)-catchUpMax:]
	}
	return msgs, skipped, more, nil
}

// snowflakeAt is the smallest snowflake of a moment: `after` it means
// "posted at or after then".
func snowflakeAt(t time.Time) string {
	ms := max(t.UnixMilli()-discordEpoch, 0)
	return strconv.FormatUint(uint64(ms)<<22, 10)
}

// idLess orders two snowflakes: by length, then by digits (ids have no
// leading zeros, and 20 digits overflow an int64 comparison).
func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func sortByID(msgs []message) {
	slices.SortStableFunc(msgs, func(x, y message) int {
		switch {
		case idLess(x.ID, y.ID):
			return -1
		case idLess(y.ID, x.ID):
			return 1
		}
		return 0
	})
}
