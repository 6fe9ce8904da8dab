package search

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/store"
)

func TestMatchAllQuotesSyntax(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"invoice energy", `"invoice" AND "energy"`},
		{`subject:"x" OR NEAR(a b)`, `"subject" AND "x" AND "or" AND "near" AND "a" AND "b"`},
		{"  ---  ", ""},
		{"Café 2026", `"café" AND "2026"`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			t.Parallel()
			if got := MatchAll(c.in); got != c.want {
				t.Errorf("MatchAll(%q) = %s, want %s", c.in, got, c.want)
			}
		})
	}
	if got := MatchAny("a b"); got != `"a" OR "b"` {
		t.Errorf("MatchAny = %s", got)
	}
}

func TestSubstring(t *testing.T) {
	t.Parallel()
	if _, ok := Substring("body", "ab"); ok {
		t.Error("two characters must be rejected")
	}
	if e, ok := Substring("from_addr", `ma"rco`); !ok || e != `from_addr : "ma""rco"` {
		t.Errorf("got %s %v", e, ok)
	}
}

// TestQueriesAgainstSQLite proves the built expressions are valid FTS5 and
// that hostile input is matched literally, on a real database.
func TestQueriesAgainstSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"), store.Schema{Name: "s", Migrations: []string{`
		CREATE VIRTUAL TABLE w USING fts5(subject, body);
		CREATE VIRTUAL TABLE g USING fts5(subject, body, tokenize='trigram');
		INSERT INTO w(rowid, subject, body) VALUES (1, 'Solar certificate', 'the installer sent it'), (2, 'NEAR(x)', 'column:odd "quoted"');
		INSERT INTO g(rowid, subject, body) SELECT rowid, subject, body FROM w;`}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids := func(table, expr string) []int64 {
		rows, err := db.QueryContext(ctx, "SELECT rowid FROM "+table+" WHERE "+table+" MATCH ? ORDER BY rank", expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		defer rows.Close()
		var out []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			out = append(out, id)
		}
		return out
	}
	if got := ids("w", MatchAll("solar installer")); len(got) != 1 || got[0] != 1 {
		t.Errorf("lexical = %v", got)
	}
	if got := ids("w", MatchAll(`NEAR(x) column:odd "quoted"`)); len(got) != 1 || got[0] != 2 {
		t.Errorf("hostile = %v", got)
	}
	e, _ := Substring("subject", "ertific")
	if got := ids("g", e); len(got) != 1 || got[0] != 1 {
		t.Errorf("substring = %v", got)
	}
	e, _ = Substring("", `odd "quo`)
	if got := ids("g", e); len(got) != 1 || got[0] != 2 {
		t.Errorf("quoted substring = %v", got)
	}
	var _ *sql.DB = db.DB
}

func TestRRF(t *testing.T) {
	t.Parallel()
	got := RRF(60, []int64{1, 2, 3}, []int64{3, 1, 4}, []int64{1, 1})
	if got[0].ID != 1 || got[1].ID != 3 {
		t.Fatalf("order = %+v", got)
	}
	want := 1.0/61 + 1.0/62 + 1.0/61
	if d := got[0].Score - want; d > 1e-12 || d < -1e-12 {
		t.Errorf("score = %v want %v (duplicate in a list must count once)", got[0].Score, want)
	}
	if len(got) != 4 {
		t.Errorf("len = %d", len(got))
	}
	if len(RRF(0)) != 0 {
		t.Error("no lists")
	}
}

func TestIndex(t *testing.T) {
	t.Parallel()
	x := NewIndex(3)
	if err := x.Put(1, []float32{1, 0, 0}); err != nil {
		t.Fatal(err)
	}
	x.Put(2, []float32{0, 1, 0})
	x.Put(3, []float32{0.9, 0.1, 0})
	if err := x.Put(4, []float32{1, 2}); err == nil {
		t.Error("wrong dimension accepted")
	}
	hits, err := x.Search([]float32{1, 0, 0}, 2, nil)
	if err != nil || len(hits) != 2 || hits[0].ID != 1 || hits[1].ID != 3 {
		t.Fatalf("hits = %+v %v", hits, err)
	}
	hits, _ = x.Search([]float32{1, 0, 0}, 2, func(id int64) bool { return id != 1 })
	if hits[0].ID != 3 || hits[1].ID != 2 {
		t.Errorf("filtered = %+v", hits)
	}
	x.Delete(1)
	x.Put(3, []float32{0, 0, 1})
	hits, _ = x.Search([]float32{0, 0, 1}, 5, nil)
	if len(hits) != 2 || hits[0].ID != 3 || x.Len() != 2 {
		t.Errorf("after delete/replace = %+v", hits)
	}
	if _, err := x.Search([]float32{1}, 1, nil); err == nil {
		t.Error("wrong query dimension accepted")
	}
}

