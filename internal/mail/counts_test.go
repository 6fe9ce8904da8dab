package mail

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestCountsAndCursor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	// Empty mirror: no mailboxes, cursor 0, nothing new.
	if list, err := s.MailboxCounts(ctx); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("MailboxCounts on an empty mirror = %v, %v; want an empty list", list, err)
	}
	if id, err := s.MaxID(ctx); err != nil || id != 0 {
		t.Fatalf("MaxID on an empty mirror = %d, %v", id, err)
	}
	root := t.TempDir()
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	d := at.Format(time.RFC1123Z)
	writeMaildir(t, root, "", "1:2,S", msg("a@x", "a@x.org", "me@x.org", "first", d, "one"), at)
	writeMaildir(t, root, "", "2:2,", msg("b@x", "b@x.org", "me@x.org", "Re: first", d, "two", "In-Reply-To: <a@x>"), at)
	gone := writeMaildir(t, root, ".Work", "3:2,", msg("c@x", "c@x.org", "me@x.org", "work", d, "three"), at)
	writeMaildir(t, root, ".Sent", "4:2,S", msg("d@x", "me@x.org", "c@x.org", "sent", d, "four"), at)
	if _, err := s.Reconcile(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	maxID, err := s.MaxID(ctx)
	if err != nil || maxID != 4 {
		t.Fatalf("MaxID = %d, %v; want 4", maxID, err)
	}
	all, err := s.NewMessages(ctx, 0, 10)
	if err != nil || len(all) != 4 {
		t.Fatalf("NewMessages(0) = %+v, %v", all, err)
	}
	roles := map[string]int{}
	for i, m := range all {
		if i > 0 && m.ID <= all[i-1].ID {
			t.Fatalf("NewMessages out of id order: %+v", all)
		}
		roles[m.Role]++
	}
	if roles["inbox"] != 2 || roles["sent"] != 1 {
		t.Errorf("roles = %v", roles)
	}
	if two, err := s.NewMessages(ctx, all[1].ID, 1); err != nil || len(two) != 1 || two[0].ID != all[2].ID {
		t.Errorf("NewMessages(after %d, 1) = %+v, %v", all[1].ID, two, err)
	}
	if _, err := s.NewMessages(ctx, 0, 0); err == nil {
		t.Error("NewMessages with limit 0 accepted")
	}

	// The Work copy goes: its message is soft-deleted, out of the counts
	// and of the new messages, while the cursor stays.
	os.Remove(gone)
	if _, err := s.Reconcile(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := s.MailboxCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]MailboxCount{}
	for _, c := range list {
		got[c.Name] = c
	}
	if c := got["INBOX"]; c.Messages != 2 || c.Unread != 1 || c.Account != "local" || c.Role != "inbox" {
		t.Errorf("INBOX = %+v", c)
	}
	if c := got["Work"]; c.Messages != 0 || c.Unread != 0 {
		t.Errorf("Work = %+v; want its deleted message uncounted", c)
	}
	if c := got["Sent"]; c.Messages != 1 || c.Unread != 0 {
		t.Errorf("Sent = %+v", c)
	}
	if id, _ := s.MaxID(ctx); id != maxID {
		t.Errorf("MaxID after a deletion = %d, want %d", id, maxID)
	}
	live, err := s.NewMessages(ctx, 0, 10)
	if err != nil || len(live) != 3 {
		t.Errorf("NewMessages after a deletion = %+v, %v", live, err)
	}

	res, err := s.Search(ctx, Query{Text: "first"})
	if err != nil || len(res.Messages) == 0 {
		t.Fatalf("search: %+v %v", res.Messages, err)
	}
	th := res.Messages[0].ThreadID
	counts, err := s.ThreadCounts(ctx, []int64{th, 999999})
	if err != nil || counts[th] != 2 || len(counts) != 1 {
		t.Errorf("ThreadCounts = %v, %v; want thread %d with 2 messages, the unknown one absent", counts, err, th)
	}
	many := make([]int64, 1200) // more than one statement's worth
	for i := range many {
		many[i] = int64(i + 1)
	}
	if counts, err := s.ThreadCounts(ctx, many); err != nil || counts[th] != 2 {
		t.Errorf("ThreadCounts of 1,200 ids = %v, %v", counts, err)
	}
	if counts, err := s.ThreadCounts(ctx, nil); err != nil || counts == nil || len(counts) != 0 {
		t.Errorf("ThreadCounts(nil) = %v, %v", counts, err)
	}
}
