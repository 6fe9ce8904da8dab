package mail

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/fts5"
)

// ftsOrder is FTS5's own ranking of a one-word query: ids and bm25 scores.
func ftsOrder(t *testing.T, s *Store, word string) ([]int64, map[int64]float64) {
	t.Helper()
	return ftsExprOrder(t, s, `"`+word+`"`)
}

// checkWords compares rankWord with FTS5 for every indexed word: the same
// scores bit for bit, the same order, the same cut at n.
func checkWords(t *testing.T, s *Store) (checked int) {
	t.Helper()
	ctx := context.Background()
	// Every word in five messages or more, and a sample of the rarer ones
	// (13,000 words in all take seconds).
	rows, err := s.DB().Query(`SELECT term, doc FROM temp_vocab`)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for i := 0; rows.Next(); i++ {
		var w string
		var docs int
		rows.Scan(&w, &docs)
		if _, ok := plainWord(`"` + w + `"`); ok && (docs >= 5 || i%20 == 0) {
			words = append(words, w)
		}
	}
	rows.Close()
	if len(words) < 100 {
		t.Fatalf("only %d words indexed", len(words))
	}
	// The scores below come from the index pages, not the fts5vocab table.
	_, structure, err := ftsState(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		if _, _, ok, err := newPageReader().Word(ctx, s.DB(), w, structure); !ok || err != nil {
			t.Fatalf("%q: the index pages were not read: ok=%v, %v", w, ok, err)
		}
		want, score := ftsOrder(t, s, w)
		docs, scores, ok, err := s.wordScores(ctx, w, 0)
		if err != nil || !ok {
			t.Fatalf("%q: ok=%v, %v", w, ok, err)
		}
		if len(docs) != len(want) {
			t.Fatalf("%q: %d matches, FTS5 has %d", w, len(docs), len(want))
		}
		for i, id := range docs {
			if math.Float64bits(scores[i]) != math.Float64bits(score[id]) {
				t.Fatalf("%q: message %d scores %v, FTS5 %v", w, id, scores[i], score[id])
			}
		}
		cuts := []int{len(want) + 10}
		if checked%20 == 0 {
			cuts = append(cuts, 1, 50)
		}
		for _, n := range cuts {
			got, all, ok, err := s.rankWord(ctx, w, n, 0)
			if err != nil || !ok || !slices.Equal(got, want[:min(n, len(want))]) || !slices.Equal(all, docs) {
				t.Fatalf("%q, first %d: %v (ok=%v, %v), FTS5 %v", w, n, got, ok, err, want[:min(n, len(want))])
			}
		}
		checked++
	}
	return checked
}

