package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// EncodeVector stores v as it is searched: normalised to unit length and
// quantised to int8 with one float32 scale (little-endian), 4+len(v) bytes
// instead of 4·len(v) — 38 MB instead of 154 MB for 100k 384-dimension
// message vectors. Index.Put normalises and quantises the same way, so the
// index built from the stored form holds exactly what it would have built
// from v; nothing a search sees is lost.
func EncodeVector(v []float32) []byte {
	c := Normalize(append([]float32(nil), v...))
	b := make([]byte, 4+len(c))
	q := make([]int8, len(c))
	binary.LittleEndian.PutUint32(b, math.Float32bits(quantize(c, q)))
	for i, x := range q {
		b[4+i] = byte(x)
	}
	return b
}

// DecodeVector is the inverse of EncodeVector (up to its quantisation) for
// a vector of dimension dim; it also reads the float32 form that earlier
// versions stored (4·dim bytes).
func DecodeVector(b []byte, dim int) ([]float32, error) {
	if dim <= 0 || (len(b) != 4*dim && len(b) != 4+dim) {
		return nil, fmt.Errorf("%w: %d bytes for dimension %d", ErrBadVector, len(b), dim)
	}
	dst := make([]float32, dim)
	if len(b) == 4*dim {
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return dst, nil
	}
	scale, err := storedScale(b)
	if err != nil {
		return nil, err
	}
	for i := range dst {
		dst[i] = float32(int8(b[4+i])) * scale
	}
	return dst, nil
}

// storedScale reads the scale that heads a quantised stored vector.
func storedScale(b []byte) (float32, error) {
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale < 0 {
		return 0, fmt.Errorf("%w: scale %v", ErrBadVector, scale)
	}
	return scale, nil
}

// ErrBadVector is returned for a stored vector that is neither form.
var ErrBadVector = errors.New("stored vector is damaged")

// Normalize scales v to unit length in place (a zero vector stays zero), so
// a dot product is the cosine similarity.
func Normalize(v []float32) []float32 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 {
		return v
	}
	n := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= n
	}
	return v
}

// Index is a brute-force cosine index over unit vectors quantised to int8
// with one scale per vector, held in one contiguous slice. At the sizes a
// personal archive reaches (10⁵ vectors of a few hundred dimensions) a
// flat scan takes milliseconds, needs no native extension, and int8 keeps
// 100k×384 vectors in 37 MiB instead of 147 MiB; the quantisation error
// (under 0.4% of a component) does not change which messages are near.
// mu guards every field.
//
// Large indexes also keep one sign bit per component. A search first ranks
// every vector by Hamming distance of the sign bits (a few XOR+POPCNT per
// vector), then rescores the best candidates exactly on the int8 data, so
// the int8 scan touches a few thousand vectors instead of all of them.
type Index struct {
	mu     sync.RWMutex
	dim    int
	words  int // uint64 words of sign bits per vector
	ids    []int64
	pos    map[int64]int
	data   []int8
	scales []float32
	bits   []uint64

	// The same sign bits by component, for sparse queries: component j's
	// bit of vector i is bit i%64 of cols[j*stride+i/64]. A query with a
	// few nonzero components reads those components' bits only (12.5 KB
	// each at 100k vectors) instead of every vector's 48 bytes.
	cols   []uint64
	stride int

	scratch  []float32
	scratchQ []int8
	scratchB []uint64

	distPool  sync.Pool // *[]uint16: a search part's Hamming distances
	planePool sync.Pool // *[]uint64: a sparse search's bit-sliced distances
}

// NewIndex returns an empty index for vectors of length dim.
func NewIndex(dim int) *Index { return &Index{dim: dim, words: (dim + 63) / 64, pos: map[int64]int{}} }

func signBits(q []int8, out []uint64) {
	for i := range out {
		out[i] = 0
	}
	for j, v := range q {
		if v > 0 {
			out[j/64] |= 1 << (j % 64)
		}
	}
}

// Grow reserves room for n more vectors, so a bulk load does not keep
// doubling (and copying) its slices.
func (x *Index) Grow(n int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n <= 0 {
		return
	}
	x.ids = slices.Grow(x.ids, n)
	x.data = slices.Grow(x.data, n*x.dim)
	x.bits = slices.Grow(x.bits, n*x.words)
	x.scales = slices.Grow(x.scales, n)
	x.ensureStride(len(x.ids) + n)
}

