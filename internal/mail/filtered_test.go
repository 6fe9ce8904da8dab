package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
)

// A word or phrase under a date range is ranked from its doclist and the
// filters applied by either plan (filteredTopHits: checks best match
// first, or a scan of the date range); every page must be FTS5's own order
// of the filtered join, ties by id. Some messages get ids far from their
// dates' (old mail imported last), some in range are deleted, and the
// ranges include open-ended, one-day and empty ones.
func TestFilteredRankingIsFTS5s(t *testing.T) {
	ctx := context.Background()
	s, _, maildir := generatedStore(t, 1500, 3)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	// Old mail arriving last: high ids, dates all over the corpus's span.
	var late []Item
	for i := range 60 {
		d := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i*433) * time.Hour).Format(time.RFC1123Z)
		id := fmt.Sprintf("late%d@x", i)
		late = append(late, Item{Account: "personal", Mailbox: "INBOX", Path: id,
			Raw: []byte(msg(id, "old@x.org", "me@home.org", "Old contract", d, "The contract and the water meter, again."))})
	}
	if _, err := s.Ingest(ctx, late); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefreshRankLengths(ctx); err != nil {
		t.Fatal(err)
	}
	// Deleted messages never match, in range or not.
	if _, err := s.DB().ExecContext(ctx, `UPDATE messages SET deleted_at = 1 WHERE id % 17 = 0`); err != nil {
		t.Fatal(err)
	}
	s.wordRankMin = 1
	// A phrase of two words from a message in the middle of the range, one
	// not deleted: import order (and so which ids are deleted) varies.
	var body string
	if err := s.DB().QueryRowContext(ctx, `SELECT t.body FROM messages_text t JOIN messages m ON m.id = t.id WHERE m.date >= ? AND m.deleted_at IS NULL ORDER BY m.date LIMIT 1`, time.Date(2023, 9, 1, 0, 0, 0, 0, time.UTC).Unix()).Scan(&body); err != nil {
		t.Fatal(err)
	}
	words := strings.Fields(strings.Trim(strings.ToLower(body), "."))
	phrase := `"` + strings.Trim(words[3], ".,") + " " + strings.Trim(words[4], ".,") + `"`
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	ranges := []struct {
		name          string
		after, before time.Time
		some          bool // the fixture must give matches
	}{
		{"half a year", day(2023, 7, 1), day(2024, 1, 1), true},
		{"after", day(2025, 6, 1), time.Time{}, true},
		{"before", time.Time{}, day(2023, 3, 1), true},
		{"one day", day(2023, 9, 1), day(2023, 9, 2), false},
		{"no mail", day(1990, 1, 1), day(1991, 1, 1), false},
	}
	for _, text := range []string{"contract", "water", phrase} {
		all := search.MatchAll(text)
		for _, r := range ranges {
			q := Query{Text: text, After: r.after, Before: r.before, NoVectors: true, NoSnippets: true, PerMessage: true, Limit: 7}
			f, err := buildFilter(q)
			if err != nil {
				t.Fatal(err)
			}
			ranked, err := s.hits(ctx, `SELECT m.id, coalesce(m.thread_id, 0) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
				WHERE messages_fts MATCH ? AND `+f.sql()+` ORDER BY messages_fts.rank, m.id`, append([]any{all}, f.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			// Per message, and one row per conversation (its best).
			var want, wantThreads []int64
			listed := map[int64]bool{}
			for _, h := range ranked {
				want = append(want, h.id)
				if h.thread == 0 || !listed[h.thread] {
					listed[h.thread] = h.thread != 0
					wantThreads = append(wantThreads, h.id)
				}
			}
			if r.some && text != phrase && len(want) < 10 || text == phrase && r.name == "half a year" && len(want) == 0 {
				t.Fatalf("%s %s: %d matches in range; the fixture should give more", text, r.name, len(want))
			}
			// The plans, and the checks cut short (the join takes over,
			// at once or after some pages).
			for _, plan := range []struct {
				name      string
				maxChecks int
			}{{"", maxFilterChecks}, {"scan", maxFilterChecks}, {"checks", maxFilterChecks}, {"checks", 3}, {"checks", 40}} {
				s.filterPlan, s.maxChecks = plan.name, plan.maxChecks
				if top, err := s.topHits(ctx, lexQuery(f), all, f, rankWant{need: 5, ample: 5}); plan.maxChecks == maxFilterChecks && !top.matchingKnown || err != nil {
					t.Fatalf("%s %s, plan %q: not ranked from the doclist: %v", text, r.name, plan.name, err)
				}
				for _, perMessage := range []bool{true, false} {
					q.PerMessage = perMessage
					var got []int64
					for off := 0; ; off += q.Limit {
						q.Offset = off
						res, err := s.Search(ctx, q)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, ids(res.Messages)...)
						sameRows(t, s, res.Messages)
						if res.Page.Next == 0 {
							break
						}
					}
					w := want
					if !perMessage {
						w = wantThreads
					}
					if fmt.Sprint(got) != fmt.Sprint(w) {
						t.Errorf("%s %s, plan %+v, per message %v:\n got %v\nwant %v", text, r.name, plan, perMessage, got, w)
					}
				}
			}
		}
	}
	s.filterPlan, s.maxChecks = "", maxFilterChecks
}

