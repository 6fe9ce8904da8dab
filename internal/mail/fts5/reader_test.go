package fts5

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// TestVerifiedSourceIsLinked: the FTS5 linked into this build is the one
// the page reader was verified with. When modernc.org/sqlite moves, this
// fails (and stores fall back to fts5vocab): run the reference tests
// (go test ./internal/mail/... -run IsFTS5s, and this package's), then
// move VerifiedSource and VerifiedVersion.
func TestVerifiedSourceIsLinked(t *testing.T) {
	t.Parallel()
	c, err := Check(context.Background(), openDB(t))
	if err != nil {
		t.Fatal(err)
	}
	if !c.OK || c.Version != VerifiedVersion {
		t.Fatalf("linked SQLite %s, FTS5 %q; verified %s, %q", c.Version, c.Source, VerifiedVersion, VerifiedSource)
	}
	if !strings.Contains(c.String(), "read directly") {
		t.Errorf("Compat.String() = %q", c.String())
	}
}

func TestCompatString(t *testing.T) {
	t.Parallel()
	c := Compat{Version: "3.99.0", Source: "fts5: 2030-01-01 abc"}
	s := c.String()
	for _, want := range []string{"3.99.0", "fts5: 2030-01-01 abc", VerifiedVersion, "fts5vocab"} {
		if !strings.Contains(s, want) {
			t.Errorf("Compat.String() = %q, want it to name %q", s, want)
		}
	}
}

func TestCheckNeedsFTS5Functions(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	tx.Rollback()
	// A rolled-back transaction cannot answer: the error names what was read.
	if _, err := Check(context.Background(), tx); err == nil || !strings.Contains(err.Error(), "FTS5 versions") {
		t.Fatalf("Check on a closed transaction = %v", err)
	}
}

func TestVarint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in []byte
		v  uint64
		n  int
	}{
		{[]byte{0}, 0, 1},
		{[]byte{0x7f}, 127, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0x81}, 0, 0}, // truncated
		{nil, 0, 0},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 1<<64 - 1, 9},
	} {
		if v, n := Varint(tc.in); v != tc.v || n != tc.n {
			t.Errorf("Varint(%x) = %d, %d; want %d, %d", tc.in, v, n, tc.v, tc.n)
		}
	}
}

func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // the temp vocab table lives on one connection
	t.Cleanup(func() { db.Close() })
	return db
}

// TestReaderIsFTS5s: on a table of its own (two columns weighted 3 and 1,
// small pages), every word's doclist read from the pages is what the
// fts5vocab table says, with one segment and with many (deletes and
// rewrites in newer ones). Mail's TestWordDoclistIsFTS5s does the same on
// a generated mailbox.
func TestReaderIsFTS5s(t *testing.T) {
	if testing.Short() {
		t.Skip("reference comparison with FTS5: skipped under -short")
	}
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE VIRTUAL TABLE docs USING fts5(title, body)`)
	exec(`CREATE VIRTUAL TABLE temp.vocab_rows USING fts5vocab(main, docs, row)`)
	exec(`CREATE VIRTUAL TABLE temp.vocab_inst USING fts5vocab(main, docs, instance)`)
	exec(`INSERT INTO docs(docs, rank) VALUES ('pgsz', 64)`)
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := strings.Fields("water meter level report bill quarter note river lake rain snow ice cloud storm wind sun")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
			if rng.IntN(4) == 0 {
				w[i] += fmt.Sprint(rng.IntN(50)) // rarer words
			}
		}
		return strings.Join(w, " ")
	}
	for i := 1; i <= 300; i++ {
		exec(`INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)`, i, text(3), text(rng.IntN(200)+1))
	}
	r := NewReader("docs", []float64{3, 1})
	exec(`INSERT INTO docs(docs) VALUES ('optimize')`)
	if n := compareWithVocab(t, db, r); n != 1 {
		t.Fatalf("%d segments after optimize", n)
	}
	exec(`INSERT INTO docs(docs, rank) VALUES ('automerge', 0)`)
	exec(`INSERT INTO docs(docs, rank) VALUES ('crisismerge', 64)`)
	for i := 301; i <= 320; i++ {
		exec(`INSERT INTO docs(rowid, title, body) VALUES (?, ?, ?)`, i, "water "+text(2), strings.Repeat("water level ", 30*(i-300)))
	}
	exec(`DELETE FROM docs WHERE rowid % 7 = 0`)
	exec(`UPDATE docs SET body = 'the meter moved, no water today' WHERE rowid IN (2, 305)`)
	if n := compareWithVocab(t, db, r); n < 5 {
		t.Fatalf("only %d segments: the merge case is not exercised", n)
	}
}

// compareWithVocab checks the reader against fts5vocab for every word of
// docs (and an absent one), returning the number of segments.
func compareWithVocab(t *testing.T, db *sql.DB, r *Reader) int {
	t.Helper()
	ctx := context.Background()
	var structure []byte
	if err := db.QueryRow(`SELECT block FROM docs_data WHERE id = 10`).Scan(&structure); err != nil {
		t.Fatal(err)
	}
	segs, ok := Segments(structure)
	if !ok {
		t.Fatalf("structure record %x not understood", structure)
	}
	rows, err := db.Query(`SELECT term FROM vocab_rows`)
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
	if len(words) < 100 {
		t.Fatalf("only %d words", len(words))
	}
	for _, w := range append(words, "zqxj") {
		got, ok, err := r.Entries(ctx, db, w, structure, 0, true)
		if err != nil || !ok {
			t.Fatalf("%q: ok=%v, %v", w, ok, err)
		}
		var want Doclist
		irows, err := db.Query(`SELECT doc, col FROM vocab_inst WHERE term = ? ORDER BY doc`, w)
		if err != nil {
			t.Fatal(err)
		}
		for irows.Next() {
			var id int64
			var col string
			irows.Scan(&id, &col)
			if n := len(want.IDs); n == 0 || want.IDs[n-1] != id {
				want.IDs, want.Freq, want.Count = append(want.IDs, id), append(want.Freq, 0), append(want.Count, 0)
			}
			want.Freq[len(want.Freq)-1] += map[string]float64{"title": 3, "body": 1}[col]
			want.Count[len(want.Count)-1]++
		}
		irows.Close()
		if !slices.Equal(got.IDs, want.IDs) || !slices.Equal(got.Freq, want.Freq) || !slices.Equal(got.Count, want.Count) {
			t.Fatalf("%q: pages say %+v, fts5vocab %+v", w, got, want)
		}
	}
	return len(segs)
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
		d := doclistDecoder{counts: len(key)%2 == 0, weights: []float64{4, 2, 1, 1}} // with positions counted, or not
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
		if d.counts != (l.Count != nil) || d.counts && len(l.Count) != len(l.IDs) {
			t.Fatalf("%d counts for %d entries (asked: %v)", len(l.Count), len(l.IDs), d.counts)
		}
		for i, id := range l.IDs {
			if i > 0 && id <= l.IDs[i-1] || l.Freq[i] < 0 {
				t.Fatalf("id %d after %d, frequency %v", id, l.IDs[max(i-1, 0)], l.Freq[i])
			}
			// Every position adds its column's weight (1 to 4).
			if d.counts && (l.Freq[i] < float64(l.Count[i]) || l.Freq[i] > 4*float64(l.Count[i])) {
				t.Fatalf("entry %d: frequency %v for %d positions", id, l.Freq[i], l.Count[i])
			}
		}
	})
}
