package notify

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDeliver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want []string
		err  string
	}{
		{nil, nil, ""},
		{[]string{"", " "}, nil, ""},
		{[]string{"telegram", "inbox", "Inbox", " push "}, []string{"inbox", "push", "telegram"}, ""},
		{[]string{"none"}, []string{"none"}, ""},
		{[]string{"none", "inbox"}, nil, `deliver: "none" cannot be combined`},
		{[]string{"Signal", "slack", "inbox", "slack"}, []string{"inbox", "slack", "signal"}, ""},
		{[]string{"sms"}, nil, `deliver: "sms" is not a delivery channel`},
	} {
		got, err := ParseDeliver(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDeliver(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseDeliver(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// Deliver honours the chosen paths: inbox only is never pushed, push only
// is stored read (out of the unread count) but pending for the deliverer,
// neither stores nothing.
func TestDeliverPaths(t *testing.T) {
	t.Parallel()
	n, _ := newNotifier(t, &clock{t: time.Now()})
	ctx := context.Background()
	x := func(key string) Notification {
		return Notification{Kind: KindJob, Key: key, Title: "Job brief done", Body: "two meetings"}
	}
	both, err := n.Deliver(ctx, x("a"), true, true)
	if err != nil || both.PushState != PushPending || both.ReadAt != nil {
		t.Fatalf("inbox+push = %+v, %v", both, err)
	}
	inbox, err := n.Deliver(ctx, x("b"), true, false)
	if err != nil || inbox.PushState != PushSuppressed || inbox.PushReason != "inbox_only" || inbox.ReadAt != nil {
		t.Fatalf("inbox only = %+v, %v", inbox, err)
	}
	push, err := n.Deliver(ctx, x("c"), false, true)
	if err != nil || push.PushState != PushPending || push.ReadAt == nil {
		t.Fatalf("push only = %+v, %v", push, err)
	}
	none, err := n.Deliver(ctx, x("d"), false, false)
	if err != nil || none.ID != 0 {
		t.Fatalf("neither = %+v, %v", none, err)
	}
	box, err := n.List(ctx, false, 50)
	if err != nil || len(box.Notifications) != 3 || box.Unread != 2 {
		t.Fatalf("inbox = %d notifications, %d unread, %v", len(box.Notifications), box.Unread, err)
	}
}