// ensureStride makes room in cols for rows vectors; x.mu is held. The
// stride at least doubles, so adding vectors one by one re-lays the
// columns out a logarithmic number of times.
func (x *Index) ensureStride(rows int) {
	need := (rows + 63) / 64
	if need <= x.stride {
		return
	}
	ns := max(need, 2*x.stride, 4)
	cols := make([]uint64, x.dim*ns)
	for j := 0; j < x.dim && x.stride > 0; j++ {
		copy(cols[j*ns:], x.cols[j*x.stride:(j+1)*x.stride])
	}
	x.cols, x.stride = cols, ns
}

// setSign sets component j's sign bit of vector i in cols; x.mu is held.
func (x *Index) setSign(j, i int, positive bool) {
	w, bit := j*x.stride+i/64, uint64(1)<<(i%64)
	if positive {
		x.cols[w] |= bit
	} else {
		x.cols[w] &^= bit
	}
}

// sign reads component j's sign bit of vector i from cols.
func (x *Index) sign(j, i int) bool { return x.cols[j*x.stride+i/64]>>(i%64)&1 == 1 }

// Dim is the vector length the index holds.
func (x *Index) Dim() int { return x.dim }

// Len is the number of vectors.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

func quantize(v []float32, out []int8) float32 {
	var m float32
	for _, f := range v {
		if f < 0 {
			f = -f
		}
		if f > m {
			m = f
		}
	}
	if m == 0 {
		for i := range out {
			out[i] = 0
		}
		return 0
	}
	k := 127 / m
	for i, f := range v {
		out[i] = int8(math.Round(float64(f * k)))
	}
	return m / 127
}

// Put adds or replaces the vector of id; v is normalised on the way in.
func (x *Index) Put(id int64, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("vector for %d has dimension %d, index has %d", id, len(v), x.dim)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	// Scratch buffers are reused under mu: bulk loads of 10⁵ vectors
	// would otherwise allocate three temporaries per vector.
	if len(x.scratch) != x.dim {
		x.scratch, x.scratchQ, x.scratchB = make([]float32, x.dim), make([]int8, x.dim), make([]uint64, x.words)
	}
	c := Normalize(append(x.scratch[:0], v...))
	q := x.scratchQ
	x.put(id, q, quantize(c, q))
	return nil
}

// PutEncoded adds or replaces the vector of id from its stored form
// (EncodeVector's output, or the float32 form of earlier versions). The
// quantised form is taken as is: it is what Put would compute, and a bulk
// load of 10⁵ vectors skips decoding, normalising and quantising each.
func (x *Index) PutEncoded(id int64, b []byte) error {
	if len(b) != 4+x.dim {
		v, err := DecodeVector(b, x.dim)
		if err != nil {
			return err
		}
		return x.Put(id, v)
	}
	scale, err := storedScale(b)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.scratchQ) != x.dim {
		x.scratchQ = make([]int8, x.dim)
	}
	q := x.scratchQ
	for i := range q {
		q[i] = int8(b[4+i])
	}
	x.put(id, q, scale)
	return nil
}

// put stores a quantised vector; x.mu is held.
func (x *Index) put(id int64, q []int8, scale float32) {
	if len(x.scratchB) != x.words {
		x.scratchB = make([]uint64, x.words)
	}
	b := x.scratchB
	signBits(q, b)
	if p, ok := x.pos[id]; ok {
		copy(x.data[p*x.dim:], q)
		copy(x.bits[p*x.words:], b)
		x.scales[p] = scale
		for j, c := range q {
			x.setSign(j, p, c > 0)
		}
		return
	}
	x.ensureStride(len(x.ids) + 1)
	// A new position's bits are clear (Delete clears the last one's).
	w, bit := len(x.ids)/64, uint64(1)<<(len(x.ids)%64)
	for j, c := range q {
		if c > 0 {
			x.cols[j*x.stride+w] |= bit
		}
	}
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.data = append(x.data, q...)
	x.bits = append(x.bits, b...)
	x.scales = append(x.scales, scale)
}

// Delete removes id, moving the last vector into its slot.
func (x *Index) Delete(id int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	p, ok := x.pos[id]
	if !ok {
		return
	}
	last := len(x.ids) - 1
	if p != last {
		x.ids[p] = x.ids[last]
		x.scales[p] = x.scales[last]
		copy(x.data[p*x.dim:(p+1)*x.dim], x.data[last*x.dim:])
		copy(x.bits[p*x.words:(p+1)*x.words], x.bits[last*x.words:])
		for j := 0; j < x.dim; j++ {
			x.setSign(j, p, x.sign(j, last))
		}
		x.pos[x.ids[p]] = p
	}
	for j := 0; j < x.dim; j++ {
		x.setSign(j, last, false)
	}
	x.ids = x.ids[:last]
	x.scales = x.scales[:last]
	x.data = x.data[:last*x.dim]
	x.bits = x.bits[:last*x.words]
	delete(x.pos, id)
}