// The stored form is what the index keeps: an index loaded from stored
// vectors (new or the float32 form of earlier versions) holds exactly the
// data of one built from the originals, in a quarter of the space.
func TestStoredVectors(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(3))
	const dim = 384
	direct, loaded, legacy, encoded, encodedOld := NewIndex(dim), NewIndex(dim), NewIndex(dim), NewIndex(dim), NewIndex(dim)
	for id := int64(0); id < 50; id++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64()) * 3
		}
		b := EncodeVector(v)
		if len(b) != 4+dim {
			t.Fatalf("stored vector is %d bytes, want %d", len(b), 4+dim)
		}
		back, err := DecodeVector(b, dim)
		if err != nil {
			t.Fatal(err)
		}
		old := make([]byte, 4*dim) // the float32 form earlier versions wrote
		for j, f := range v {
			binary.LittleEndian.PutUint32(old[4*j:], math.Float32bits(f))
		}
		fromOld, err := DecodeVector(old, dim)
		if err != nil || fromOld[7] != v[7] {
			t.Fatalf("float32 form: %v, %v", fromOld[7], err)
		}
		direct.Put(id, v)
		loaded.Put(id, back)
		legacy.Put(id, fromOld)
		if err := encoded.PutEncoded(id, b); err != nil {
			t.Fatal(err)
		}
		if err := encodedOld.PutEncoded(id, old); err != nil {
			t.Fatal(err)
		}
	}
	// Loading the stored form as is gives the index Put builds from the
	// original, scales included.
	if !slices.Equal(direct.data, encoded.data) || !slices.Equal(direct.bits, encoded.bits) || !slices.Equal(direct.scales, encoded.scales) {
		t.Error("index loaded with PutEncoded differs from one built from the originals")
	}
	if !slices.Equal(direct.data, encodedOld.data) || !slices.Equal(direct.scales, encodedOld.scales) {
		t.Error("index loaded with PutEncoded from float32 vectors differs")
	}
	if !slices.Equal(direct.data, loaded.data) || !slices.Equal(direct.bits, loaded.bits) {
		t.Error("index loaded from stored vectors differs from one built from the originals")
	}
	if !slices.Equal(direct.data, legacy.data) {
		t.Error("index loaded from float32 vectors differs")
	}
	// Scales differ only by the norm the quantisation itself changes.
	for i := range direct.scales {
		if d := direct.scales[i] - loaded.scales[i]; d > 0.01*direct.scales[i] || -d > 0.01*direct.scales[i] {
			t.Fatalf("scale %d: %v vs %v", i, direct.scales[i], loaded.scales[i])
		}
	}
	zero, err := DecodeVector(EncodeVector(make([]float32, 4)), 4)
	if err != nil || !slices.Equal(zero, make([]float32, 4)) {
		t.Errorf("zero vector round trip = %v, %v", zero, err)
	}
	nan := EncodeVector([]float32{1, 2, 3})
	binary.LittleEndian.PutUint32(nan, math.Float32bits(float32(math.NaN())))
	for name, c := range map[string]struct {
		b   []byte
		dim int
	}{
		"short": {[]byte{1, 2, 3}, 3}, "other dimension": {EncodeVector([]float32{1, 2, 3}), 4},
		"no dimension": {nil, 0}, "NaN scale": {nan, 3},
	} {
		if _, err := DecodeVector(c.b, c.dim); !errors.Is(err, ErrBadVector) {
			t.Errorf("%s: %v, want ErrBadVector", name, err)
		}
		x := NewIndex(max(c.dim, 1))
		if err := x.PutEncoded(1, c.b); !errors.Is(err, ErrBadVector) || x.Len() != 0 {
			t.Errorf("PutEncoded %s: %v, %d vectors; want ErrBadVector and none", name, err, x.Len())
		}
	}
}

func TestIndexMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(1))
	x := NewIndex(8)
	vecs := map[int64][]float32{}
	for i := int64(0); i < 300; i++ {
		v := make([]float32, 8)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		vecs[i] = Normalize(append([]float32(nil), v...))
		x.Put(i, v)
	}
	q := vecs[42]
	hits, _ := x.Search(q, 10, nil)
	if hits[0].ID != 42 {
		t.Errorf("nearest to itself = %d", hits[0].ID)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatal("not sorted")
		}
	}
}

func TestQuantisedScoresCloseToExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(7))
	x := NewIndex(64)
	vecs := make([][]float32, 100)
	for i := range vecs {
		v := make([]float32, 64)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		vecs[i] = Normalize(v)
		x.Put(int64(i), v)
	}
	q := vecs[3]
	hits, _ := x.Search(q, 100, nil)
	for _, h := range hits {
		var exact float32
		for j := range q {
			exact += q[j] * vecs[h.ID][j]
		}
		if d := h.Score - exact; d > 0.02 || d < -0.02 {
			t.Fatalf("id %d: score %v, exact %v", h.ID, h.Score, exact)
		}
	}
}

// exactTop is the ids of the k vectors nearest to q by an exact float
// scan, the reference recall is measured against.
func exactTop(vecs [][]float32, q []float32, k int) map[int64]bool {
	ref := &topK{k: k}
	for i, v := range vecs {
		var s float32
		for j := range v {
			s += v[j] * q[j]
		}
		ref.push(Hit{ID: int64(i), Score: s})
	}
	want := map[int64]bool{}
	for _, h := range ref.h {
		want[h.ID] = true
	}
	return want
}

func TestPrefilteredSearchRecall(t *testing.T) {
	t.Parallel()
	const dim = 128
	r := rand.New(rand.NewSource(9))
	x := NewIndex(dim)
	// Clustered data, like real embeddings: 200 topics with noise.
	centers := make([][]float32, 200)
	for c := range centers {
		centers[c] = make([]float32, dim)
		for j := range centers[c] {
			centers[c][j] = float32(r.NormFloat64())
		}
	}
	vecs := make([][]float32, prefilterFrom+5000)
	for i := range vecs {
		c := centers[r.Intn(len(centers))]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + 0.7*float32(r.NormFloat64())
		}
		vecs[i] = Normalize(append([]float32(nil), v...))
		x.Put(int64(i), v)
	}
	totalHit, total := 0, 0
	for trial := 0; trial < 10; trial++ {
		q := vecs[r.Intn(len(vecs))]
		got, err := x.Search(q, 50, nil)
		if err != nil || len(got) != 50 {
			t.Fatalf("got %d hits, %v", len(got), err)
		}
		want := exactTop(vecs, q, 50)
		for _, h := range got {
			if want[h.ID] {
				totalHit++
			}
		}
		total += 50
	}
	if recall := float64(totalHit) / float64(total); recall < 0.9 {
		t.Errorf("recall@50 = %.2f, want ≥ 0.9", recall)
	} else {
		t.Logf("recall@50 = %.3f", recall)
	}
	// keep filters during rescoring.
	got, _ := x.Search(vecs[0], 10, func(id int64) bool { return id%2 == 0 })
	for _, h := range got {
		if h.ID%2 != 0 {
			t.Fatalf("filtered id %d returned", h.ID)
		}
	}
}

