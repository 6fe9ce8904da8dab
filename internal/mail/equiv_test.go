package mail_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail"
	"github.com/hestia-dev/hestia/internal/mail/mailbench"
	"github.com/hestia-dev/hestia/internal/search"
)

// ranked is one result as the equivalence test compares it.
type ranked struct {
	id      int64
	partial bool
}

// reference is the expected answer: every result in order (threads
// collapsed) and the exact total.
type reference struct {
	hits  []ranked
	total int
}

// TestSearchMatchesReference checks Search against plain reference
// queries on a generated corpus with some messages soft-deleted: the full
// ranking of free text (FTS5's own "ORDER BY rank" over every match, all
// words first, then partial matches), and substring filters as a Go scan of
// every message, newest first. Both collapse threads as Search does. Any
// change to candidate narrowing, ranking shortcuts or paging that alters a
// result, its order or its marks fails here.
func TestSearchMatchesReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := mailbench.Generate(filepath.Join(dir, "Maildir"), mailbench.Options{Messages: 1500, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	s, err := mail.Open(ctx, mail.Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Import(ctx, filepath.Join(dir, "Maildir"), mail.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE messages SET deleted_at = 1 WHERE id % 13 = 0`); err != nil {
		t.Fatal(err)
	}

	type row struct {
		id, thread, date            int64
		subject, from, to, cc, body string
	}
	var all []row
	rows, err := s.DB().QueryContext(ctx, `SELECT id, coalesce(thread_id, 0), date, subject, from_addr, to_addr, cc_addr, hestia_body(body) FROM messages WHERE deleted_at IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.thread, &r.date, &r.subject, &r.from, &r.to, &r.cc, &r.body); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rows.Close()
	threadOf := map[int64]int64{}
	for _, r := range all {
		threadOf[r.id] = r.thread
	}
	collapse := func(in []ranked) []ranked {
		seen := map[int64]bool{}
		var out []ranked
		for _, h := range in {
			if th := threadOf[h.id]; th != 0 {
				if seen[th] {
					continue
				}
				seen[th] = true
			}
			out = append(out, h)
		}
		return out
	}
	// ftsRanking is every live match of expr in FTS5 rank order.
	ftsRanking := func(expr string, partial bool, skip map[int64]bool) []ranked {
		rows, err := s.DB().QueryContext(ctx, `SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank`, expr)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []ranked
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			if _, live := threadOf[id]; live && !skip[id] {
				skip[id] = true
				out = append(out, ranked{id, partial})
			}
		}
		return out
	}
	textRef := func(text string) reference {
		seen := map[int64]bool{}
		out := ftsRanking(search.MatchAll(text), false, seen)
		total := len(out)
		if len(search.Clauses(text)) > 1 {
			out = append(out, ftsRanking(search.MatchAny(text), true, seen)...)
		}
		return reference{collapse(out), total}
	}
	filterRef := func(keep func(row) bool) reference {
		var hits []row
		for _, r := range all {
			if keep(r) {
				hits = append(hits, r)
			}
		}
		slices.SortFunc(hits, func(a, b row) int {
			if a.date != b.date {
				return int(b.date - a.date)
			}
			return int(b.id - a.id)
		})
		var out []ranked
		for _, h := range hits {
			out = append(out, ranked{id: h.id})
		}
		return reference{collapse(out), len(hits)}
	}
	contains := func(field, v string) bool { return strings.Contains(search.Fold(field), search.Fold(v)) }
	since := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	until := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)

	cases := []struct {
		name string
		q    mail.Query
		want reference
	}{
		{"common word", mail.Query{Text: "water"}, textRef("water")},
		{"two words", mail.Query{Text: "water invoice"}, textRef("water invoice")},
		{"phrase", mail.Query{Text: `"the water"`}, textRef(`"the water"`)},
		{"topical word", mail.Query{Text: "invoice"}, textRef("invoice")},
		{"absent word", mail.Query{Text: "zqxjvwkq"}, reference{}},
		{"subject", mail.Query{Subject: "invoice"}, filterRef(func(r row) bool { return contains(r.subject, "invoice") })},
		{"from + dates", mail.Query{From: "rossi", After: since, Before: until}, filterRef(func(r row) bool {
			return contains(r.from, "rossi") && r.date >= since.Unix() && r.date < until.Unix()
		})},
		{"to", mail.Query{To: "polimi.it"}, filterRef(func(r row) bool { return contains(r.to, "polimi.it") })},
		{"body", mail.Query{Body: "water"}, filterRef(func(r row) bool { return contains(r.body, "water") })},
		{"subject + body", mail.Query{Subject: "payment", Body: "the"}, filterRef(func(r row) bool {
			return contains(r.subject, "payment") && contains(r.body, "the")
		})},
		{"short subject", mail.Query{Subject: "re"}, filterRef(func(r row) bool { return contains(r.subject, "re") })},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name != "absent word" && len(c.want.hits) == 0 {
				t.Fatalf("reference found nothing: the corpus no longer exercises %s", c.name)
			}
			for _, limit := range []int{50, 7} {
				q := c.q
				q.NoVectors, q.Limit, q.Count = true, limit, true
				var got []ranked
				for page := 0; ; page++ {
					r, err := s.Search(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					if page == 0 && (r.Total == nil || *r.Total != c.want.total) {
						t.Errorf("limit %d: total %v, want %d", limit, r.Total, c.want.total)
					}
					for _, m := range r.Messages {
						got = append(got, ranked{m.ID, m.Partial})
					}
					if r.Page.Next == 0 || len(got) >= 400 {
						break
					}
					q.Offset = r.Page.Next
				}
				want := c.want.hits[:min(len(c.want.hits), len(got))]
				if len(got) < min(len(c.want.hits), 400) {
					t.Fatalf("limit %d: %d results, want %d", limit, len(got), len(c.want.hits))
				}
				if !slices.Equal(got, want) {
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("limit %d: result %d is %+v, want %+v", limit, i, got[i], want[i])
						}
					}
				}
			}
		})
	}
}
