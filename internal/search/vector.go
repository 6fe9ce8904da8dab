package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
)

// EncodeVector stores a vector as little-endian float32 bytes.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// ErrBadVector is returned for a blob that is not a whole number of floats.
var ErrBadVector = errors.New("vector blob length is not a multiple of 4")

// DecodeVector is the inverse of EncodeVector.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, ErrBadVector
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

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

// Index is an exact (brute-force) cosine index over unit vectors held in
// one contiguous slice. At the sizes a personal archive reaches (10⁵
// vectors of a few hundred dimensions) a flat scan takes milliseconds and
// needs no native extension. mu guards every field.
type Index struct {
	mu   sync.RWMutex
	dim  int
	ids  []int64
	pos  map[int64]int
	data []float32
}

// NewIndex returns an empty index for vectors of length dim.
func NewIndex(dim int) *Index { return &Index{dim: dim, pos: map[int64]int{}} }

// Dim is the vector length the index holds.
func (x *Index) Dim() int { return x.dim }

// Len is the number of vectors.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Put adds or replaces the vector of id; v is normalised on the way in.
func (x *Index) Put(id int64, v []float32) error {
	if len(v) != x.dim {
		return fmt.Errorf("vector for %d has dimension %d, index has %d", id, len(v), x.dim)
	}
	c := Normalize(append([]float32(nil), v...))
	x.mu.Lock()
	defer x.mu.Unlock()
	if p, ok := x.pos[id]; ok {
		copy(x.data[p*x.dim:], c)
		return nil
	}
	x.pos[id] = len(x.ids)
	x.ids = append(x.ids, id)
	x.data = append(x.data, c...)
	return nil
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
		copy(x.data[p*x.dim:(p+1)*x.dim], x.data[last*x.dim:])
		x.pos[x.ids[p]] = p
	}
	x.ids = x.ids[:last]
	x.data = x.data[:last*x.dim]
	delete(x.pos, id)
}

// Hit is one nearest-neighbour result.
type Hit struct {
	ID    int64
	Score float32 // cosine similarity, higher is closer
}

// Search returns up to k ids closest to q, best first. keep, when not nil,
// filters candidates during the scan so a filter never empties the top k.
func (x *Index) Search(q []float32, k int, keep func(int64) bool) ([]Hit, error) {
	if len(q) != x.dim {
		return nil, fmt.Errorf("query vector has dimension %d, index has %d", len(q), x.dim)
	}
	if k <= 0 {
		return nil, nil
	}
	qn := Normalize(append([]float32(nil), q...))
	x.mu.RLock()
	defer x.mu.RUnlock()
	top := make([]Hit, 0, k+1)
	minScore := float32(math.Inf(-1))
	for i, id := range x.ids {
		row := x.data[i*x.dim : (i+1)*x.dim]
		var s float32
		for j, f := range row {
			s += f * qn[j]
		}
		if len(top) == k && s <= minScore {
			continue
		}
		if keep != nil && !keep(id) {
			continue
		}
		top = append(top, Hit{ID: id, Score: s})
		if len(top) > k {
			sort.Slice(top, func(a, b int) bool { return top[a].Score > top[b].Score })
			top = top[:k]
			minScore = top[k-1].Score
		} else if len(top) == k {
			sort.Slice(top, func(a, b int) bool { return top[a].Score > top[b].Score })
			minScore = top[k-1].Score
		}
	}
	sort.Slice(top, func(a, b int) bool { return top[a].Score > top[b].Score })
	return top, nil
}
