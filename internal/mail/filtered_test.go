package mail

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
)

// A word or phrase under a date range is ranked from its doclist and the
// filters checked best match first (filteredTopHits); every page must be
// FTS5's own order of the filtered join, ties by id.
func TestFilteredRankingIsFTS5s(t *testing.T) {
	ctx := context.Background()
	s, _, maildir := generatedStore(t, 1500, 3)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wordRankMin = 1
	after, before := time.Date(2023, 7, 1, 0, 0, 0, 0, time.UTC), time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, text := range []string{"contract", "water"} {
		q := Query{Text: text, After: after, Before: before, NoVectors: true, PerMessage: true, Limit: 7}
		f, err := buildFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		all := search.MatchAll(text)
		want, err := s.ids(ctx, `SELECT m.id FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
			WHERE messages_fts MATCH ? AND `+f.sql()+` ORDER BY messages_fts.rank, m.id`, append([]any{all}, f.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 10 {
			t.Fatalf("%s: %d matches in range; the fixture should give more", text, len(want))
		}
		if _, ok, err := s.filteredTopHits(ctx, all, f, 5); !ok || err != nil {
			t.Fatalf("%s: not ranked from the doclist: ok=%v, %v", text, ok, err)
		}
		var got []int64
		for off := 0; ; off += q.Limit {
			q.Offset = off
			r, err := s.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(r.Messages)...)
			if r.Page.Next == 0 {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s in range:\n got %v\nwant %v", text, got, want)
		}
	}
}
