package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestImportNotmuchCorpus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := corpus(t, "notmuch/test/corpora")
	s := openStore(t, nil)
	var last Progress
	p, err := s.Import(ctx, root, ImportOptions{Progress: func(p Progress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if p.Added < 100 || p.Failed > 0 || last.Done != p.Files {
		t.Fatalf("progress = %+v (last %+v)", p, last)
	}
	st, _ := s.Stats(ctx)
	t.Logf("import %+v stats %+v", p, st)

	// A second run skips everything and adds nothing.
	p2, err := s.Import(ctx, root, ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Added != 0 || p2.Updated != 0 || p2.Skipped < p.Files-5 {
		t.Errorf("rerun = %+v", p2)
	}
	st2, _ := s.Stats(ctx)
	if st2.Messages != st.Messages {
		t.Errorf("messages %d → %d on rerun", st.Messages, st2.Messages)
	}
}

func TestImportResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 30; i++ {
		writeMaildir(t, root, "", filepath.Base(t.Name())+string(rune('a'+i%26))+string(rune('a'+i/26))+":2,S",
			msg("m"+string(rune('a'+i%26))+string(rune('a'+i/26))+"@x", "a@x.org", "b@x.org", "note", base.Add(time.Duration(i)*time.Hour).Format(time.RFC1123Z), "text"), base.Add(time.Duration(i)*time.Hour))
	}
	s := openStore(t, nil)
	// Cancel after the first committed batch: a crash mid-import.
	cctx, cancel := context.WithCancel(ctx)
	_, err := s.Import(cctx, root, ImportOptions{BatchSize: 10, Progress: func(p Progress) {
		if p.Added >= 10 {
			cancel()
		}
	}})
	if err == nil {
		t.Log("import finished before cancel took effect")
	}
	st, _ := s.Stats(ctx)
	if st.Messages == 0 {
		t.Fatal("nothing committed before the crash")
	}
	p, err := s.Import(ctx, root, ImportOptions{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	st2, _ := s.Stats(ctx)
	if st2.Messages != 30 || p.Skipped < st.Messages {
		t.Errorf("after resume: %+v, progress %+v (first run had %d)", st2, p, st.Messages)
	}
}

func TestReconcilePathsAndSoftDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	raw := msg("dup@x", "a@x.org", "b@x.org", "hello", "Mon, 5 Jan 2026 10:00:00 +0000", "same message twice")
	inbox := writeMaildir(t, root, "", "1:2,S", raw, time.Time{})
	all := writeMaildir(t, root, ".All Mail", "1:2,S", raw, time.Time{})
	work := writeMaildir(t, root, ".Work", "1:2,", raw, time.Time{})
	other := writeMaildir(t, root, "", "2:2,", msg("", "c@x.org", "b@x.org", "no id", "Mon, 5 Jan 2026 11:00:00 +0000", "surrogate"), time.Time{})
	s := openStore(t, nil)
	if _, err := s.Reconcile(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Stats(ctx)
	if st.Messages != 2 || st.Paths != 4 {
		t.Fatalf("stats = %+v", st)
	}
	res, _ := s.Search(ctx, Query{Text: "same message"})
	if len(res.Messages) != 1 || (res.Messages[0].Mailbox != "INBOX" && res.Messages[0].Mailbox != "Work") {
		t.Fatalf("search = %+v (All Mail must never win)", res.Messages)
	}
	id := res.Messages[0].ID
	// Remove the attributed copy: the message moves to the other specific
	// mailbox, not All Mail.
	first, second, want := inbox, work, "Work"
	if res.Messages[0].Mailbox == "Work" {
		first, second, want = work, inbox, "INBOX"
	}
	os.Remove(first)
	if _, err := s.Reconcile(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	m, err := s.Read(ctx, id, 0, 0)
	if err != nil || m.Mailbox != want {
		t.Fatalf("after removing %s: %+v %v", first, m.Mailbox, err)
	}
	os.Remove(second)
	os.Remove(all)
	p, err := s.Reconcile(ctx, root, ImportOptions{})
	if err != nil || p.Removed != 2 || p.Deleted != 1 {
		t.Fatalf("reconcile = %+v %v", p, err)
	}
	if _, err := s.Read(ctx, id, 0, 0); err == nil {
		t.Error("soft-deleted message still readable")
	}
	// Flag change renames the file; identity stays (surrogate from content).
	os.Rename(other, filepath.Join(filepath.Dir(other), "2:2,FS"))
	if _, err := s.Reconcile(ctx, root, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Stats(ctx)
	if st.Messages != 1 || st.Deleted != 1 {
		t.Errorf("after rename: %+v", st)
	}
	res, _ = s.Search(ctx, Query{Flagged: ptr(true)})
	if len(res.Messages) != 1 || res.Messages[0].Subject != "no id" {
		t.Errorf("flagged browse = %+v", res.Messages)
	}
	// The message comes back when a copy reappears.
	writeMaildir(t, root, "", "1:2,S", raw, time.Time{})
	s.Reconcile(ctx, root, ImportOptions{})
	if _, err := s.Read(ctx, id, 0, 0); err != nil {
		t.Errorf("restored message: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestImportEmlxAndMbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	p, err := s.Import(ctx, corpus(t, "emlx/partial-emlx-converter/test/__testdata/input"), ImportOptions{Account: "apple"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Added < 5 {
		t.Fatalf("emlx import = %+v", p)
	}
	var partial, full int
	s.DB().QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE body_state != 'full'), count(*) FILTER (WHERE body_state = 'full') FROM messages`).Scan(&partial, &full)
	if partial == 0 || full == 0 {
		t.Errorf("body states: partial %d full %d", partial, full)
	}
	p, err = s.Import(ctx, corpus(t, "mimekit/UnitTests/TestData/mbox/content-length.mbox.txt"), ImportOptions{Account: "mbox"})
	if err != nil || p.Added+p.Updated != 29 {
		t.Fatalf("mbox import = %+v %v", p, err)
	}
	p, _ = s.Import(ctx, corpus(t, "mimekit/UnitTests/TestData/mbox/content-length.mbox.txt"), ImportOptions{Account: "mbox"})
	if p.Added != 0 || p.Updated != 0 {
		t.Errorf("mbox rerun = %+v", p)
	}
}

// TestImportCommitFailureReturns: a batch that fails to commit ends the
// import at once with that error, even when more messages remain than the
// queue's byte budget holds (the writer used to drain them without giving
// their bytes back, so the parsers blocked until the context ended: never,
// under context.Background). What earlier batches committed stays.
func TestImportCommitFailureReturns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 60
	for i := range n {
		subject := fmt.Sprintf("note %d", i)
		if i == n-20 { // newest first: about the 20th message written
			subject = "boom"
		}
		at := base.Add(time.Duration(i) * time.Hour)
		writeMaildir(t, root, "", fmt.Sprintf("%d:2,S", i), msg(fmt.Sprintf("m%d@x", i), "a@x.org", "b@x.org", subject, at.Format(time.RFC1123Z), strings.Repeat("text ", 40)), at)
	}
	s := openStore(t, nil)
	s.importLimits.BatchBytes, s.importLimits.QueueBytes = 512, 2048 // a few messages each
	if _, err := s.DB().Exec(`CREATE TRIGGER fail_boom BEFORE INSERT ON messages WHEN NEW.subject = 'boom'
		BEGIN SELECT RAISE(ABORT, 'injected commit failure'); END`); err != nil {
		t.Fatal(err)
	}
	// The deadline only keeps a regression from hanging the test run.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := s.Import(ctx, root, ImportOptions{BatchSize: 2})
	if err == nil || !strings.Contains(err.Error(), "injected commit failure") || ctx.Err() != nil {
		t.Fatalf("Import = %+v, %v (context: %v); want the injected failure", p, err, ctx.Err())
	}
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Messages == 0 || st.Messages != p.Added {
		t.Fatalf("after the failure the mirror holds %d messages, the import reported %d committed", st.Messages, p.Added)
	}
	// The trigger gone, a rerun finishes the import.
	if _, err := s.DB().Exec(`DROP TRIGGER fail_boom`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), root, ImportOptions{BatchSize: 2}); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(context.Background()); st.Messages != n {
		t.Errorf("after the rerun the mirror holds %d messages, want %d", st.Messages, n)
	}
}