// message_weeks holds, for every week, bounds of the ids of the messages
// dated in it, through inserts (its trigger) and hard deletes, so that
// narrowing a range's matches to those ids never drops one; n counts
// every message ever dated in the week.
func TestMessageWeeksBoundEveryMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	var items []Item
	for i := range 40 {
		// Dates out of id order, some before 1970 (negative weeks).
		d := time.Date(1965+(i*7)%70, time.Month(1+i%12), 1+i%28, 0, 0, 0, 0, time.UTC).Format(time.RFC1123Z)
		id := fmt.Sprintf("%d@w", i)
		items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: id, Raw: []byte(msg(id, "a@x.org", "me@home.org", "Week", d, "text"))})
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id % 5 = 0`); err != nil {
		t.Fatal(err)
	}
	var outside, counted int
	err := s.DB().QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM messages m LEFT JOIN message_weeks w ON w.week = m.date / 604800 WHERE w.week IS NULL OR m.id NOT BETWEEN w.lo AND w.hi),
		(SELECT sum(n) FROM message_weeks)`).Scan(&outside, &counted)
	if err != nil {
		t.Fatal(err)
	}
	if outside != 0 || counted != len(items) {
		t.Fatalf("%d messages outside their week's bounds; weeks count %d of %d", outside, counted, len(items))
	}
	// Go's division is SQLite's: the weeks a range reads are those filled.
	for _, d := range []int64{-1, -604800, -604801, 0, 604799, 604800, 1700000000} {
		var week int64
		if err := s.DB().QueryRowContext(ctx, `SELECT ? / 604800`, d).Scan(&week); err != nil || week != d/weekSeconds {
			t.Errorf("%d / 604800: SQLite %d, Go %d (%v)", d, week, d/weekSeconds, err)
		}
	}
}

// TestMessageDatesNeverChange: message_weeks is kept by an insert trigger
// alone, which holds only while no statement of this package changes a
// stored message's date or id.
func TestMessageDatesNeverChange(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	update := regexp.MustCompile(`(?is)UPDATE\s+messages\s+SET\s+(.*?)(\sWHERE\s|\x60|$)`)
	assigns := regexp.MustCompile(`(?i)(^|[\s,])(date|id)\s*=`)
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range update.FindAllSubmatch(src, -1) {
			checked++
			if assigns.Match(m[1]) {
				t.Errorf("%s: %q changes a message's date or id; message_weeks would no longer bound it (see Schema)", f, m[0])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no UPDATE messages statement found: the pattern is stale")
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

// A collapsed listing whose best matches fold into a few conversations
// reads on past the first checks (bestFirst.stream), and past the checks'
// bound through the join; every page is still the join's order, one row
// per conversation.
func TestCollapsedPagesReadOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	var items []Item
	add := func(id, subject, date, body string, extra ...string) {
		items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: id, Raw: []byte(msg(id, "a@x.org", "me@home.org", subject, date, body, extra...))})
	}
	day := func(i int) string { return time.Date(2025, 3, 1+i%28, 9, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	// Two long conversations whose every message says the word often,
	// then single messages that say it once.
	for c, times := range []int{6, 4} {
		root := fmt.Sprintf("root%d@x", c)
		add(root, fmt.Sprintf("Plan %d", c), day(c), strings.Repeat("budget ", times))
		for i := range 25 {
			add(fmt.Sprintf("r%d-%d@x", c, i), fmt.Sprintf("Re: Plan %d", c), day(i+1), strings.Repeat("budget ", times)+fmt.Sprint(i), "In-Reply-To: <"+root+">")
		}
	}
	for i := range 40 {
		add(fmt.Sprintf("one%d@x", i), fmt.Sprintf("Note %d", i), day(i), fmt.Sprintf("the budget, note %d, and more words to make it longer", i))
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefreshRankLengths(ctx); err != nil {
		t.Fatal(err)
	}
	s.wordRankMin = 1
	for _, c := range []struct {
		name      string
		q         Query
		maxChecks int
	}{
		{"no filter", Query{Text: "budget"}, maxFilterChecks},
		{"date range", Query{Text: "budget", After: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC), Before: time.Date(2025, 3, 26, 0, 0, 0, 0, time.UTC)}, maxFilterChecks},
		{"checks cut short", Query{Text: "budget", After: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)}, 30},
	} {
		s.maxChecks = c.maxChecks
		f, err := buildFilter(c.q)
		if err != nil {
			t.Fatal(err)
		}
		ranked, err := s.hits(ctx, lexQuery(f), append([]any{search.MatchAll(c.q.Text)}, f.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var want []int64
		listed := map[int64]bool{}
		for _, h := range ranked {
			if !listed[h.thread] {
				listed[h.thread] = true
				want = append(want, h.id)
			}
		}
		if len(want) < 20 || len(ranked) < 2*len(want) {
			t.Fatalf("%s: %d rows for %d matches; the fixture should fold more", c.name, len(want), len(ranked))
		}
		q := c.q
		q.NoVectors, q.NoSnippets, q.Limit = true, true, 5
		var got []int64
		for off := 0; ; off += q.Limit {
			q.Offset = off
			res, err := s.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ids(res.Messages)...)
			sameRows(t, s, res.Messages)
			if res.Page.Next == 0 {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, want)
		}
	}
}

// sameRows: a page's rows, however the search read them (with the checks
// or after), are what summaries reads for their ids.
func sameRows(t *testing.T, s *Store, page []Summary) {
	t.Helper()
	want, err := s.summaries(context.Background(), ids(page), false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range page {
		page[i].Partial = false // the ranking's mark, not the row's
	}
	if fmt.Sprint(page) != fmt.Sprint(want) {
		t.Errorf("page rows differ from the messages':\n got %+v\nwant %+v", page, want)
	}
}
