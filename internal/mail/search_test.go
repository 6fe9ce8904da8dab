package mail

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store/storetest"
)

// seedSearch ingests a small mailbox with known content.
func seedSearch(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	d := func(day int) string { return time.Date(2026, 6, day, 9, 0, 0, 0, time.UTC).Format(time.RFC1123Z) }
	items := []Item{
		{Mailbox: "INBOX", Path: "1", Raw: []byte(msg("1@x", "Marco Rossi <marco@solar.it>", "me@home.org", "Solar certification", d(1), "The installer sent the certification for the photovoltaic panels."))},
		{Mailbox: "INBOX", Path: "2", Raw: []byte(msg("2@x", "me@home.org", "marco@solar.it", "Re: Solar certification", d(2), "Thanks, received the certification.", "In-Reply-To: <1@x>"))},
		{Mailbox: "INBOX", Path: "3", Raw: []byte(msg("3@x", "Accountant <tax@studio.it>", "me@home.org", "Property taxes 2026", d(3), "Attached the documents about property taxes and the IMU payment."))},
		{Mailbox: "Sent", Path: "4", Raw: []byte(msg("4@x", "me@home.org", "anna@polimi.it", "Lunch", d(4), "See you at noon at the canteen."))},
		{Mailbox: "INBOX", Path: "5", Flags: flagsSeen(), Raw: []byte(msg("5@x", "News <news@list.org>", "me@home.org", "Weekly digest", d(5), strings.Repeat("energy market prices ", 200)))},
	}
	for i := range items {
		items[i].Account = "personal"
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
}

func TestSearchModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	seedSearch(t, s)
	subjects := func(r Result) string {
		var out []string
		for _, m := range r.Messages {
			out = append(out, m.Subject)
		}
		return strings.Join(out, "|")
	}
	cases := []struct {
		name string
		q    Query
		want string
		mode string
	}{
		{"lexical collapses thread", Query{Text: "certification solar"}, "Re: Solar certification", "lexical"},
		{"lexical per message", Query{Text: "certification", PerMessage: true}, "Re: Solar certification|Solar certification", "lexical"},
		{"diacritics and case", Query{Text: "PHOTOVOLTAIC"}, "Solar certification", "lexical"},
		{"natural language falls back to any word", Query{Text: "the email about property taxes", Limit: 1}, "Property taxes 2026", "lexical"},
		{"substring sender", Query{From: "arco@sol", PerMessage: true}, "Solar certification", "browse"},
		{"substring subject + role", Query{Subject: "unc", Role: "sent"}, "Lunch", "browse"},
		{"absent substring", Query{Body: "zzzqqq"}, "", "browse"},
		{"browse by date", Query{PerMessage: true, Limit: 2}, "Weekly digest|Lunch", "browse"},
		{"browse by size", Query{Sort: "size", Limit: 1}, "Weekly digest", "browse"},
		{"unread filter", Query{Unread: ptr(false)}, "Weekly digest", "browse"},
		{"date window", Query{After: time.Date(2026, 6, 3, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 6, 4, 0, 0, 0, 0, time.UTC)}, "Property taxes 2026", "browse"},
		{"mailbox", Query{Mailbox: "sent"}, "Lunch", "browse"},
		{"unknown account", Query{Account: "nope"}, "", "browse"},
		{"text with filter", Query{Text: "certification", From: "me@home"}, "Re: Solar certification", "lexical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r, err := s.Search(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := subjects(r); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if r.Mode != c.mode {
				t.Errorf("mode %s, want %s", r.Mode, c.mode)
			}
		})
	}
}