// Hit is one nearest-neighbour result.
type Hit struct {
	ID    int64
	Score float32 // cosine similarity, higher is closer
}

// dot is the inner loop: the query, widened to int32 once per search,
// times an int8 row, accumulated in int32 and unrolled by eight (the
// compiler does not vectorise; integer multiply-add avoids a float
// conversion per component, and the widened query saves a sign extension
// per component: 1.5× faster than int8·int8).
func dot(q []int32, row []int8) int32 {
	var s0, s1, s2, s3 int32
	n := len(row) &^ 7
	q = q[:len(row)]
	for j := 0; j < n; j += 8 {
		r := row[j : j+8 : j+8]
		qq := q[j : j+8 : j+8]
		s0 += qq[0]*int32(r[0]) + qq[4]*int32(r[4])
		s1 += qq[1]*int32(r[1]) + qq[5]*int32(r[5])
		s2 += qq[2]*int32(r[2]) + qq[6]*int32(r[6])
		s3 += qq[3]*int32(r[3]) + qq[7]*int32(r[7])
	}
	for j := n; j < len(row); j++ {
		s0 += q[j] * int32(row[j])
	}
	return s0 + s1 + s2 + s3
}

// topK keeps the k best hits in a min-heap (worst at the root).
type topK struct {
	k int
	h []Hit
}

func (t *topK) worst() float32 {
	if len(t.h) < t.k {
		return float32(math.Inf(-1))
	}
	return t.h[0].Score
}

