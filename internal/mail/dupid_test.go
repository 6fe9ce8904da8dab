package mail

import (
	"context"
	"testing"
)

// TestSameMessageIDDifferentContent: a reused Message-ID must not hide the
// second message; the same message seen twice stays one.
func TestSameMessageIDDifferentContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	d := "Mon, 5 Jan 2026 10:00:00 +0000"
	first := msg("dup@x", "a@x.org", "b@x.org", "Weekly report", d, "alpha content here")
	second := msg("dup@x", "c@y.org", "b@x.org", "Totally different", d, "beta content here")
	copyOfFirst := "Received: from relay\n" + msg("dup@x", "a@x.org", "b@x.org", "[list] Weekly report", d, "alpha   content\r\nhere")
	r, err := s.Ingest(ctx, []Item{
		{Account: "a", Mailbox: "INBOX", Path: "1", Raw: []byte(first)},
		{Account: "a", Mailbox: "INBOX", Path: "2", Raw: []byte(second)},
		{Account: "a", Mailbox: "Lists", Path: "3", Raw: []byte(copyOfFirst)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Added != 2 || r.Updated != 1 {
		t.Errorf("added %d updated %d, want 2 and 1", r.Added, r.Updated)
	}
	for _, w := range []string{"alpha", "beta"} {
		if n := count(t, s, Query{Text: w}); n != 1 {
			t.Errorf("%s: %d messages, want 1", w, n)
		}
	}
	// Re-ingesting changes nothing; both stay in one thread.
	r, _ = s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "2", Raw: []byte(second)}, {Account: "a", Mailbox: "INBOX", Path: "1", Raw: []byte(first)}})
	if r.Added != 0 {
		t.Errorf("re-ingest added %d", r.Added)
	}
	var msgs, threads int
	s.DB().QueryRowContext(ctx, `SELECT count(*), count(DISTINCT thread_id) FROM messages`).Scan(&msgs, &threads)
	if msgs != 2 || threads != 1 {
		t.Errorf("%d messages in %d threads, want 2 in 1", msgs, threads)
	}
}
