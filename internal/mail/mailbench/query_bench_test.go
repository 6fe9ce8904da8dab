package mailbench

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
)

// cliQueries are the query types of benchmail (cmd benchmail picks the same
// words from the generated corpus), as the CLI runs them: lexical only,
// 50 results.
func cliQueries() []struct {
	name string
	q    mail.Query
} {
	day := func(s string) time.Time { t, _ := time.ParseInLocation(time.DateOnly, s, time.Local); return t }
	return []struct {
		name string
		q    mail.Query
	}{
		{"rare", mail.Query{Text: "brabraly"}},
		{"common", mail.Query{Text: "water"}},
		{"phrase", mail.Query{Text: `"zenesa name all"`}},
		{"fromdate", mail.Query{From: "jane.rossi184@polimi.it", After: day("2024-01-01"), Before: day("2024-07-01")}},
		{"worddate", mail.Query{Text: "contract", After: day("2024-01-01"), Before: day("2024-07-01")}},
		{"absent", mail.Query{Text: "zqxjvwkq"}},
		{"subject", mail.Query{Subject: "invoice"}},
	}
}

// BenchmarkCLIQuery times what one `hestia mail search` process does in
// process: open the mirror, run one lexical search of 50 results, close.
// It runs against an imported mirror named by HESTIA_MAIL_BENCH_DB (the
// mail.db of a home that imported a benchmail corpus):
//
//	HESTIA_MAIL_BENCH_DB=/tmp/home/db/mail.db go test -run '^$' -bench CLIQuery ./internal/mail/mailbench/
func BenchmarkCLIQuery(b *testing.B) {
	db := os.Getenv("HESTIA_MAIL_BENCH_DB")
	if db == "" {
		b.Skip("set HESTIA_MAIL_BENCH_DB to an imported benchmail mirror")
	}
	ctx := context.Background()
	// cpu-ms/op is the process CPU time per query: on a shared machine it
	// varies far less with other load than ns/op (wall time) does.
	cpu := func(b *testing.B, body func()) {
		start := cpuTime()
		body()
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	// The CLI bounds each connection's page cache (internal/cli's
	// queryCachePages) and prints no snippets.
	opts := mail.Options{DBPath: db, BlobDir: filepath.Join(filepath.Dir(db), "..", "mail", "blobs"), CachePages: 32}
	b.Run("open", func(b *testing.B) {
		cpu(b, func() {
			for b.Loop() {
				s, err := mail.Open(ctx, opts)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	})
	for _, c := range cliQueries() {
		q := c.q
		q.Limit, q.NoVectors, q.NoSnippets = 50, true, true
		b.Run(c.name, func(b *testing.B) {
			s, err := mail.Open(ctx, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			cpu(b, func() {
				for b.Loop() {
					if _, err := s.Search(ctx, q); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
		b.Run(c.name+"-open", func(b *testing.B) {
			cpu(b, func() {
				for b.Loop() {
					s, err := mail.Open(ctx, opts)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := s.Search(ctx, q); err != nil {
						b.Fatal(err)
					}
					s.Close()
				}
			})
		})
	}
}

// BenchmarkDaemonQuery times the daemon's side of a CLI query with the
// daemon running: the store opened once with the local embedder, its
// ranking counts and vectors loaded, each search hybrid, without snippets,
// followed by the thread sizes the HTTP handler adds. Same mirror as
// BenchmarkCLIQuery (after `hestia mail embed`):
//
//	HESTIA_MAIL_BENCH_DB=/tmp/home/db/mail.db go test -run '^$' -bench DaemonQuery ./internal/mail/mailbench/
func BenchmarkDaemonQuery(b *testing.B) {
	db := os.Getenv("HESTIA_MAIL_BENCH_DB")
	if db == "" {
		b.Skip("set HESTIA_MAIL_BENCH_DB to an imported benchmail mirror")
	}
	ctx := context.Background()
	s, err := mail.Open(ctx, mail.Options{DBPath: db, BlobDir: filepath.Join(filepath.Dir(db), "..", "mail", "blobs"),
		Embedder: embedder{llm.NewLocalEmbedder()}, EmbedModel: llm.LocalEmbedModel})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.WarmRanking(ctx); err != nil {
		b.Fatal(err)
	}
	if err := s.LoadVectors(ctx); err != nil {
		b.Fatal(err)
	}
	for _, c := range cliQueries() {
		q := c.q
		q.Limit, q.NoSnippets = 50, true
		b.Run(c.name, func(b *testing.B) {
			start := cpuTime()
			for b.Loop() {
				res, err := s.Search(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				threads := make([]int64, len(res.Messages))
				for i, m := range res.Messages {
					threads[i] = m.ThreadID
				}
				if _, err := s.ThreadCounts(ctx, threads); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
