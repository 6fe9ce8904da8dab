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

// With vectors on, a phrase's matches all hold the phrase, a query no
// message holds has no match (Total 0), and what only the vectors found is
// listed apart: never by default (Options.Related off, as with the hashed
// embedder), and when asked or on by default, only in Result.Related.
func TestVectorsNeverAddMatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 64}
	s := openStore(t, emb)
	d := func(i int) string { return time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	phrase := map[string]bool{}
	var items []Item
	for i := range 60 {
		id := fmt.Sprintf("%d@ph", i)
		body := "the report on alpha came in; lunch at noon"
		switch i % 3 {
		case 0:
			body = "the alpha report is attached"
			phrase[id] = true
		case 1:
			body = "nothing to see, the canteen is closed"
		}
		items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: id,
			Raw: []byte(msg(id, fmt.Sprintf("p%d@x.org", i), "me@home.org", fmt.Sprintf("Note %d", i), d(i), body))})
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EmbedPending(ctx, 32, 1000); err != nil {
		t.Fatal(err)
	}
	msgID := map[int64]string{}
	rows, err := s.DB().QueryContext(ctx, `SELECT id, message_id FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var mid string
		rows.Scan(&id, &mid)
		msgID[id] = mid
	}
	rows.Close()
	yes := true
	for _, c := range []struct {
		name    string
		q       Query
		related bool // the store's default
		matches int
		listed  bool // a related list expected
	}{
		{"phrase, default off", Query{Text: `"alpha report"`}, false, 20, false},
		{"phrase, asked", Query{Text: `"alpha report"`, Related: &yes}, false, 20, true},
		{"nothing matches, default off", Query{Text: "zqxjv"}, false, 0, false},
		{"nothing matches, default on", Query{Text: "zqxjv"}, true, 0, true},
	} {
		s.opts.Related = c.related
		c.q.Count, c.q.Limit, c.q.PerMessage = true, 50, true
		r, err := s.Search(ctx, c.q)
		if err != nil || r.Mode != "hybrid" || r.Total == nil || *r.Total != c.matches {
			t.Fatalf("%s: mode %s, total %v, want %d, %v", c.name, r.Mode, r.Total, c.matches, err)
		}
		for _, m := range r.Messages {
			if c.matches == 0 || !phrase[msgID[m.ID]] || m.Related {
				t.Errorf("%s: match %s holds the phrase %v, related %v", c.name, msgID[m.ID], phrase[msgID[m.ID]], m.Related)
			}
		}
		if c.matches > 0 && len(r.Messages) != c.matches {
			t.Errorf("%s: %d matches listed, want %d", c.name, len(r.Messages), c.matches)
		}
		if (len(r.Related) > 0) != c.listed {
			t.Errorf("%s: %d related, want a list %v", c.name, len(r.Related), c.listed)
		}
		for _, m := range r.Related {
			if (c.matches > 0 && phrase[msgID[m.ID]]) || !m.Related {
				t.Errorf("%s: related %s holds the phrase %v, flag %v", c.name, msgID[m.ID], phrase[msgID[m.ID]], m.Related)
			}
		}
	}
}
