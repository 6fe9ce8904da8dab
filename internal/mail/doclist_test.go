package mail

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/fts5"
)

// vocabFrequencies is what FTS5's own fts5vocab table says of word: the
// messages holding it and its weighted frequency in each.
func vocabFrequencies(t *testing.T, s *Store, word string) ([]int64, []float64) {
	t.Helper()
	var list sql.NullString
	if err := s.DB().QueryRow(`SELECT group_concat(doc * 128 + unicode(col)) FROM messages_fts_instances WHERE term = ?`, word).Scan(&list); err != nil {
		t.Fatal(err)
	}
	docs, freq, err := wordFrequencies(list.String)
	if err != nil {
		t.Fatal(err)
	}
	return docs, freq
}

// compareDoclists checks the page reader against the fts5vocab table for
// every indexed word, and returns the number of segments.
func compareDoclists(t *testing.T, s *Store, stage string) int {
	t.Helper()
	ctx := context.Background()
	_, structure, err := ftsState(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	segs, ok := fts5.Segments(structure)
	if !ok {
		t.Fatalf("%s: structure record %x not understood", stage, structure)
	}
	rows, err := s.DB().Query(`SELECT term FROM temp_vocab`)
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for rows.Next() {
		var w string
		rows.Scan(&w)
		words = append(words, w)
	}
	rows.Close()
	if len(words) < 1000 {
		t.Fatalf("%s: only %d words", stage, len(words))
	}
	words = append(words, "zqxjvwkq", "", "0water") // absent, empty, a key's prefix byte
	for _, w := range words {
		docs, freq, ok, err := newPageReader().Word(ctx, s.DB(), w, structure)
		if err != nil || !ok {
			t.Fatalf("%s: %q: ok=%v, %v", stage, w, ok, err)
		}
		wantDocs, wantFreq := vocabFrequencies(t, s, w)
		if !slices.Equal(docs, wantDocs) || !slices.Equal(freq, wantFreq) {
			t.Fatalf("%s: %q: pages say %v %v, fts5vocab %v %v", stage, w, docs, freq, wantDocs, wantFreq)
		}
	}
	return len(segs)
}

// TestWordDoclistIsFTS5s: a word's messages and frequencies decoded from
// the index pages are exactly what FTS5 reports, for every word, in an
// index of one segment with doclists spanning many small pages, and in
// one of many segments holding deletes and updates of the same messages.
// A merge in progress or a damaged page is left to FTS5.
func TestWordDoclistIsFTS5s(t *testing.T) {
	skipReference(t)
	t.Parallel()
	ctx := context.Background()
	s, _, maildir := generatedStore(t, 400, 5)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := s.DB().ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// Small pages: common words' doclists run over dozens of them, and
	// positions lists across page ends.
	exec(`INSERT INTO messages_fts(messages_fts, rank) VALUES ('pgsz', 64)`)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	exec(`CREATE VIRTUAL TABLE temp.temp_vocab USING fts5vocab(main, messages_fts, row)`)
	exec(`INSERT INTO messages_fts(messages_fts) VALUES ('optimize')`)
	if n := compareDoclists(t, s, "one segment"); n != 1 {
		t.Fatalf("%d segments after optimize", n)
	}

	// Many segments: every write its own, none merged.
	exec(`INSERT INTO messages_fts(messages_fts, rank) VALUES ('automerge', 0)`)
	exec(`INSERT INTO messages_fts(messages_fts, rank) VALUES ('crisismerge', 64)`)
	d := func(i int) string { return time.Date(2026, 3, 1, 0, i, 0, 0, time.UTC).Format(time.RFC1123Z) }
	item := func(i int, subject, body string) Item {
		return Item{Account: "extra", Mailbox: "INBOX", Path: fmt.Sprintf("x%d", i),
			Raw: []byte(msg(fmt.Sprintf("x%d@doclist", i), "water@utility.example", "me@home.example", subject, d(i), body))}
	}
	for i := range 12 {
		if _, err := s.Ingest(ctx, []Item{item(i, fmt.Sprintf("Water bill %d", i), strings.Repeat("water level ", 40*i+1))}); err != nil {
			t.Fatal(err)
		}
	}
	exec(`DELETE FROM messages WHERE id % 7 = 0`) // delete entries in a newer segment
	for _, i := range []int{2, 5} {               // the same message rewritten: delete and insert in one entry
		if _, err := s.Ingest(ctx, []Item{item(i, "Meter", "the meter moved, no water today")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Ingest(ctx, []Item{item(40, "Water again", "water")}); err != nil {
		t.Fatal(err)
	}
	if n := compareDoclists(t, s, "many segments"); n < 5 {
		t.Fatalf("only %d segments: the merge case is not exercised", n)
	}

	// What the reader does not understand goes to FTS5.
	_, structure, err := ftsState(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	merging := slices.Clone(structure)
	if _, ok := fts5.Segments(append(merging, 0)); ok {
		t.Error("structure record with trailing bytes accepted")
	}
	if _, ok := fts5.Segments(append([]byte{0xff, 0, 0, 1}, structure[4:]...)); ok {
		t.Error("second structure layout accepted")
	}
	if _, ok := fts5.Segments(structure[:len(structure)-1]); ok {
		t.Error("truncated structure record accepted")
	}
	// A damaged page of a common word: a length that runs past its data.
	var seg, page int64
	if err := s.DB().QueryRow(`SELECT segid, pgno >> 1 FROM messages_fts_idx WHERE term <= x'307761746572' ORDER BY segid, term DESC LIMIT 1`).Scan(&seg, &page); err != nil {
		t.Fatal(err)
	}
	var block []byte
	if err := s.DB().QueryRow(`SELECT block FROM messages_fts_data WHERE id = ?`, fts5.LeafRowid(seg, page)).Scan(&block); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(block)
	binary.BigEndian.PutUint16(bad[2:], uint16(len(bad)+1))
	exec(`UPDATE messages_fts_data SET block = ? WHERE id = ?`, bad, fts5.LeafRowid(seg, page))
	if _, _, ok, err := newPageReader().Word(ctx, s.DB(), "water", structure); ok || err != nil {
		t.Fatalf("damaged page read: ok=%v, %v", ok, err)
	}
	exec(`UPDATE messages_fts_data SET block = ? WHERE id = ?`, block, fts5.LeafRowid(seg, page))
}

// skipReference skips, under -short, the slow reference tests that compare
// the page reader and the Go ranking with FTS5 word by word (20 s each).
// They are what fts5.VerifiedSource stands for: run them again whenever
// the linked SQLite changes.
func skipReference(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("reference comparison with FTS5: skipped under -short")
	}
}

// TestSearchWithoutPageReader: with the page reader off (what Open does
// when the linked FTS5 is not the verified build), one-word and phrase
// searches read fts5vocab or leave the ranking to FTS5, and answer exactly
// as with it.
func TestSearchWithoutPageReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, maildir := generatedStore(t, 300, 11)
	if _, err := s.Import(ctx, maildir, ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !s.PageReader().OK || s.pages == nil {
		t.Fatalf("page reader off in the verified build: %v", s.PageReader())
	}
	if err := s.WarmRanking(ctx); err != nil {
		t.Fatal(err)
	}
	var words []string
	rows, err := s.DB().Query(`SELECT term FROM messages_fts_instances GROUP BY term ORDER BY count(DISTINCT doc) DESC, term LIMIT 20`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w string
		rows.Scan(&w)
		words = append(words, w)
	}
	rows.Close()
	if len(words) < 10 {
		t.Fatalf("only %d words", len(words))
	}
	search := func() []string {
		var out []string
		for _, q := range append(slices.Clone(words), `"`+words[0]+" "+words[1]+`"`) {
			ids, all, ok, err := s.rankWord(ctx, q, 10, 0)
			if err != nil || !ok && !strings.HasPrefix(q, `"`) {
				t.Fatalf("%q ranked in Go: ok=%v, %v", q, ok, err)
			}
			res, err := s.Search(ctx, Query{Text: q, Limit: 10, NoVectors: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, m := range res.Messages {
				got = append(got, m.ID)
			}
			out = append(out, fmt.Sprint(q, ids, len(all), ok, got))
		}
		return out
	}
	with := search()
	s.pages = nil
	without := search()
	for i := range with {
		if with[i] != without[i] {
			t.Errorf("with the page reader %s\nwithout it     %s", with[i], without[i])
		}
	}
}