func (t *topK) push(h Hit) {
	if len(t.h) < t.k {
		t.h = append(t.h, h)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.h[p].Score <= t.h[i].Score {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if h.Score <= t.h[0].Score {
		return
	}
	t.h[0] = h
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.h[l].Score < t.h[m].Score {
			m = l
		}
		if r < len(t.h) && t.h[r].Score < t.h[m].Score {
			m = r
		}
		if m == i {
			break
		}
		t.h[m], t.h[i] = t.h[i], t.h[m]
		i = m
	}
}

// hamming writes the distance of each row of sign bits (len(q) words a
// row) to q, counting only the bits set in mask, into dist and counts it
// in hist. Six words (384 dimensions, the local embedder's) get a loop of
// their own: unrolled, it runs twice as fast as the general one.
func hamming(rows, q, mask []uint64, dist []uint16, hist []int) {
	if len(q) == 6 {
		q0, q1, q2, q3, q4, q5 := q[0], q[1], q[2], q[3], q[4], q[5]
		m0, m1, m2, m3, m4, m5 := mask[0], mask[1], mask[2], mask[3], mask[4], mask[5]
		for i := range dist {
			r := rows[i*6 : i*6+6 : i*6+6]
			d := bits.OnesCount64((r[0]^q0)&m0) + bits.OnesCount64((r[1]^q1)&m1) + bits.OnesCount64((r[2]^q2)&m2) +
				bits.OnesCount64((r[3]^q3)&m3) + bits.OnesCount64((r[4]^q4)&m4) + bits.OnesCount64((r[5]^q5)&m5)
			dist[i] = uint16(d)
			hist[d]++
		}
		return
	}
	w := len(q)
	for i := range dist {
		d := 0
		for j, v := range rows[i*w : i*w+w] {
			d += bits.OnesCount64((v ^ q[j]) & mask[j])
		}
		dist[i] = uint16(d)
		hist[d]++
	}
}

// sparseDot is dot for a query given by its nonzero components: values
// val at positions at.
func sparseDot(at, val []int32, row []int8) int32 {
	var s int32
	for k, j := range at {
		s += val[k] * int32(row[j])
	}
	return s
}

// nearest returns the positions (from lo) of the pool rows of least
// distance, ties at the cut by position, from their distances and the
// histogram of them.
func nearest(dist []uint16, hist []int, pool, lo int) []int {
	cut, atCut := cutOf(hist, pool)
	cands := make([]int, 0, pool)
	for j, d := range dist {
		if int(d) < cut || int(d) == cut && atCut > 0 {
			if int(d) == cut {
				atCut--
			}
			cands = append(cands, lo+j)
		}
	}
	return cands
}

// cutOf finds where the pool nearest end: every distance below cut, and
// atCut of those at it.
func cutOf(hist []int, pool int) (cut, atCut int) {
	atCut = pool
	for cut < len(hist)-1 && hist[cut] < atCut {
		atCut -= hist[cut]
		cut++
	}
	return cut, atCut
}

// sparseNearest is nearest for a query whose nonzero components are at
// (qq its quantised form) over the first n vectors, computed from the
// sign-bit columns of those components alone. Per 64 vectors, each
// component's mismatches are added into bit-sliced counters (plane k
// holds bit k of every vector's distance), so no per-vector distance is
// ever spelled out: the histogram and the selection are popcounts and
// masks over the planes. Same candidates as hamming + nearest with the
// query's mask (TestSparseNearestIsNearest).
func (x *Index) sparseNearest(at []int32, qq []int8, n, pool int) []int {
	nz := len(at)
	planes := bits.Len(uint(nz)) // a distance is at most nz
	if planes > maxSparsePlanes {
		panic(fmt.Sprintf("sparseNearest: %d components, more than sparseFrom", nz))
	}
	nw := (n + 63) / 64
	bp, _ := x.planePool.Get().(*[]uint64)
	if bp == nil {
		bp = new([]uint64)
	}
	defer x.planePool.Put(bp)
	if cap(*bp) < nw*planes {
		*bp = make([]uint64, nw*planes)
	}
	buf := (*bp)[:nw*planes]
	flip := make([]uint64, nz) // a mismatch is a set bit where the query's is clear, and back
	cols := make([]int, nz)
	for t, j := range at {
		if qq[j] > 0 {
			flip[t] = ^uint64(0)
		}
		cols[t] = int(j) * x.stride
	}
	valid := func(w int) uint64 {
		if w == nw-1 && n%64 != 0 {
			return 1<<(n%64) - 1
		}
		return ^uint64(0)
	}
	// Word by word, the counters in locals and every plane updated
	// whatever the carry: a loop without data-dependent branches, three
	// times faster than stopping once the carry is spent.
	for w := range nw {
		var pl [maxSparsePlanes]uint64
		for t, c := range cols {
			carry := x.cols[c+w] ^ flip[t]
			for k := range planes {
				pl[k], carry = pl[k]^carry, pl[k]&carry
			}
		}
		copy(buf[w*planes:(w+1)*planes], pl[:planes])
	}
	// The histogram only as far as the pool reaches: the nearest few
	// thousand of 10⁵ lie within a few mismatches.
	hist := make([]int, nz+1)
	for d, sum := 0, 0; d <= nz && sum < pool; d++ {
		for w := range nw {
			pl := buf[w*planes : (w+1)*planes : (w+1)*planes]
			eq := valid(w)
			for k, p := range pl {
				if d>>k&1 == 1 {
					eq &= p
				} else {
					eq &^= p
				}
			}
			hist[d] += bits.OnesCount64(eq)
		}
		sum += hist[d]
	}
	cut, atCut := cutOf(hist, pool)
	cands := make([]int, 0, pool)
	for w := range nw {
		pl := buf[w*planes : (w+1)*planes : (w+1)*planes]
		// Compare each distance with cut, highest plane first: below
		// collects the vectors found smaller, eq those equal so far.
		var below uint64
		eq := valid(w)
		for k := planes - 1; k >= 0; k-- {
			if cut>>k&1 == 1 {
				below |= eq &^ pl[k]
				eq &= pl[k]
			} else {
				eq &^= pl[k]
			}
		}
		for m := below | eq; m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m)
			switch {
			case below>>b&1 == 1:
				cands = append(cands, w*64+b)
			case atCut > 0:
				cands = append(cands, w*64+b)
				atCut--
			}
		}
	}
	return cands
}

// Search tuning. parallelFrom: index size from which scans split across
// cores. prefilterFrom: size from which the sign-bit prefilter runs; it
// keeps max(k·prefilterFactor, prefilterMin) candidates for rescoring,
// shared evenly between the parts.
const (
	parallelFrom    = 20000
	prefilterFrom   = 20000
	prefilterFactor = 20
	prefilterMin    = 2000
	// sparseFrom: a query with at most this many nonzero components is
	// prefiltered from the sign-bit columns (sparseNearest); its cost
	// grows with their number, the row scan's does not.
	sparseFrom = 32
	// maxSparsePlanes holds a distance of up to sparseFrom mismatches.
	maxSparsePlanes = 6
)

