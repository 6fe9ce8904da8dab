package mail

import (
	"context"
	"testing"
)

// TestFullTextStaysConsistent upgrades a partial body to a full one, in a
// later batch and within one batch, and checks the derived indexes against
// the rows with FTS5's own integrity check.
func TestFullTextStaysConsistent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	partial := []byte(msg("up@x", "a@x.org", "b@x.org", "upgrade", "Mon, 5 Jan 2026 10:00:00 +0000", "only the beginning"))
	full := []byte(msg("up@x", "a@x.org", "b@x.org", "upgrade", "Mon, 5 Jan 2026 10:00:00 +0000", "only the beginning and the zebrafinale"))
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "p1", Raw: partial, Partial: true}})
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "p2", Raw: full}})
	p2 := []byte(msg("up2@x", "a@x.org", "b@x.org", "same batch", "Mon, 5 Jan 2026 10:00:00 +0000", "short"))
	f2 := []byte(msg("up2@x", "a@x.org", "b@x.org", "same batch", "Mon, 5 Jan 2026 10:00:00 +0000", "short then quokkaending"))
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "q1", Raw: p2, Partial: true}, {Account: "a", Mailbox: "INBOX", Path: "q2", Raw: f2}})
	for _, w := range []string{"zebrafinale", "quokkaending"} {
		r, err := s.Search(ctx, Query{Text: w})
		if err != nil || len(r.Messages) != 1 {
			t.Errorf("%s: %+v %v", w, r.Messages, err)
		}
		r, _ = s.Search(ctx, Query{Body: w[:6]})
		if len(r.Messages) != 1 {
			t.Errorf("substring %s: %+v", w[:6], r.Messages)
		}
	}
	for _, ft := range ftsTables {
		tbl := ft.name
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO `+tbl+`(`+tbl+`, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Errorf("%s integrity: %v", tbl, err)
		}
	}
	if err := s.RebuildIndexes(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Search(ctx, Query{Text: "zebrafinale"}); len(r.Messages) != 1 {
		t.Error("search after rebuild")
	}
	if r, _ := s.Search(ctx, Query{Subject: "same batch", From: "a@x.org"}); len(r.Messages) != 1 {
		t.Errorf("header filters after rebuild: %+v", r.Messages)
	}
}
