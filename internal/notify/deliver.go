package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Delivery channels a job's or watch's result may go to. Telegram is
// sent by the app (the Telegram channel), not by this package.
const (
	DeliverInbox    = "inbox"
	DeliverPush     = "push"
	DeliverTelegram = "telegram"
	// DeliverCall rings the user's phone and reads the result out
	// ([voice.sip]); the app places the call.
	DeliverCall = "call"
	DeliverNone = "none"
)

// channelDeliveries are the messaging channels a result may go to; the app
// posts it in the owner's conversation there through the channel's outbox.
var channelDeliveries = []string{"slack", "discord", "whatsapp", "matrix", "signal", "email"}

// IsChannel reports whether a delivery is a messaging channel.
func IsChannel(c string) bool { return slices.Contains(channelDeliveries, c) }

// DefaultDeliver is where a result goes when the user chose nothing.
func DefaultDeliver() []string { return []string{DeliverInbox, DeliverPush} }

// ParseDeliver checks and normalizes a delivery list: known channels, each
// once, in a fixed order. Empty means the default (nil is returned);
// "none" alone is an explicit nothing (the result is only recorded).
func ParseDeliver(list []string) ([]string, error) {
	var out []string
	for _, c := range list {
		c = strings.ToLower(strings.TrimSpace(c))
		switch c {
		case "":
			continue
		case DeliverNone:
			if len(list) != 1 {
				return nil, &FieldError{"deliver", `"none" cannot be combined with other channels`}
			}
			return []string{DeliverNone}, nil
		case DeliverInbox, DeliverPush, DeliverTelegram, DeliverCall:
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		default:
			if IsChannel(c) {
				if !slices.Contains(out, c) {
					out = append(out, c)
				}
				continue
			}
			return nil, &FieldError{"deliver", fmt.Sprintf("%q is not a delivery channel (inbox, push, telegram, call, %s or none)", c, strings.Join(channelDeliveries, ", "))}
		}
	}
	order := map[string]int{DeliverInbox: 0, DeliverPush: 1, DeliverTelegram: 2, DeliverCall: 3}
	for i, c := range channelDeliveries {
		order[c] = 4 + i
	}
	slices.SortFunc(out, func(a, b string) int { return order[a] - order[b] })
	return out, nil
}

// Deliver stores in for the chosen paths. inbox keeps it unread in the
// inbox; push sends it to the paired devices (through the decision step:
// dedupe, rate limit, quiet hours). Push without inbox stores it already
// read, since the deliverer sends from the table; neither stores nothing
// and returns the zero Notification.
func (n *Notifier) Deliver(ctx context.Context, in Notification, inbox, push bool) (Notification, error) {
	if !inbox && !push {
		return Notification{}, nil
	}
	in.inboxOnly = !push
	out, err := n.Notify(ctx, in)
	if err != nil || inbox || out.Duplicate {
		return out, err
	}
	if _, err := n.db.ExecContext(ctx, `UPDATE notifications SET read_at = coalesce(read_at, created_at) WHERE id = ?`, out.ID); err != nil {
		return out, fmt.Errorf("marking a push-only notification read: %w", err)
	}
	return n.Get(ctx, out.ID)
}