// TestWordRankingIsFTS5s: a one-word ranking computed from the stored
// message lengths is FTS5's bm25 ranking, score for score, for every word
// of a mailbox (subject, sender and recipient words weighted, long bodies,
// ties, deleted and replaced messages); stale lengths are never used, and
// a search gives the same page either way.
func TestWordRankingIsFTS5s(t *testing.T) {
	skipReference(t)
	t.Parallel()
	ctx := context.Background()
	s, dir, maildir := generatedStore(t, 600, 3)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	d := func(i int) string { return time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	var items []Item
	for i := range 40 {
		body := "short note"
		switch i % 4 {
		case 1: // long: token counts past one and two varint bytes
			body = strings.Repeat("water level report ", 200*(i+1))
		case 2:
			body = strings.Repeat("water ", i)
		}
		if i == 5 { // past 65,535 tokens: stored apart from the two-byte counts
			body = strings.Repeat("water x ", 35000)
		}
		items = append(items, Item{Account: "extra", Mailbox: "INBOX", Path: fmt.Sprintf("x%d", i),
			Raw: []byte(msg(fmt.Sprintf("x%d@rank", i), "water@utility.example", "me@home.example", fmt.Sprintf("Water bill %d", i%3), d(i), body))})
	}
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	// Hard deletes leave FTS5 tombstones; a replaced body changes a length.
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id % 17 = 0`); err != nil {
		t.Fatal(err)
	}
	items[3].Raw = []byte(msg("x3@rank", "water@utility.example", "me@home.example", "Water bill", d(3), "now a much longer note about the water meter"))
	if _, err := s.Ingest(ctx, items[3:4]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `CREATE VIRTUAL TABLE temp.temp_vocab USING fts5vocab(main, messages_fts, row)`); err != nil {
		t.Fatal(err)
	}

	// The import stored lengths, but the ingest and deletes since made
	// them stale: nothing is ranked from them.
	if _, _, ok, err := s.rankWord(ctx, "water", 10, 0); ok || err != nil {
		t.Fatalf("stale lengths used: ok=%v, %v", ok, err)
	}
	plain, err := s.Search(ctx, Query{Text: "water", Limit: 20, NoVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	if wrote, err := s.RefreshRankLengths(ctx); !wrote || err != nil {
		t.Fatalf("refresh: wrote=%v, %v", wrote, err)
	}
	if wrote, err := s.RefreshRankLengths(ctx); wrote || err != nil {
		t.Fatalf("second refresh: wrote=%v, %v", wrote, err)
	}
	if dl, err := loadDocLengths(ctx, s.DB()); err != nil || dl == nil || len(dl.big) != 8 {
		t.Fatalf("stored lengths: %+v, %v; want one past 65,535 tokens", dl, err)
	}
	st := time.Now()
	n := checkWords(t, s)
	t.Logf("checked %d in %v", n, time.Since(st))
	if n < 100 {
		t.Fatalf("%d words checked", n)
	}
	s.wordRankMin = 1
	fast, err := s.Search(ctx, Query{Text: "water", Limit: 20, NoVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(fast.Messages)) != fmt.Sprint(ids(plain.Messages)) || len(plain.Messages) != 20 {
		t.Fatalf("page ranked from lengths %v, by FTS5 %v", ids(fast.Messages), ids(plain.Messages))
	}

	// Another process (the CLI) reads the stored lengths.
	other, err := Open(ctx, Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got, _, ok, err := other.rankWord(ctx, "water", 5, 0); !ok || err != nil || len(got) != 5 {
		t.Fatalf("second store: %v ok=%v, %v", got, ok, err)
	}

	// Below minDocs a word is left to FTS5 while the counts are not in
	// memory, and ranked from them once WarmRanking (the daemon, at
	// start) loaded them.
	if _, _, ok, err := other.rankWord(ctx, "level", 5, 1<<30); !ok || err != nil {
		t.Fatalf("counts loaded by a search are not reused: ok=%v, %v", ok, err)
	}
	fresh, err := Open(ctx, Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, _, ok, err := fresh.rankWord(ctx, "level", 5, 1<<30); ok || err != nil {
		t.Fatalf("a rare word ranked from counts not in memory: ok=%v, %v", ok, err)
	}
	if err := fresh.WarmRanking(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := fresh.rankWord(ctx, "level", 5, 1<<30); !ok || err != nil {
		t.Fatalf("after WarmRanking: ok=%v, %v", ok, err)
	}
	// A write makes them stale; the refresh that follows keeps them in
	// memory for a process that had them (the daemon).
	if _, err := fresh.Ingest(ctx, []Item{{Account: "extra", Mailbox: "INBOX", Path: "warm",
		Raw: []byte(msg("warm@rank", "a@b.example", "me@home.example", "Level", d(50), "level water"))}}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := fresh.rankWord(ctx, "level", 5, 1<<30); ok || err != nil {
		t.Fatalf("stale counts in memory used: ok=%v, %v", ok, err)
	}
	if wrote, err := fresh.RefreshRankLengths(ctx); !wrote || err != nil {
		t.Fatalf("refresh after the write: wrote=%v, %v", wrote, err)
	}
	if _, _, ok, err := fresh.rankWord(ctx, "level", 5, 1<<30); !ok || err != nil {
		t.Fatalf("the refresh dropped the counts from memory: ok=%v, %v", ok, err)
	}

	// An import that changed nothing looks at the row's small columns
	// only: current now, not for a row of another size (another layout)
	// or none at all.
	if ok, err := fresh.lengthsLookCurrent(ctx); !ok || err != nil {
		t.Fatalf("current row: looks current %v, %v", ok, err)
	}
	if _, err := s.DB().ExecContext(ctx, `UPDATE fts_lengths SET lengths = lengths || x'00'`); err != nil {
		t.Fatal(err)
	}
	if ok, err := fresh.lengthsLookCurrent(ctx); ok || err != nil {
		t.Fatalf("a row of another size looks current: %v, %v", ok, err)
	}
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM fts_lengths`); err != nil {
		t.Fatal(err)
	}
	if ok, err := fresh.lengthsLookCurrent(ctx); ok || err != nil {
		t.Fatalf("no row for a written index looks current: %v, %v", ok, err)
	}
	if wrote, err := fresh.RefreshRankLengths(ctx); !wrote || err != nil {
		t.Fatalf("refresh without a row: wrote=%v, %v", wrote, err)
	}

	// A damaged row (or one an older layout wrote) is not used; the next
	// full refresh (the daemon's, an import that changes something,
	// --full) replaces it.
	if _, err := s.DB().ExecContext(ctx, `UPDATE fts_lengths SET lengths = zeroblob(length(lengths) - 4) || x'01000000'`); err != nil {
		t.Fatal(err)
	}
	third, err := Open(ctx, Options{DBPath: filepath.Join(dir, "mail.db"), BlobDir: filepath.Join(dir, "blobs")})
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if _, _, ok, err := third.rankWord(ctx, "water", 5, 0); ok || err != nil {
		t.Fatalf("damaged lengths used: ok=%v, %v", ok, err)
	}
	if wrote, err := third.RefreshRankLengths(ctx); !wrote || err != nil {
		t.Fatalf("refresh over a damaged row: wrote=%v, %v", wrote, err)
	}
	if _, _, ok, err := third.rankWord(ctx, "water", 5, 0); !ok || err != nil {
		t.Fatalf("after the refresh: ok=%v, %v", ok, err)
	}
	// A forced one (hestia mail import --full) rewrites a current row.
	if wrote, err := third.refreshRankLengths(ctx, true); !wrote || err != nil {
		t.Fatalf("forced refresh: wrote=%v, %v", wrote, err)
	}

	// Words FTS5 would tokenize differently are left to it.
	for _, expr := range []string{`"wäter"`, `"water level"`, `"water"*`, `water`, `"wat_er"`, `""`} {
		if _, ok := plainWord(expr); ok {
			t.Errorf("plainWord(%s) accepted", expr)
		}
	}
	if w, ok := plainWord(`"WaTer42"`); !ok || w != "water42" {
		t.Errorf("plainWord folds case: %q %v", w, ok)
	}
}

