package telegram

import (
	"context"
	"errors"
	"fmt"
)

// OwnerSender sends notices (a scheduled job's result, a watch's message)
// to the owner's private chat, whose id in the Bot API is the owner's user
// id. It works whether the bot receives by polling or by webhook, and
// needs no conversation to exist first beyond the owner having started
// the bot once (Telegram refuses messages to users who never did).
type OwnerSender struct {
	API   *Client
	Owner int64
}

// Send sends title in bold followed by body (Markdown, rendered as the
// bot's replies are), split into several messages when it is long.
func (o OwnerSender) Send(ctx context.Context, title, body string) error {
	if o.API == nil || o.Owner <= 0 {
		return errors.New("telegram: no bot or owner configured")
	}
	pieces := Split(body)
	for i, p := range pieces {
		text := Render(p)
		if i == 0 && title != "" {
			text = "<b>" + Escape(title) + "</b>\n" + text
		}
		if _, err := o.API.SendMessage(ctx, o.Owner, text, nil); err != nil {
			return fmt.Errorf("telegram: sending to the owner (part %d of %d): %w", i+1, len(pieces), err)
		}
	}
	return nil
}
