package mail

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/mail/mailbench"
)

// benchMessages is the size of the benchmarks' generated mailbox.
const benchMessages = 3000

func benchCorpus(b *testing.B) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "Mail")
	if _, err := mailbench.Generate(dir, mailbench.Options{Messages: benchMessages, Seed: 42, Start: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), Years: 2}); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkImport is a first import of a generated mailbox (compression,
// indexing, the final merge and page release included).
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	corpus := benchCorpus(b)
	for b.Loop() {
		b.StopTimer()
		s := openStore(b, nil)
		b.StartTimer()
		p, err := s.Import(ctx, corpus, ImportOptions{})
		if err != nil || p.Added != benchMessages {
			b.Fatalf("import %+v %v", p, err)
		}
	}
}

// BenchmarkSearch runs each query type against an imported mailbox: the
// page of results with snippets, as the CLI and the daemon ask for it.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	s := openStore(b, nil)
	if _, err := s.Import(ctx, benchCorpus(b), ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	var first int64
	s.DB().QueryRowContext(ctx, `SELECT min(id) FROM messages`).Scan(&first)
	for _, c := range []struct {
		name string
		q    Query
	}{
		{"common", Query{Text: "water", Limit: 50}},
		{"rare", Query{Text: "photovoltaic certification", Limit: 50}},
		{"phrase", Query{Text: `"solar panel"`, Limit: 50}},
		{"body-substring", Query{Body: "ertificatio", Limit: 50}},
		{"from-substring", Query{From: "marco.ross", Limit: 50}},
		{"from-date", Query{From: "garcia", After: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC), Before: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Limit: 50}},
		{"absent", Query{Text: "zqxjvwkq", Limit: 50}},
		{"browse", Query{Limit: 50}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.q.NoVectors = true
			for b.Loop() {
				if _, err := s.Search(ctx, c.q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("read", func(b *testing.B) {
		id := first
		for b.Loop() {
			if _, err := s.Read(ctx, id, 0, DefaultBodyChars); err != nil {
				b.Fatal(err)
			}
			if id++; id >= first+benchMessages {
				id = first
			}
		}
	})
	b.Run("thread", func(b *testing.B) {
		id := first
		for b.Loop() {
			if _, err := s.Thread(ctx, id, 0, 50, 400); err != nil {
				b.Fatal(err)
			}
			if id++; id >= first+benchMessages {
				id = first
			}
		}
	})
}
