package search

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkIndexSearch is one mail query's vector step at 100k messages:
// the daemon's local embedder has 384 dimensions, and a plain mail search asks for 100
// candidates.
func BenchmarkIndexSearch(b *testing.B) {
	const n, dim, k = 100_000, 384, 100
	r := rand.New(rand.NewPCG(1, 2))
	x := NewIndex(dim)
	v := make([]float32, dim)
	for id := range int64(n) {
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		if err := x.Put(id+1, v); err != nil {
			b.Fatal(err)
		}
	}
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := x.Search(v, k, nil); err != nil {
			b.Fatal(err)
		}
	}
}