// TestWordFrequencies: the instance list is parsed into weighted
// frequencies per message, and a list that is not what the query writes
// is refused with what is wrong, never half-read.
func TestWordFrequencies(t *testing.T) {
	// 7 in its subject and body twice, 9 in its sender.
	docs, freq, err := wordFrequencies("1011,994,994,1254")
	if err != nil || !slices.Equal(docs, []int64{7, 9}) || !slices.Equal(freq, []float64{6, 2}) {
		t.Fatalf("got %v %v, %v", docs, freq, err)
	}
	if docs, freq, err := wordFrequencies(""); docs != nil || freq != nil || err != nil {
		t.Fatalf("empty list: %v %v %v", docs, freq, err)
	}
	for list, want := range map[string]string{
		"1011,,994":            "empty entry",
		"1011,x":               "bad instance list near",
		"1254,1011":            "out of order",
		"1000":                 "no column",
		"99999999999999999999": "bad instance list near",
		"1011,":                "empty entry",
	} {
		if _, _, err := wordFrequencies(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", list, err, want)
		}
	}
}

// TestPackLengths: counts round-trip through the stored layout, big ones
// included, and blobs of another shape are refused.
func TestPackLengths(t *testing.T) {
	counts := []uint32{0, 7, 65534, 65535, 1 << 20, 3, 70000}
	packed := packLengths(counts)
	lengths, big, ok := unpackLengths(packed)
	if !ok || len(lengths) != 2*len(counts) || len(big) != 3*8 {
		t.Fatalf("unpacked %d, %d bytes, %v", len(lengths), len(big), ok)
	}
	d := &docLengths{base: 10, lengths: lengths, big: big}
	for i, want := range counts {
		got, ok := d.length(int64(10 + i))
		if got != want || ok != (want > 0) {
			t.Errorf("id %d: %d %v, want %d", 10+i, got, ok, want)
		}
	}
	for _, id := range []int64{9, 17, -1} {
		if _, ok := d.length(id); ok {
			t.Errorf("id %d outside the counts found", id)
		}
	}
	for _, bad := range [][]byte{nil, {1, 0}, {2, 0, 0, 0, 1, 0}, append(packed, 1)} {
		if _, _, ok := unpackLengths(bad); ok {
			t.Errorf("%x accepted", bad)
		}
	}
}

