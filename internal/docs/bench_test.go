package docs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

func bigPDF(pages int) []byte {
	ps := make([][]string, pages)
	for i := range ps {
		var lines []string
		for j := range 40 {
			lines = append(lines, fmt.Sprintf("Page %d line %d: the parties agree on delivery terms, invoices and payment schedules.", i+1, j+1))
		}
		if i == pages-7 {
			lines = append(lines, "Termination: either party may end this agreement with ninety days notice.")
		}
		ps[i] = lines
	}
	return buildPDF(ps, nil)
}

// BenchmarkSearch300Pages measures document_search on a 300-page PDF: cold
// (child extraction, chunking and search; the cache is emptied each time),
// cold with the daemon's prestarted child (the process start is off the
// path, as in a running daemon), and warm (cached). Targets: ≤ 300 ms
// cold, ≤ 20 ms warm.
func BenchmarkSearch300Pages(b *testing.B) {
	home := b.TempDir()
	path := filepath.Join(home, "big.pdf")
	if err := os.WriteFile(path, bigPDF(300), 0o644); err != nil {
		b.Fatal(err)
	}
	pp, _ := pathpolicy.New(pathpolicy.Options{Home: home})
	args := []byte(fmt.Sprintf(`{"path":%q,"query":"termination notice"}`, path))
	run := func(b *testing.B, svc *Service) {
		res, err := svc.Tools()[2].Run(context.Background(), tools.Call{Args: args})
		if err != nil || res.IsError {
			b.Fatal(err, res.Content)
		}
	}
	b.Run("cold", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			run(b, NewService(pp, childExtractor(Limits{}), nil, Limits{}))
		}
	})
	b.Run("cold-prestarted", func(b *testing.B) {
		x := childExtractor(Limits{})
		x.Prestart = true
		defer x.Close()
		x.Warm()
		waitReadyB(b, x)
		defer reportCPU(b)()
		for b.Loop() {
			run(b, NewService(pp, x, nil, Limits{}))
			b.StopTimer()
			waitReadyB(b, x)
			b.StartTimer()
		}
	})
	b.Run("warm", func(b *testing.B) {
		svc := NewService(pp, childExtractor(Limits{}), nil, Limits{})
		run(b, svc)
		for b.Loop() {
			run(b, svc)
		}
	})
}

// waitReadyB waits until a prestarted child waits (as one would in a
// daemon between two searches).
func waitReadyB(b *testing.B, x *Extractor) {
	for deadline := time.Now().Add(60 * time.Second); readyPid(x) == 0; {
		if time.Now().After(deadline) {
			b.Fatal("no prestarted child")
		}
		time.Sleep(time.Millisecond)
	}
}

// reportCPU adds the CPU time per operation, this process and its reaped
// children together: on a loaded machine wall time mostly measures the
// queue for a core, CPU time what the search itself costs. A prestarted
// child's start-up is counted too, though it happened off the path.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var self, kids syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &self)
		syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
		d := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
		return d(self.Utime) + d(self.Stime) + d(kids.Utime) + d(kids.Stime)
	}
	start := cpu()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpu()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
	}
}
