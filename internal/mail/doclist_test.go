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

// compareDoclists checks wordDoclist against the fts5vocab table for
// every indexed word, and returns the number of segments.
func compareDoclists(t *testing.T, s *Store, stage string) int {
	t.Helper()
	ctx := context.Background()
	_, structure, err := ftsState(ctx, s.DB())
	if err != nil {
		t.Fatal(err)
	}
	segs, ok := ftsSegments(structure)
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
		docs, freq, ok, err := wordDoclist(ctx, s.DB(), w, structure)
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
	if _, ok := ftsSegments(append(merging, 0)); ok {
		t.Error("structure record with trailing bytes accepted")
	}
	if _, ok := ftsSegments(append([]byte{0xff, 0, 0, 1}, structure[4:]...)); ok {
		t.Error("second structure layout accepted")
	}
	if _, ok := ftsSegments(structure[:len(structure)-1]); ok {
		t.Error("truncated structure record accepted")
	}
	// A damaged page of a common word: a length that runs past its data.
	var seg, page int64
	if err := s.DB().QueryRow(`SELECT segid, pgno >> 1 FROM messages_fts_idx WHERE term <= x'307761746572' ORDER BY segid, term DESC LIMIT 1`).Scan(&seg, &page); err != nil {
		t.Fatal(err)
	}
	var block []byte
	if err := s.DB().QueryRow(`SELECT block FROM messages_fts_data WHERE id = ?`, leafRowid(seg, page)).Scan(&block); err != nil {
		t.Fatal(err)
	}
	bad := slices.Clone(block)
	binary.BigEndian.PutUint16(bad[2:], uint16(len(bad)+1))
	exec(`UPDATE messages_fts_data SET block = ? WHERE id = ?`, bad, leafRowid(seg, page))
	if _, _, ok, err := wordDoclist(ctx, s.DB(), "water", structure); ok || err != nil {
		t.Fatalf("damaged page read: ok=%v, %v", ok, err)
	}
	exec(`UPDATE messages_fts_data SET block = ? WHERE id = ?`, block, leafRowid(seg, page))
}

// FuzzLeafPage: whatever a page holds, reading it ends in a doclist or a
// refusal, never a panic.
func FuzzLeafPage(f *testing.F) {
	f.Add([]byte{0, 0, 0, 16, 6, '0', 'w', 'a', 't', 'e', 'r', 2, 4, 2, 1, 3, 4}, []byte("0water"))
	f.Add([]byte{0, 4, 0, 9, 9, 2, 4, 2, 4, 4}, []byte("0a"))
	f.Add([]byte{0, 0, 0, 4}, []byte("0"))
	f.Fuzz(func(t *testing.T, page, key []byte) {
		leaf, err := parseLeaf(page)
		if err != nil {
			return
		}
		d := doclistDecoder{counts: len(key)%2 == 0} // with positions counted, or not
		if off, found, err := leaf.find(key); err == nil && found {
			d.startAbsolute(0)
			d.buf = append(d.buf, leaf.data[off:leaf.termEnd(off)]...)
		} else if leaf.firstRowid >= 4 && leaf.firstRowid <= leaf.size {
			d.startAbsolute(leaf.firstRowid - 4)
			d.buf = append(d.buf, leaf.data[4:leaf.size]...)
		}
		l, err := d.decode()
		if err != nil {
			return
		}
		if d.counts != (l.count != nil) || d.counts && len(l.count) != len(l.ids) {
			t.Fatalf("%d counts for %d entries (asked: %v)", len(l.count), len(l.ids), d.counts)
		}
		for i, id := range l.ids {
			if i > 0 && id <= l.ids[i-1] || l.freq[i] < 0 {
				t.Fatalf("id %d after %d, frequency %v", id, l.ids[max(i-1, 0)], l.freq[i])
			}
			// Every position adds its column's weight (1 to 4).
			if d.counts && (l.freq[i] < float64(l.count[i]) || l.freq[i] > 4*float64(l.count[i])) {
				t.Fatalf("entry %d: frequency %v for %d positions", id, l.freq[i], l.count[i])
			}
		}
	})
}