func TestSearchBadQueries(t *testing.T) {
	t.Parallel()
	s := openStore(t, nil)
	for _, q := range []Query{
		{Role: "spamfolder"},
		{Sort: "random"},
		{Offset: -1},
		{After: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{MinSize: -5},
	} {
		if _, err := s.Search(context.Background(), q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("%+v: err = %v, want ErrBadQuery", q, err)
		}
	}
}

func TestSearchPagingAndSnippets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	var items []Item
	for i := 0; i < 25; i++ {
		items = append(items, Item{Account: "a", Mailbox: "INBOX", Path: fmt.Sprint(i),
			Raw: []byte(msg(fmt.Sprintf("%d@x", i), fmt.Sprintf("u%d@x.org", i), "me@x.org", fmt.Sprintf("report %d", i),
				time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC).Format(time.RFC1123Z), strings.Repeat("filler ", 100)+"quarterly report numbers"))})
	}
	s.Ingest(ctx, items)
	seen := map[int64]bool{}
	off := 0
	for page := 0; ; page++ {
		r, err := s.Search(ctx, Query{Text: "quarterly", Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range r.Messages {
			if seen[m.ID] {
				t.Fatalf("duplicate %d across pages", m.ID)
			}
			seen[m.ID] = true
			max := 120
			if i < 3 {
				max = 200
			}
			if n := len([]rune(strings.Trim(m.Snippet, "…"))); n > max {
				t.Errorf("snippet %d has %d chars", i, n)
			}
			if !strings.Contains(m.Snippet, "quarterly") {
				t.Errorf("snippet %q misses the hit", m.Snippet)
			}
		}
		if r.Page.Next == 0 {
			break
		}
		off = r.Page.Next
		if page > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 25 {
		t.Errorf("paged through %d messages, want 25", len(seen))
	}
	// Without snippets: the same page, no body text.
	with, err := s.Search(ctx, Query{Text: "quarterly", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	without, err := s.Search(ctx, Query{Text: "quarterly", Limit: 10, NoSnippets: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(with.Messages)) != fmt.Sprint(ids(without.Messages)) || len(without.Messages) != 10 {
		t.Fatalf("NoSnippets changed the page: %v vs %v", ids(without.Messages), ids(with.Messages))
	}
	for _, m := range without.Messages {
		if m.Snippet != "" || m.Subject == "" {
			t.Fatalf("NoSnippets summary: %+v", m)
		}
	}
}

func TestHybridSearchAndEmbeddingLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 64}
	s := openStore(t, emb)
	seedSearch(t, s)

	r, _ := s.Search(ctx, Query{Text: "certification"})
	if r.Mode != "lexical" || r.Degraded == "" {
		t.Errorf("before vectors: mode %s degraded %q", r.Mode, r.Degraded)
	}
	n, err := s.EmbedPending(ctx, 2, 100)
	if err != nil || n != 5 {
		t.Fatalf("embedded %d, %v", n, err)
	}
	calls := emb.calls
	if n, _ := s.EmbedPending(ctx, 2, 100); n != 0 || emb.calls != calls {
		t.Errorf("unchanged messages re-embedded: %d", n)
	}
	// Semantic-only match: no lexical hit for "imu payment documents accountant"? it has; use a
	// query whose words hit only via vectors after lexical AND+OR fail.
	r, err = s.Search(ctx, Query{Text: "property taxes"})
	if err != nil || r.Mode != "hybrid" || r.Messages[0].Subject != "Property taxes 2026" {
		t.Fatalf("hybrid = %+v %v", r, err)
	}
	// Vectors are stored quantised (dim+4 bytes), and an index loaded
	// back from them ranks exactly as the one built while embedding.
	var wide int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM embeddings WHERE length(vector) != dim + 4`).Scan(&wide); err != nil || wide != 0 {
		t.Errorf("%d vectors not stored quantised (%v)", wide, err)
	}
	s.vecMu.Lock()
	s.vec = nil
	s.vecMu.Unlock()
	if err := s.LoadVectors(ctx); err != nil || s.vec == nil || s.vec.Len() != 5 {
		t.Fatalf("LoadVectors: %v, index %v", err, s.vec)
	}
	if again, err := s.Search(ctx, Query{Text: "property taxes"}); err != nil || !reflect.DeepEqual(ids(again.Messages), ids(r.Messages)) {
		t.Errorf("after loading stored vectors: %v, want %v (%v)", ids(again.Messages), ids(r.Messages), err)
	}
	// The vectors add no message to the matches: those are exactly
	// the word search's; what only the vectors found is listed apart,
	// when asked (the store's default here is off).
	lex, err := s.Search(ctx, Query{Text: "property taxes", NoVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Related) != 0 {
		t.Errorf("related listed unasked: %+v", r.Related)
	}
	yes := true
	r, err = s.Search(ctx, Query{Text: "property taxes", Related: &yes})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sortedIDs(r.Messages), sortedIDs(lex.Messages)) {
		t.Errorf("hybrid matches %v, word matches %v", ids(r.Messages), ids(lex.Messages))
	}
	if len(r.Related) == 0 {
		t.Error("no related messages: the fixture should give some")
	}
	for _, m := range r.Related {
		if !m.Related || slices.Contains(ids(lex.Messages), m.ID) {
			t.Errorf("related %q: flag %v, among the word matches %v", m.Subject, m.Related, ids(lex.Messages))
		}
	}
	// A precomputed vector finds the message even with no lexical
	// overlap: as related, never as a match.
	v, _ := emb.Embed(ctx, []string{"Lunch\n\nSee you at noon at the canteen."})
	r, _ = s.Search(ctx, Query{Text: "xyzzy", Vector: v[0], Role: "sent", Related: &yes, Count: true})
	if len(r.Messages) != 0 || r.Total == nil || *r.Total != 0 || len(r.Related) != 1 || r.Related[0].Subject != "Lunch" || !r.Related[0].Related {
		t.Errorf("vector only: matches %+v, total %v, related %+v", r.Messages, r.Total, r.Related)
	}
	// Changing the body invalidates the hash and schedules a new vector.
	s.DB().ExecContext(ctx, `UPDATE messages SET body = 'new text', embed_hash = 'changed' WHERE message_id = '4@x'`)
	if n, _ := s.EmbedPending(ctx, 8, 100); n != 1 {
		t.Errorf("changed message re-embedded %d", n)
	}
	// A dimension change resets every vector.
	emb.dim = 32
	s.DB().ExecContext(ctx, `UPDATE messages SET embed_hash = 'changed2' WHERE message_id = '3@x'`)
	if n, _ := s.EmbedPending(ctx, 8, 100); n != 1 {
		t.Errorf("embedded %d after dimension change", n)
	}
	var dims int
	s.DB().QueryRowContext(ctx, `SELECT count(DISTINCT dim) FROM embeddings`).Scan(&dims)
	st, _ := s.Stats(ctx)
	if dims != 1 || st.Vectors != 1 {
		t.Errorf("after reset: %d dims, %d vectors", dims, st.Vectors)
	}
	if n, _ := s.EmbedPending(ctx, 8, 100); n != 4 {
		t.Errorf("re-embedded %d after reset, want 4", n)
	}
}

func TestEmbedFailuresAreGranular(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 16, fail: func(s string) bool { return strings.Contains(s, "canteen") }}
	s := openStore(t, emb)
	seedSearch(t, s)
	n, err := s.EmbedPending(ctx, 32, 100)
	if err != nil || n != 4 {
		t.Fatalf("stored %d, %v; want 4 with the bad one left pending", n, err)
	}
	emb.fail = func(string) bool { return true }
	s.DB().ExecContext(ctx, `UPDATE messages SET embed_hash = 'x'`)
	if _, err := s.EmbedPending(ctx, 32, 100); !errors.Is(err, ErrEmbedderUnavailable) {
		t.Errorf("all failing: %v", err)
	}
	// Search still works lexically while the embedder is down.
	r, err := s.Search(ctx, Query{Text: "certification"})
	if err != nil || len(r.Messages) == 0 || r.Degraded == "" {
		t.Errorf("degraded search = %+v %v", r, err)
	}
}

func TestReadAndThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, nil)
	raw := "Message-ID: <att@x>\nFrom: a@x.org\nTo: b@x.org\nSubject: files\nDate: Mon, 5 Jan 2026 10:00:00 +0000\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\n" +
		strings.Repeat("é", 50) + "\n--B\nContent-Type: text/csv; name=a.csv\nContent-Disposition: attachment; filename=a.csv\n\nx,y\n--B--\n"
	s.Ingest(ctx, []Item{{Account: "a", Mailbox: "INBOX", Path: "p", Raw: []byte(raw)},
		{Account: "a", Mailbox: "INBOX", Path: "q", Raw: []byte(msg("r@x", "b@x.org", "a@x.org", "Re: files", "Tue, 6 Jan 2026 10:00:00 +0000", "got them", "In-Reply-To: <att@x>"))}})
	r, _ := s.Search(ctx, Query{Text: "files", PerMessage: true})
	var id int64
	for _, m := range r.Messages {
		if m.Subject == "files" {
			id = m.ID
		}
	}
	m, err := s.Read(ctx, id, 10, 20)
	if err != nil {
		t.Fatal(err)
	}
	if m.Body != strings.Repeat("é", 20) || m.NextOffset != 30 || m.BodyLength != 50 || m.BodyState != BodyFull {
		t.Errorf("paged body = %q next %d len %d", m.Body, m.NextOffset, m.BodyLength)
	}
	if len(m.Attachments) != 1 || m.Attachments[0].Filename != "a.csv" || !m.Attachments[0].Stored {
		t.Fatalf("attachments = %+v", m.Attachments)
	}
	a, data, err := s.AttachmentData(ctx, id, 0)
	if err != nil || string(data) != "x,y" || a.Size != 3 {
		t.Errorf("attachment data = %q %v", data, err)
	}
	if _, _, err := s.AttachmentData(ctx, id, 5); err == nil {
		t.Error("missing attachment index accepted")
	}
	tp, err := s.Thread(ctx, id, 0, 1, 0)
	if err != nil || tp.Count != 2 || len(tp.Messages) != 1 || tp.Messages[0].Subject != "Re: files" || tp.Page.Next != 1 {
		t.Errorf("thread page = %+v %v", tp, err)
	}
	if _, err := s.Read(ctx, 9999, 0, 0); err == nil {
		t.Error("missing message read")
	}
}

func ids(ms []Summary) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// Vectors stored as float32 by earlier versions shrink to the quantised
// form, and the hybrid ranking is the same before and after.
func TestShrinkVectors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 64}
	s := openStore(t, emb)
	seedSearch(t, s)
	if _, err := s.EmbedPending(ctx, 8, 100); err != nil {
		t.Fatal(err)
	}
	// Write every vector back in the float32 form earlier versions used.
	rows, err := s.db.QueryContext(ctx, `SELECT message_id, dim, vector FROM embeddings`)
	if err != nil {
		t.Fatal(err)
	}
	legacy := map[int64][]byte{}
	for rows.Next() {
		var id int64
		var dim int
		var blob []byte
		if err := rows.Scan(&id, &dim, &blob); err != nil {
			t.Fatal(err)
		}
		v, err := search.DecodeVector(blob, dim)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 4*len(v))
		for i, f := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
		legacy[id] = b
	}
	rows.Close()
	for id, b := range legacy {
		if _, err := s.db.ExecContext(ctx, `UPDATE embeddings SET vector = ? WHERE message_id = ?`, b, id); err != nil {
			t.Fatal(err)
		}
	}
	s.vecMu.Lock()
	s.vec = nil
	s.vecMu.Unlock()
	before, err := s.Search(ctx, Query{Text: "property taxes"})
	if err != nil || before.Mode != "hybrid" {
		t.Fatalf("hybrid on float32 vectors: %+v %v", before, err)
	}
	n, err := s.ShrinkVectors(ctx)
	if err != nil || n != len(legacy) {
		t.Fatalf("shrank %d of %d, %v", n, len(legacy), err)
	}
	var wide int
	s.db.QueryRowContext(ctx, `SELECT count(*) FROM embeddings WHERE length(vector) != dim + 4`).Scan(&wide)
	if wide != 0 {
		t.Errorf("%d vectors still float32", wide)
	}
	if n, err := s.ShrinkVectors(ctx); err != nil || n != 0 {
		t.Errorf("second run: %d, %v", n, err)
	}
	s.vecMu.Lock()
	s.vec = nil
	s.vecMu.Unlock()
	after, err := s.Search(ctx, Query{Text: "property taxes"})
	if err != nil || !reflect.DeepEqual(ids(after.Messages), ids(before.Messages)) {
		t.Errorf("ranking after shrinking: %v, before %v (%v)", ids(after.Messages), ids(before.Messages), err)
	}
}

// Vectors are stored in ascending id order, a chunk at a time, so the
// table's pages fill up; in the queue's newest-first order they were about
// half full.
func TestVectorPagesFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t, &hashEmbedder{dim: 384})
	var items []Item
	for i := range 3000 {
		id := fmt.Sprintf("%d@fill", i)
		items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: id,
			Raw: []byte(msg(id, "a@x.org", "me@home.org", fmt.Sprintf("Note %d", i), time.Date(2026, 1, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z), "body text"))})
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := s.EmbedPending(ctx, 32, 256)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	var fill float64
	if err := s.DB().QueryRowContext(ctx, `SELECT 1.0 * sum(pgsize - unused) / sum(pgsize) FROM dbstat WHERE name = 'embeddings' AND pagetype = 'leaf'`).Scan(&fill); err != nil {
		t.Fatal(err)
	}
	if fill < 0.85 {
		t.Errorf("embeddings leaf pages are %.0f %% full, want at least 85 %%", 100*fill)
	}
}

// The matches stay exactly the word matches and the related list holds
// none, whether the word ranking is cut short (more all-word matches than
// it reads) or read every match, with FTS5's ranking or the stored
// lengths. Replies without the word are related only when no message of
// their conversation has it (or, per message, always).
func TestRelatedApartAcrossRankingCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 64}
	s := openStore(t, emb)
	d := func(i int) string { return time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	var items []Item
	hasWord := map[string]bool{}
	for i := range 200 {
		id := fmt.Sprintf("%d@rel", i)
		body := "lunch at the canteen at noon"
		if i%4 != 0 { // three in four have the word
			body = "the alpha report is attached"
			hasWord[id] = true
		}
		items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: id,
			Raw: []byte(msg(id, "a@x.org", "me@home.org", fmt.Sprintf("Note %d", i), d(i), body))})
		if i%10 == 0 { // a reply without the word in the same conversation
			rid := fmt.Sprintf("r%d@rel", i)
			items = append(items, Item{Account: "personal", Mailbox: "INBOX", Path: rid,
				Raw: []byte(msg(rid, "me@home.org", "a@x.org", fmt.Sprintf("Re: Note %d", i), d(i+1), "lunch at noon then", "In-Reply-To: <"+id+">"))})
		}
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EmbedPending(ctx, 32, 1000); err != nil {
		t.Fatal(err)
	}
	msgID := map[int64]string{}
	threadHasWord := map[int64]bool{}
	rows, err := s.DB().QueryContext(ctx, `SELECT id, message_id, coalesce(thread_id, 0) FROM messages`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, thread int64
		var mid string
		rows.Scan(&id, &mid, &thread)
		msgID[id] = mid
		if hasWord[mid] && thread != 0 {
			threadHasWord[thread] = true
		}
	}
	rows.Close()
	// The query vector is the canteen text's: the nearest messages are
	// those without the word.
	v, _ := emb.Embed(ctx, []string{"lunch at the canteen at noon"})
	yes := true
	for _, fast := range []bool{false, true} {
		if fast {
			s.wordRankMin = 1
			if wrote, err := s.RefreshRankLengths(ctx); !wrote || err != nil {
				t.Fatalf("refresh: %v %v", wrote, err)
			}
			if _, _, ok, _ := s.rankWord(ctx, "alpha", 10, s.wordRankMin); !ok {
				t.Fatal("the word is not ranked from lengths")
			}
		}
		for _, c := range []struct {
			name  string
			q     Query
			words int // all-word matches the filter leaves
		}{
			{"ranking cut", Query{Text: "alpha", Vector: v[0], Limit: 50}, 150},
			{"every match read", Query{Text: "alpha", Vector: v[0], Limit: 50, After: time.Date(2026, 3, 1, 2, 40, 0, 0, time.UTC)}, 30},
			{"per message", Query{Text: "alpha", Vector: v[0], Limit: 50, PerMessage: true}, 150},
		} {
			c.q.Count, c.q.Related = true, &yes
			r, err := s.Search(ctx, c.q)
			if err != nil || r.Mode != "hybrid" || r.Total == nil || *r.Total != c.words {
				t.Fatalf("%s (fast %v): mode %s, total %v, want %d all-word matches, %v", c.name, fast, r.Mode, r.Total, c.words, err)
			}
			if want := min(c.words, c.q.Limit); len(r.Messages) != want {
				t.Errorf("%s (fast %v): %d matches on the page, want %d", c.name, fast, len(r.Messages), want)
			}
			for _, m := range r.Messages {
				if !hasWord[msgID[m.ID]] || m.Related {
					t.Errorf("%s (fast %v): match %s has the word %v, related %v", c.name, fast, msgID[m.ID], hasWord[msgID[m.ID]], m.Related)
				}
			}
			if len(r.Related) == 0 {
				t.Errorf("%s (fast %v): no related: the fixture should give some", c.name, fast)
			}
			for _, m := range append(r.Messages, r.Related...) {
				if m.Date.Before(c.q.After) {
					t.Errorf("%s (fast %v): %s dated %s, before the range", c.name, fast, msgID[m.ID], m.Date)
				}
			}
			for _, m := range r.Related {
				word := hasWord[msgID[m.ID]] || (!c.q.PerMessage && m.ThreadID != 0 && threadHasWord[m.ThreadID])
				if word || !m.Related {
					t.Errorf("%s (fast %v): related %s has the word (or its conversation does): %v, flag %v", c.name, fast, msgID[m.ID], word, m.Related)
				}
			}
		}
	}
}

// TestEmbedQueue: the embed job looks only at messages new since its last
// complete pass and at queued ones: changed texts, messages that came
// back, failures, ids reused below the mark. Embedded ones leave the
// queue, nothing to do costs no embedder call, a file from before the
// queue gets one full pass.
func TestEmbedQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 16, fail: func(s string) bool { return strings.Contains(s, "canteen") }}
	s := openStore(t, emb)
	seedSearch(t, s)
	queued := func() []int64 {
		t.Helper()
		ids, err := s.ids(ctx, `SELECT message_id FROM embed_queue ORDER BY message_id`)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	next := func() int64 {
		var n int64
		s.DB().QueryRowContext(ctx, `SELECT next_id FROM embed_state`).Scan(&n)
		return n
	}
	all, _ := s.ids(ctx, `SELECT id FROM messages ORDER BY id`)
	if q := queued(); len(q) != 0 || next() != 0 {
		t.Fatalf("after import: queue %v, next %d", q, next())
	}
	if n, err := s.EmbedPending(ctx, 32, 100); n != 4 || err != nil {
		t.Fatalf("stored %d, %v", n, err)
	}
	failed, _ := s.ids(ctx, `SELECT id FROM messages WHERE id NOT IN (SELECT message_id FROM embeddings)`)
	if q := queued(); len(failed) != 1 || !slices.Equal(q, failed) || next() != all[4]+1 {
		t.Fatalf("after the pass: queue %v, want the failed one %v; next %d", q, failed, next())
	}
	emb.fail = nil
	if n, err := s.EmbedPending(ctx, 32, 100); n != 1 || err != nil || len(queued()) != 0 {
		t.Fatalf("retry stored %d, %v; queue %v", n, err, queued())
	}
	calls := emb.calls
	if n, err := s.EmbedPending(ctx, 32, 100); n != 0 || err != nil || emb.calls != calls {
		t.Fatalf("nothing to do: stored %d, %v, %d embedder calls", n, err, emb.calls-calls)
	}
	// A changed text is queued and embedded again.
	s.DB().ExecContext(ctx, `UPDATE messages SET embed_hash = 'changed' WHERE id = ?`, all[0])
	if q := queued(); !slices.Equal(q, all[:1]) {
		t.Fatalf("queued after a change: %v", q)
	}
	if n, err := s.EmbedPending(ctx, 32, 100); n != 1 || err != nil || len(queued()) != 0 {
		t.Fatalf("changed text: stored %d, %v; queue %v", n, err, queued())
	}
	// A message that goes and comes back is looked at again; its vector
	// is current, so it just leaves the queue.
	s.DB().ExecContext(ctx, `UPDATE messages SET deleted_at = 1 WHERE id = ?`, all[1])
	if q := queued(); len(q) != 0 {
		t.Fatalf("a deletion queued %v", q)
	}
	s.DB().ExecContext(ctx, `UPDATE messages SET deleted_at = NULL WHERE id = ?`, all[1])
	if q := queued(); !slices.Equal(q, all[1:2]) {
		t.Fatalf("queued after coming back: %v", q)
	}
	if n, err := s.EmbedPending(ctx, 32, 100); n != 0 || err != nil || len(queued()) != 0 {
		t.Fatalf("came back: stored %d, %v; queue %v", n, err, queued())
	}
	// The newest message removed, its id is given again: below the mark,
	// so it is queued.
	newest := all[4]
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id = ?`, newest); err != nil {
		t.Fatal(err)
	}
	d := time.Date(2026, 6, 9, 9, 0, 0, 0, time.UTC).Format(time.RFC1123Z)
	if _, err := s.Ingest(ctx, []Item{{Account: "personal", Mailbox: "INBOX", Path: "9", Raw: []byte(msg("9@x", "a@x.org", "me@home.org", "Boiler", d, "The boiler needs service."))}}); err != nil {
		t.Fatal(err)
	}
	if q := queued(); !slices.Equal(q, []int64{newest}) {
		t.Fatalf("reused id %d: queue %v", newest, q)
	}
	if n, err := s.EmbedPending(ctx, 32, 100); n != 1 || err != nil || len(queued()) != 0 {
		t.Fatalf("reused id: stored %d, %v; queue %v", n, err, queued())
	}
	// A new message above the mark is found without the queue.
	if _, err := s.Ingest(ctx, []Item{{Account: "personal", Mailbox: "INBOX", Path: "10", Raw: []byte(msg("10@x", "a@x.org", "me@home.org", "Roof", d, "The roof is fine."))}}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.EmbedPending(ctx, 32, 100); n != 1 || err != nil {
		t.Fatalf("new message: stored %d, %v", n, err)
	}

	// A file from before the queue: one full pass finds what is pending.
	s.DB().ExecContext(ctx, `DELETE FROM embeddings WHERE message_id = ?`, all[2])
	s.DB().ExecContext(ctx, `UPDATE embeddings SET hash = 'old' WHERE message_id = ?`, all[3])
	// Back to the version before the queue: the migrations after it run
	// again (the sources table and the date weeks came after it; the
	// date index's rebuild drops whichever index is there).
	v := slices.IndexFunc(Schema.Migrations, func(m string) bool { return strings.Contains(m, "CREATE TABLE embed_state") })
	for _, q := range []string{`DROP TRIGGER messages_embed_ai`, `DROP TRIGGER messages_embed_au`, `DROP TABLE embed_queue`, `DROP TABLE embed_state`, `DROP TABLE sources`,
		`DROP TRIGGER messages_weeks`, `DROP TABLE message_weeks`, fmt.Sprintf(`PRAGMA user_version = %d`, v)} {
		if _, err := s.DB().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	path := s.DB().Path
	s.Close()
	s2, err := Open(ctx, Options{DBPath: path, BlobDir: t.TempDir(), Embedder: emb, EmbedModel: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s = s2
	if n, err := s.EmbedPending(ctx, 32, 100); n != 2 || err != nil {
		t.Fatalf("after the migration: stored %d, %v", n, err)
	}
}

// TestDeletedMessagesLeaveTheVectorIndex: a message soft-deleted while the
// index is loaded leaves it (it no longer takes a place among the nearest)
// and comes back with its stored vector when its copy reappears.
func TestDeletedMessagesLeaveTheVectorIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 16}
	s := openStore(t, emb)
	seedSearch(t, s)
	if _, err := s.EmbedPending(ctx, 32, 100); err != nil {
		t.Fatal(err)
	}
	idx, err := s.index(ctx)
	if err != nil || idx.Len() != 5 {
		t.Fatalf("index: %v, %v", idx, err)
	}
	var lunch int64
	s.DB().QueryRowContext(ctx, `SELECT id FROM messages WHERE message_id = '4@x'`).Scan(&lunch)
	v, _ := emb.Embed(ctx, []string{"See you at noon at the canteen."})
	nearest := func() int64 {
		t.Helper()
		hits, err := idx.Search(v[0], 1, nil)
		if err != nil || len(hits) != 1 {
			t.Fatalf("nearest: %v %v", hits, err)
		}
		return hits[0].ID
	}
	if nearest() != lunch {
		t.Fatal("the fixture's nearest message is not the lunch one")
	}
	if n, err := s.RemovePaths(ctx, []string{"4"}); n != 1 || err != nil {
		t.Fatalf("removed %d, %v", n, err)
	}
	if idx.Len() != 4 || nearest() == lunch {
		t.Fatalf("after the deletion: %d vectors, nearest %d", idx.Len(), nearest())
	}
	d := time.Date(2026, 6, 4, 9, 0, 0, 0, time.UTC).Format(time.RFC1123Z)
	if _, err := s.Ingest(ctx, []Item{{Account: "personal", Mailbox: "Sent", Path: "4", Raw: []byte(msg("4@x", "me@home.org", "anna@polimi.it", "Lunch", d, "See you at noon at the canteen."))}}); err != nil {
		t.Fatal(err)
	}
	if idx.Len() != 5 || nearest() != lunch {
		t.Fatalf("after it came back: %d vectors, nearest %d", idx.Len(), nearest())
	}
}

// TestVectorCandidatesPastFiltered: the nearest vectors are checked against
// the filters a few at a time; when the nearest fail them, the next ones
// are checked, in KNN order, until enough pass or the pool ends.
func TestVectorCandidatesPastFiltered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	emb := &hashEmbedder{dim: 64}
	s := openStore(t, emb)
	var items []Item
	for i := range 130 {
		box := "INBOX"
		if i%4 == 3 {
			box = "Archive"
		}
		body := "project alpha report" + strings.Repeat(" filler", i%7) + fmt.Sprintf(" n%d", i)
		items = append(items, Item{Account: "a", Mailbox: box, Path: fmt.Sprint(i),
			Raw: []byte(msg(fmt.Sprintf("%d@knn", i), "x@y.example", "me@home.example", "Report", "Mon, 2 Mar 2026 10:00:00 +0000", body))})
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.EmbedPending(ctx, 64, 1000); err != nil {
		t.Fatal(err)
	}
	q := Query{Text: "project alpha report", Mailbox: "Archive"}
	f, err := buildFilter(q)
	if err != nil {
		t.Fatal(err)
	}
	got, why := s.vectorCandidates(ctx, q, f)
	if why != "" {
		t.Fatal(why)
	}
	// What the index ranks, filtered afterwards.
	idx, err := s.index(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qv, _ := emb.Embed(ctx, []string{q.Text})
	near, _ := idx.Search(qv[0], vectorPool*4, nil)
	archive := map[int64]bool{}
	rows, err := s.DB().QueryContext(ctx, `SELECT m.id FROM messages m JOIN mailboxes b ON b.id = m.mailbox_id WHERE b.name = 'Archive'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		archive[id] = true
	}
	rows.Close()
	var want []int64
	for _, h := range near {
		if archive[h.ID] && len(want) < vectorPool {
			want = append(want, h.ID)
		}
	}
	var gotIDs []int64
	for _, h := range got {
		gotIDs = append(gotIDs, h.id)
	}
	if len(want) < 30 || !slices.Equal(gotIDs, want) {
		t.Fatalf("candidates %v, want the archived ones in KNN order %v", gotIDs, want)
	}
}

// seededWithVectors is seedSearch's store with every message embedded.
func seededWithVectors(t *testing.T, emb search.Embedder) *Store {
	s := openStore(t, emb)
	seedSearch(t, s)
	if _, err := s.EmbedPending(context.Background(), 2, 100); err != nil {
		t.Fatal(err)
	}
	return s
}

// A search, read or thread runs its statements without a goroutine watching
// each (see store.ReadContext); an ended context still stops it before any.
func TestQueriesWatchNoStatement(t *testing.T) {
	t.Parallel()
	s := seededWithVectors(t, &hashEmbedder{dim: 64})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := &storetest.WatchedContext{Context: parent}
	r, err := s.Search(ctx, Query{Text: "solar certification"})
	if err != nil || r.Mode != "hybrid" || len(r.Messages) == 0 {
		t.Fatalf("search = %+v, %v", r, err)
	}
	id := r.Messages[0].ID
	if _, err := s.Read(ctx, id, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Thread(ctx, id, 0, 5, 0); err != nil {
		t.Fatal(err)
	}
	if n := ctx.Watches(); n != 0 {
		t.Errorf("the statements watched the context %d times", n)
	}
	cancel()
	if _, err := s.Search(ctx, Query{Text: "solar"}); !errors.Is(err, context.Canceled) {
		t.Errorf("search after cancel: %v", err)
	}
	if _, err := s.Read(ctx, id, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v", err)
	}
	if _, err := s.Thread(ctx, id, 0, 5, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("thread after cancel: %v", err)
	}
}

// endingEmbedder records whether the last embedding's context could end.
type endingEmbedder struct {
	hashEmbedder
	canEnd atomic.Bool
}

func (e *endingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.canEnd.Store(ctx.Done() != nil)
	return e.hashEmbedder.Embed(ctx, texts)
}

// The query's embedding, unlike the statements, still ends with the
// request: an embedding endpoint may be remote and slow.
func TestQueryEmbeddingEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	emb := &endingEmbedder{hashEmbedder: hashEmbedder{dim: 64}}
	s := seededWithVectors(t, emb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emb.canEnd.Store(false)
	if r, err := s.Search(ctx, Query{Text: "solar certification"}); err != nil || r.Mode != "hybrid" {
		t.Fatalf("search = %+v, %v", r, err)
	}
	if !emb.canEnd.Load() {
		t.Error("the query was embedded with a context that cannot end")
	}
}

// sortedIDs is ids(ms) in increasing order.
func sortedIDs(ms []Summary) []int64 {
	out := ids(ms)
	slices.Sort(out)
	return out
}