func TestClausesPhrases(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{`"brothers add store" cheap`, `"brothers add store" AND "cheap"`},
		{`e-mail from ann.lee@example.org`, `"e mail" AND "from" AND "ann lee example org"`},
		{`don't`, `"don t"`},
		{`"unclosed phrase here`, `"unclosed phrase here"`},
		{`a "" b`, `"a" AND "b"`},
		{`(x) y`, `"x" AND "y"`},
	}
	for _, c := range cases {
		if got := MatchAll(c.in); got != c.want {
			t.Errorf("MatchAll(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got := Terms(`"brothers add" store`); strings.Join(got, ",") != "brothers,add,store" {
		t.Errorf("Terms = %v", got)
	}
	long := strings.Repeat("w ", 40)
	if n := len(Terms(long)); n != MaxTerms {
		t.Errorf("%d terms kept, want %d", n, MaxTerms)
	}
}

func TestTrigramsAndFold(t *testing.T) {
	t.Parallel()
	if _, ok := Trigrams(" ab "); ok {
		t.Error("two characters made a trigram query")
	}
	if e, ok := Trigrams("abcd"); !ok || e != `"bcd" AND "abc"` {
		t.Errorf("abcd: %q %v (rarest first)", e, ok)
	}
	if e, _ := Trigrams(`a"bc`); e != `"""bc" AND "a""b"` {
		t.Errorf("quote: %q", e)
	}
	if e, _ := Trigrams("aaaa"); e != `"aaa"` {
		t.Errorf("repeated trigram: %q", e)
	}
	// A long value reaches the index as its few rarest trigrams, rarest
	// first: an address's digits, not its common letters and domain.
	e, _ := Trigrams("jane.rossi184@polimi.it")
	if e != `"184" AND "84@" AND "i18" AND "4@p"` {
		t.Errorf("address: %q", e)
	}
	e, _ = Trigrams("the quick brown fox jumps over the lazy dog near the riverbank")
	parts := strings.Split(e, " AND ")
	if len(parts) != maxTrigrams {
		t.Errorf("long value: %d trigrams, want %d", len(parts), maxTrigrams)
	}
	for _, p := range parts {
		if !strings.Contains("the quick brown fox jumps over the lazy dog near the riverbank", strings.Trim(p, `"`)) {
			t.Errorf("%s is not a trigram of the value", p)
		}
	}
	if !strings.Contains(e, `"azy"`) && !strings.Contains(e, `"jum"`) && !strings.Contains(e, `"qui"`) {
		t.Errorf("long value kept common trigrams over its rare ones: %q", e)
	}
	for in, want := range map[string]string{"Crème Brûlée": "creme brulee", "MÜLLER": "muller", "ASCII Only": "ascii only", "Ça": "ca", "日本": "日本"} {
		if got := Fold(in); got != want {
			t.Errorf("Fold(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHammingPaths: the unrolled six-word loop and the general one give
// the same distances and histogram.
func TestHammingPaths(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(4))
	const n = 1000
	rows, q := make([]uint64, 6*n), make([]uint64, 6)
	for i := range rows {
		rows[i] = r.Uint64()
	}
	for i := range q {
		q[i] = r.Uint64()
	}
	copy(rows[6*7:], q) // one row at distance 0
	for i := 6 * 9; i < 6*10; i++ {
		rows[i] = ^q[i-6*9] // one at 384
	}
	all := []uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	fast, fastHist := make([]uint16, n), make([]int, 6*64+1)
	hamming(rows, q, all, fast, fastHist)
	// The general loop, as seven words of which the last is the same
	// (zero distance) everywhere.
	rows7 := make([]uint64, 0, 7*n)
	for i := 0; i < n; i++ {
		rows7 = append(append(rows7, rows[6*i:6*i+6]...), 0)
	}
	slow, slowHist := make([]uint16, n), make([]int, 7*64+1)
	hamming(rows7, append(slices.Clone(q), 0), append(slices.Clone(all), 0), slow, slowHist)
	if !slices.Equal(fast, slow) || !slices.Equal(fastHist, slowHist[:len(fastHist)]) {
		t.Fatal("the six-word loop disagrees with the general one")
	}
	if fast[7] != 0 || fast[9] != 384 {
		t.Fatalf("distances %d and %d, want 0 and 384", fast[7], fast[9])
	}
	// A mask (a sparse query's nonzero components) counts only its bits,
	// in both loops.
	mask := make([]uint64, 6)
	for i := range mask {
		mask[i] = r.Uint64() & r.Uint64()
	}
	fastHist = make([]int, 6*64+1)
	hamming(rows, q, mask, fast, fastHist)
	hamming(rows7, append(slices.Clone(q), 0), append(slices.Clone(mask), 0), slow, make([]int, 7*64+1))
	if !slices.Equal(fast, slow) {
		t.Fatal("masked: the six-word loop disagrees with the general one")
	}
	for i := range n {
		want := 0
		for w := range 6 {
			want += bits.OnesCount64((rows[6*i+w] ^ q[w]) & mask[w])
		}
		if int(fast[i]) != want {
			t.Fatalf("row %d: masked distance %d, want %d", i, fast[i], want)
		}
	}
	if fast[9] != uint16(bits.OnesCount64(mask[0])+bits.OnesCount64(mask[1])+bits.OnesCount64(mask[2])+
		bits.OnesCount64(mask[3])+bits.OnesCount64(mask[4])+bits.OnesCount64(mask[5])) {
		t.Fatalf("the opposite row is at %d, want every masked bit", fast[9])
	}
}

// sparseQuery is a query as the local embedder makes one for a short
// text: a few nonzero components of dim.
func sparseQuery(r *rand.Rand, dim, nonzero int) []float32 {
	q := make([]float32, dim)
	for range nonzero {
		q[r.Intn(dim)] = float32(r.NormFloat64())
	}
	return Normalize(q)
}

func TestSparseDotIsDot(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(5))
	row := make([]int8, 384)
	for trial := 0; trial < 200; trial++ {
		for j := range row {
			row[j] = int8(r.Intn(255) - 127)
		}
		q := make([]int32, 384)
		var at, val []int32
		for range r.Intn(40) {
			j := r.Intn(384)
			q[j] = int32(r.Intn(255) - 127)
		}
		for j, v := range q {
			if v != 0 {
				at, val = append(at, int32(j)), append(val, v)
			}
		}
		if got, want := sparseDot(at, val, row), dot(q, row); got != want {
			t.Fatalf("trial %d: sparse %d, dense %d", trial, got, want)
		}
	}
}

// TestSparseQueryRecall: a sparse query's zero components must not take
// part in the sign-bit prefilter. The nearest rows here are positive in
// most components, which a zero (a clear sign bit) would count against.
func TestSparseQueryRecall(t *testing.T) {
	t.Parallel()
	const dim = 64
	r := rand.New(rand.NewSource(11))
	x := NewIndex(dim)
	q := sparseQuery(r, dim, 6)
	vecs := make([][]float32, prefilterFrom+2000)
	for i := range vecs {
		v := make([]float32, dim)
		near := i%200 == 0 // 110 rows close to q, each closer than the last
		for j := range v {
			v[j] = float32(r.NormFloat64())
			if near {
				v[j] = float32(math.Abs(float64(v[j]))) + 0.3 // mostly positive
			}
		}
		if near {
			for j, c := range q {
				v[j] += float32(i/200+1) * 0.2 * c
			}
		}
		vecs[i] = Normalize(append([]float32(nil), v...))
		x.Put(int64(i), v)
	}
	got, err := x.Search(q, 50, nil)
	if err != nil || len(got) != 50 {
		t.Fatalf("got %d hits, %v", len(got), err)
	}
	want := exactTop(vecs, q, 50)
	found := 0
	for _, h := range got {
		if want[h.ID] {
			found++
		}
	}
	if found < 45 {
		t.Errorf("recall@50 of a sparse query = %d/50, want ≥ 45", found)
	}
}

// TestSparseNearestIsNearest: the column path picks exactly the
// candidates the row path picks with the query's mask, through adds,
// replacements and deletes (which move the last vector's bits).
func TestSparseNearestIsNearest(t *testing.T) {
	t.Parallel()
	const dim = 96 // two words a row, and a partial third is not needed
	r := rand.New(rand.NewSource(13))
	x := NewIndex(dim)
	v := make([]float32, dim)
	put := func(id int64) {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		if err := x.Put(id, v); err != nil {
			t.Fatal(err)
		}
	}
	for id := range int64(3001) { // not a multiple of 64
		put(id)
	}
	check := func(stage string) {
		t.Helper()
		n := len(x.ids)
		for i := range n {
			for j := range dim {
				if x.sign(j, i) != (x.bits[i*x.words+j/64]>>(j%64)&1 == 1) {
					t.Fatalf("%s: column bit %d of vector %d differs from its row", stage, j, i)
				}
			}
		}
		for _, nz := range []int{0, 1, 5, 17, 32} {
			for _, pool := range []int{10, 700, n + 5} {
				qq := make([]int8, dim)
				for range nz {
					qq[r.Intn(dim)] = int8(r.Intn(255) - 127)
				}
				var at []int32
				qb, mask := make([]uint64, x.words), make([]uint64, x.words)
				signBits(qq, qb)
				for j, c := range qq {
					if c != 0 {
						at = append(at, int32(j))
						mask[j/64] |= 1 << (j % 64)
					}
				}
				dist, hist := make([]uint16, n), make([]int, x.words*64+1)
				hamming(x.bits[:n*x.words], qb, mask, dist, hist)
				want := nearest(dist, hist, min(pool, n+5), 0)
				got := x.sparseNearest(at, qq, n, min(pool, n+5))
				if !slices.Equal(got, want) {
					t.Fatalf("%s, %d components, pool %d: columns picked %d candidates, rows %d (first %v vs %v)",
						stage, len(at), pool, len(got), len(want), got[:min(5, len(got))], want[:min(5, len(want))])
				}
			}
		}
	}
	check("added")
	for id := int64(0); id < 3001; id += 7 {
		x.Delete(id)
	}
	check("deleted")
	for id := int64(1); id < 3001; id += 11 {
		put(id) // replaces, or adds back a deleted one
	}
	for id := int64(5000); id < 5100; id++ {
		put(id)
	}
	check("replaced and grown")
}
