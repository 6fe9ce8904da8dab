package mail

import (
	"context"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/journal"
)

func TestFindSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	d := journal.Draft{From: "me@home.org", To: []string{"Ann@X.org", "bob@x.org"}, Subject: "Plan", Body: "Line one\nline two", InReplyTo: "orig@x", MessageID: "out1@hestia"}
	raw, _ := journal.BuildMessage(d, at)
	other := d
	other.Body = "different body"
	other.MessageID = "out2@hestia"
	raw2, _ := journal.BuildMessage(other, at)
	s.Ingest(ctx, []Item{
		{Account: "work", Mailbox: "Sent", Path: "s1", Raw: raw},
		{Account: "work", Mailbox: "Sent", Path: "s2", Raw: raw2},
		{Account: "work", Mailbox: "INBOX", Path: "i1", Raw: []byte(msg("x@x", "me@home.org", "ann@x.org, bob@x.org", "Plan", at.Format(time.RFC1123Z), "Line one line two", "In-Reply-To: <orig@x>"))},
	})
	win := func(exp journal.Expected, from, to time.Time) int {
		ids, err := s.FindSent(ctx, "work", exp, from, to)
		if err != nil {
			t.Fatal(err)
		}
		return len(ids)
	}
	exp := journal.ExpectedOf(d)
	if n := win(exp, at.Add(-time.Minute), at.Add(24*time.Hour)); n != 1 {
		t.Errorf("exact match found %d", n)
	}
	bad := exp
	bad.Cc = []string{"c@x.org"}
	if n := win(bad, at.Add(-time.Minute), at.Add(time.Hour)); n != 0 {
		t.Error("recipient mismatch matched")
	}
	bad = exp
	bad.InReplyTo = "other@x"
	if n := win(bad, at.Add(-time.Minute), at.Add(time.Hour)); n != 0 {
		t.Error("reply linkage mismatch matched")
	}
	if n := win(exp, at.Add(time.Minute), at.Add(time.Hour)); n != 0 {
		t.Error("outside the window matched")
	}
	if n, _ := s.FindSent(ctx, "home", exp, at.Add(-time.Minute), at.Add(time.Hour)); len(n) != 0 {
		t.Error("other account matched")
	}
}