// ftsExprOrder is FTS5's own ranking of a match expression: ids and bm25
// scores.
func ftsExprOrder(t *testing.T, s *Store, expr string) ([]int64, map[int64]float64) {
	t.Helper()
	rows, err := s.DB().Query(`SELECT rowid, rank FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank + 0, rowid`, expr)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	score := map[int64]float64{}
	for rows.Next() {
		var id int64
		var rank float64
		if err := rows.Scan(&id, &rank); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		score[id] = -rank
	}
	return ids, score
}

// TestPhraseRankingIsFTS5s: a phrase ranked from its anchor word's doclist
// and the lengths in memory is FTS5's bm25 ranking, score for score, for
// phrases taken from the subjects and bodies of a mailbox whose index has
// several segments, deletes and a replaced message, with the counts in
// memory or not; a message holding the anchor twice leaves it to FTS5.
func TestPhraseRankingIsFTS5s(t *testing.T) {
	skipReference(t)
	t.Parallel()
	ctx := context.Background()
	s, _, maildir := generatedStore(t, 400, 9)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	d := func(i int) string { return time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	var items []Item
	for i := range 30 {
		body := fmt.Sprintf("meter reading %d for the quarter", i)
		if i%3 == 0 {
			body = strings.Repeat("long report of the meter reading ", 10*(i+1))
		}
		items = append(items, Item{Account: "extra", Mailbox: "INBOX", Path: fmt.Sprintf("p%d", i),
			Raw: []byte(msg(fmt.Sprintf("p%d@rank", i), "meter@utility.example", "me@home.example", fmt.Sprintf("Meter reading %d", i%4), d(i), body))})
	}
	for i := range 230 { // a phrase of more than maxColdPhraseDocs messages
		items = append(items, Item{Account: "extra", Mailbox: "INBOX", Path: fmt.Sprintf("w%d", i),
			Raw: []byte(msg(fmt.Sprintf("w%d@rank", i), "level@utility.example", "me@home.example", "Levels", d(100+i), strings.Repeat("x ", i%9)+"the water level report"))})
	}
	items = append(items, Item{Account: "extra", Mailbox: "INBOX", Path: "twice",
		Raw: []byte(msg("twice@rank", "a@b.example", "me@home.example", "Twice", d(40), "gamma delta and gamma again"))})
	if _, err := s.Ingest(ctx, items); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, `DELETE FROM messages WHERE id % 13 = 0`); err != nil {
		t.Fatal(err)
	}
	items[4].Raw = []byte(msg("p4@rank", "meter@utility.example", "me@home.example", "Meter reading", d(4), "the meter reading was wrong, meter reading again"))
	if _, err := s.Ingest(ctx, items[4:5]); err != nil {
		t.Fatal(err)
	}
	if _, structure, err := ftsState(ctx, s.DB()); err != nil || len(mustSegments(t, structure)) < 2 {
		t.Fatalf("want an index of several segments: %v", err)
	}

	// Phrases of two and three words from subjects and bodies.
	rows, err := s.DB().Query(`SELECT subject || ' ' || body FROM messages_text WHERE id % 19 = 1`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{`"meter reading"`: true, `"the meter reading"`: true, `"water level"`: true}
	phrases := []string{`"meter reading"`, `"the meter reading"`, `"water level"`}
	for rows.Next() {
		var text string
		rows.Scan(&text)
		words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
		for i := 0; i+3 <= len(words); i += 5 {
			for _, k := range []int{2, 3} {
				p := `"` + strings.Join(words[i:i+k], " ") + `"`
				if !seen[p] {
					seen[p] = true
					phrases = append(phrases, p)
				}
			}
		}
	}
	rows.Close()
	check := func(st *Store, how string) {
		t.Helper()
		ranked, many := 0, 0
		for _, p := range phrases {
			words, ok := plainPhrase(p)
			if !ok {
				continue
			}
			want, score := ftsExprOrder(t, s, p)
			if how != "warm" {
				// A phrase of many matches loads every count and keeps it.
				st.docLengths.Store(nil)
			}
			docs, scores, ok, err := st.phraseScores(ctx, p, words)
			if err != nil {
				t.Fatalf("%s, %s: %v", how, p, err)
			}
			if !ok {
				continue
			}
			ranked++
			if len(docs) > maxColdPhraseDocs {
				many++
				if how != "warm" && st.docLengths.Load() == nil {
					t.Fatalf("%s, %s: %d matches ranked without loading the counts", how, p, len(docs))
				}
			} else if how != "warm" && st.docLengths.Load() != nil {
				t.Fatalf("%s, %s: %d matches loaded every count", how, p, len(docs))
			}
			if len(docs) != len(want) {
				t.Fatalf("%s, %s: %d matches, FTS5 has %d", how, p, len(docs), len(want))
			}
			for i, id := range docs {
				if math.Float64bits(scores[i]) != math.Float64bits(score[id]) {
					t.Fatalf("%s, %s: message %d scores %v, FTS5 %v", how, p, id, scores[i], score[id])
				}
			}
			for _, n := range []int{1, 5, len(want) + 3} {
				got, all, ok, err := st.rankPhrase(ctx, p, words, n)
				if err != nil || !ok || !slices.Equal(got, want[:min(n, len(want))]) || !slices.Equal(all, docs) {
					t.Fatalf("%s, %s, first %d: %v (ok=%v, %v), FTS5 %v", how, p, n, got, ok, err, want[:min(n, len(want))])
				}
			}
		}
		t.Logf("%s: %d of %d phrases ranked from their anchor, %d of them with more than %d matches", how, ranked, len(phrases), many, maxColdPhraseDocs)
		if ranked < 100 || ranked*2 < len(phrases) {
			t.Fatalf("%s: only %d of %d phrases ranked from their anchor", how, ranked, len(phrases))
		}
		// Without current counts stored, a phrase of many matches is
		// FTS5's to rank.
		if how == "no counts stored" && many > 0 || how != "no counts stored" && many == 0 {
			t.Fatalf("%s: %d phrases of more than %d matches ranked", how, many, maxColdPhraseDocs)
		}
	}
	// A one-shot process reads a few matches' token counts from their
	// docsize records, or every count from the row import stores; the
	// daemon has them in memory.
	check(s, "no counts stored")
	if _, err := s.RefreshRankLengths(ctx); err != nil {
		t.Fatal(err)
	}
	check(s, "cold")
	if err := s.WarmRanking(ctx); err != nil {
		t.Fatal(err)
	}
	check(s, "warm")
	// "gamma" (the anchor: the longest word, first) twice in a message
	// that holds the phrase.
	if _, _, ok, err := s.rankPhrase(ctx, `"gamma delta"`, []string{"gamma", "delta"}, 10); ok || err != nil {
		t.Fatalf("anchor held twice: ok=%v, %v", ok, err)
	}
	// A search gives the same page either way.
	fast, err := s.Search(ctx, Query{Text: `"meter reading"`, Limit: 10, NoVectors: true, PerMessage: true})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ftsExprOrder(t, s, `"meter reading"`)
	live := want[:0:0]
	for _, id := range want {
		if id%13 != 0 {
			live = append(live, id)
		}
	}
	if got := ids(fast.Messages); len(got) == 0 || !slices.Equal(got, live[:len(got)]) {
		t.Fatalf("search page %v, FTS5 %v", got, live)
	}

	// Phrases FTS5 would tokenize differently are left to it.
	for _, expr := range []string{`"meter"`, `"meter  reading"`, `"météo reading"`, `"meter reading"*`, `"meter" AND "reading"`, `""`} {
		if _, ok := plainPhrase(expr); ok {
			t.Errorf("plainPhrase(%s) accepted", expr)
		}
	}
}

func mustSegments(t *testing.T, structure []byte) []fts5.Segment {
	t.Helper()
	segs, ok := fts5.Segments(structure)
	if !ok {
		t.Fatal("structure record not read")
	}
	return segs
}

// rankWord returns the first n matches of word in the order of
// "ORDER BY rank + 0, rowid", and every message holding it (docs, in id
// order, deleted ones too), as the search ranks them (wordScores and
// topScored); ok is false when wordScores cannot say.
func (s *Store) rankWord(ctx context.Context, word string, n, minDocs int) (ids, docs []int64, ok bool, err error) {
	docs, scores, ok, err := s.wordScores(ctx, word, minDocs)
	if !ok || err != nil {
		return nil, nil, ok, err
	}
	return topScored(docs, scores, n), docs, true, nil
}

// rankPhrase is rankWord for the phrase all of plain words (see
// phraseScores).
func (s *Store) rankPhrase(ctx context.Context, all string, words []string, n int) (ids, docs []int64, ok bool, err error) {
	docs, scores, ok, err := s.phraseScores(ctx, all, words)
	if !ok || err != nil {
		return nil, nil, ok, err
	}
	return topScored(docs, scores, n), docs, true, nil
}
