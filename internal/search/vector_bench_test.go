package search

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkIndexSearch is one mail query's vector step at 100k messages:
// the daemon's local embedder has 384 dimensions, and a plain mail search
// asks for 100 candidates. "dense" is a query of a neural embedder (every
// component set); "sparse" one of the local embedder for a one-word query
// (9 of 384 components set, as for "zqxjvwkq").
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
	dense := make([]float32, dim)
	for j := range dense {
		dense[j] = float32(r.NormFloat64())
	}
	sparse := make([]float32, dim)
	for range 9 {
		sparse[r.IntN(dim)] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		name string
		q    []float32
	}{{"dense", dense}, {"sparse", sparse}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := x.Search(c.q, k, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// As the daemon answers a query after other programs ran: the
	// processor's caches hold none of the index.
	evict := make([]byte, 64<<20)
	b.Run("sparse-cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			for j := 0; j < len(evict); j += 64 {
				evict[j]++
			}
			b.StartTimer()
			if _, err := x.Search(sparse, k, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
