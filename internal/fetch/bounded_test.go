package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/docs"
)

// TestMain lets this test binary stand in for `hestia extract`.
func TestMain(m *testing.M) {
	docs.RunChildIfAsked()
	os.Exit(m.Run())
}

// tangledPage is a misnested page: formatting elements left open, then
// closed by their parent, so a DOM parser re-creates all of them before
// every later element (size bytes, about 9 nodes per 12 bytes).
func tangledPage(size int) []byte {
	var b bytes.Buffer
	b.WriteString("<html><head><title>Tangled</title></head><body><div>")
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&b, "<b class=c%d>", i)
	}
	b.WriteString("</div><p>the start of the tangled page</p>")
	for b.Len() < size {
		b.WriteString("<div>x</div>")
	}
	b.WriteString("</body></html>")
	return b.Bytes()
}

// A 4.5 MB misnested page, fetched three times at once, is read in the
// extraction child: the daemon's heap barely moves (parsed in the daemon
// it took 2 GB and 11 s of CPU each), and the fetch returns the text with
// a warning naming the limit that kept the DOM parse from running.
func TestFetchTangledPageIsBounded(t *testing.T) {
	page := tangledPage(4_500_000)
	w := newWorld(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/tangled", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		rw.Write(page)
	})
	w.srv.Config.Handler = mux
	w.fetch.MaxBytes = DefaultMaxBytes
	w.fetch.Extract = &docs.Extractor{Exe: os.Args[0], Args: []string{"extract"}}

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	peak := before.HeapInuse
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	outs := make([]string, 3)
	errs := make([]bool, 3)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = w.call(t, w.url("/tangled"))
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)

	allocated := after.TotalAlloc - before.TotalAlloc
	grew := int64(peak) - int64(before.HeapInuse)
	t.Logf("3 × %d-byte tangled page: %s wall; daemon side: %d MB allocated, heap in use grew by at most %d MB; children: %.2f s CPU, largest max RSS %d MB",
		len(page), took.Round(time.Millisecond), allocated>>20, grew>>20,
		time.Duration(ru.Utime.Nano()+ru.Stime.Nano()).Seconds(), ru.Maxrss>>10)
	for i, out := range outs {
		if errs[i] {
			t.Errorf("fetch %d failed: %s", i, out)
			continue
		}
		if !strings.Contains(out, "the start of the tangled page") || !strings.Contains(out, "article-extraction limit") {
			t.Errorf("fetch %d: no text or no warning naming the limit: %.300s", i, out)
		}
	}
	// The page itself is 4.5 MB and crosses the pipe to each child; a DOM
	// in this process would be gigabytes.
	if allocated > 150<<20 || grew > 100<<20 {
		t.Errorf("the daemon's memory grew: %d MB allocated, heap in use +%d MB", allocated>>20, grew>>20)
	}
}

// failingArticle fails the article read the way a killed child does.
type failingArticle struct{ docs.InProcess }

func (f failingArticle) Extract(ctx context.Context, data []byte, format docs.Format) (*docs.Document, error) {
	if format == docs.Article {
		return nil, errors.New("the extractor died after 2s (signal: killed); the file is too large or malformed to read safely")
	}
	return f.InProcess.Extract(ctx, data, format)
}

// When the article read fails in the child, the page is read again by the
// streaming reader, and the warning says why.
func TestFetchFallsBackWhenArticleFails(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.fetch.MaxBytes = 1 << 20
	w.fetch.Extract = failingArticle{}
	out, isErr := w.call(t, w.url("/article"))
	if isErr || !strings.Contains(out, "terminated by either party") || !strings.Contains(out, "article extraction failed (the extractor died") {
		t.Fatalf("%s", out)
	}
}
