package mail

import (
	"context"
	"os"
	"testing"
	"time"
)

func TestWatchPicksUpNewAndRemovedMail(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	root := t.TempDir()
	writeMaildir(t, root, "", "1:2,S", msg("w1@x", "a@x.org", "b@x.org", "first", "Mon, 5 Jan 2026 10:00:00 +0000", "one"), time.Time{})
	s := openStore(t, nil)
	if _, err := s.Import(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx, root, ImportOptions{}, 50*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // watches registered
	p := writeMaildir(t, root, "", "2:2,", msg("w2@x", "c@x.org", "b@x.org", "second", "Mon, 5 Jan 2026 11:00:00 +0000", "watched arrival"), time.Time{})
	writeMaildir(t, root, ".Sub", "3:2,", msg("w3@x", "c@x.org", "b@x.org", "third", "Mon, 5 Jan 2026 12:00:00 +0000", "new folder"), time.Time{})
	waitFor(t, func() bool { st, _ := s.Stats(ctx); return st.Messages == 3 })
	os.Remove(p)
	waitFor(t, func() bool { st, _ := s.Stats(ctx); return st.Messages == 2 && st.Deleted == 1 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