// Search returns up to k ids closest to q, best first. keep, when not nil,
// filters candidates during the scan so a filter never empties the top k;
// it must be safe for concurrent calls.
func (x *Index) Search(q []float32, k int, keep func(int64) bool) ([]Hit, error) {
	if len(q) != x.dim {
		return nil, fmt.Errorf("query vector has dimension %d, index has %d", len(q), x.dim)
	}
	if k <= 0 {
		return nil, nil
	}
	qn := Normalize(append([]float32(nil), q...))
	qq := make([]int8, x.dim)
	qscale := quantize(qn, qq)
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	qw := make([]int32, x.dim)
	var nzAt []int32 // the query's nonzero components, when they are few
	var nzVal []int32
	for j, c := range qq {
		qw[j] = int32(c)
		if c != 0 {
			nzAt, nzVal = append(nzAt, int32(j)), append(nzVal, int32(c))
		}
	}
	exact := func(i int) float32 {
		return float32(dot(qw, x.data[i*x.dim:(i+1)*x.dim])) * x.scales[i] * qscale
	}
	// A short query from the local embedder (a feature-hashed bag of
	// words) has a few dozen nonzero components of 384: zeros add nothing
	// to the dot product, so the sum over the others is the same integer,
	// and rescoring 2,000 candidates costs ~10 reads each instead of 384.
	if len(nzAt)*4 <= x.dim {
		exact = func(i int) float32 {
			return float32(sparseDot(nzAt, nzVal, x.data[i*x.dim:(i+1)*x.dim])) * x.scales[i] * qscale
		}
	}
	parts := 1
	if n >= parallelFrom {
		parts = min(runtime.GOMAXPROCS(0), 8)
	}
	results := make([]*topK, parts)
	var wg sync.WaitGroup
	if n < prefilterFrom {
		for p := 0; p < parts; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := &topK{k: k, h: make([]Hit, 0, k)}
				for i := n * p / parts; i < n*(p+1)/parts; i++ {
					s := exact(i)
					if s <= t.worst() || (keep != nil && !keep(x.ids[i])) {
						continue
					}
					t.push(Hit{ID: x.ids[i], Score: s})
				}
				results[p] = t
			}()
		}
	} else {
		// Stage 1: Hamming distance on sign bits picks each part's share
		// of the candidates: the pool nearest, found from a histogram of
		// the distances (they are small integers) rather than a heap;
		// ties at the cut go by position. Stage 2 rescores them exactly in
		// the same goroutine.
		// Only the query's nonzero components take part: a zero carries
		// no direction, and counting its sign bit as "negative" would rank
		// rows by how many of their components are negative rather than by
		// their direction against the query's.
		rescore := func(cands []int) *topK {
			t := &topK{k: k, h: make([]Hit, 0, k)}
			for _, i := range cands {
				if keep != nil && !keep(x.ids[i]) {
					continue
				}
				if s := exact(i); s > t.worst() {
					t.push(Hit{ID: x.ids[i], Score: s})
				}
			}
			return t
		}
		pool := max(k*prefilterFactor, prefilterMin)
		var qb, mask []uint64 // the row scan's query bits and which count
		if len(nzAt) <= sparseFrom {
			// A few components: their columns of sign bits, in one pass
			// (a fraction of the row scan, not worth splitting).
			results, parts = results[:1], 0
			results[0] = rescore(x.sparseNearest(nzAt, qq, n, pool))
		} else {
			pool = (pool + parts - 1) / parts // each part's share
			qb, mask = make([]uint64, x.words), make([]uint64, x.words)
			signBits(qq, qb)
			for _, j := range nzAt { // for a dense query, every bit
				mask[j/64] |= 1 << (j % 64)
			}
		}
		for p := 0; p < parts; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo, hi := n*p/parts, n*(p+1)/parts
				// The distances of a part (100 KB at 100k vectors) are
				// reused across searches: freshly allocated, their pages
				// fault in on every query.
				dp, _ := x.distPool.Get().(*[]uint16)
				if dp == nil {
					dp = new([]uint16)
				}
				defer x.distPool.Put(dp)
				if cap(*dp) < hi-lo {
					*dp = make([]uint16, hi-lo)
				}
				dist := (*dp)[:hi-lo]
				hist := make([]int, x.words*64+1)
				hamming(x.bits[lo*x.words:hi*x.words], qb, mask, dist, hist)
				results[p] = rescore(nearest(dist, hist, pool, lo))
			}()
		}
	}
	wg.Wait()
	all := &topK{k: k}
	for _, r := range results {
		for _, h := range r.h {
			all.push(h)
		}
	}
	sort.Slice(all.h, func(a, b int) bool {
		if all.h[a].Score != all.h[b].Score {
			return all.h[a].Score > all.h[b].Score
		}
		return all.h[a].ID < all.h[b].ID
	})
	return all.h, nil
}
