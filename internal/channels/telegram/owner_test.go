package telegram

import (
	"context"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/channels/telegram/tgtest"
)

// A notice reaches the owner's private chat as valid HTML, the title in
// bold; a long body is split; a sender with no owner says so.
func TestOwnerSenderSends(t *testing.T) {
	t.Parallel()
	tg := tgtest.New(t)
	o := OwnerSender{API: NewClient(tg.URL, tgtest.Token), Owner: 42}
	ctx := context.Background()
	if err := o.Send(ctx, "Job brief <done>", "You have **two** meetings."); err != nil {
		t.Fatal(err)
	}
	msgs := tg.Messages(42)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "<b>Job brief &lt;done&gt;</b>") || !strings.Contains(msgs[0].Text, "<b>two</b>") {
		t.Fatalf("owner chat = %+v", msgs)
	}
	if err := o.Send(ctx, "Long", strings.Repeat("word ", 2000)); err != nil {
		t.Fatal(err)
	}
	if n := len(tg.Messages(42)); n < 3 {
		t.Fatalf("a 10,000-character body went out as %d message(s) in all", n)
	}
	if err := (OwnerSender{API: o.API}).Send(ctx, "t", "b"); err == nil || !strings.Contains(err.Error(), "no bot or owner") {
		t.Fatalf("no owner: %v", err)
	}
}
