package mailbench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/llm"
	"github.com/hestia-dev/hestia/internal/mail"
)

func TestGenerateSmall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	n, err := Generate(dir, Options{Messages: 200, Seed: 1})
	if err != nil || n != 200 {
		t.Fatal(n, err)
	}
	s, err := mail.Open(context.Background(), mail.Options{DBPath: filepath.Join(t.TempDir(), "m.db"), BlobDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Import(context.Background(), dir, mail.ImportOptions{})
	if err != nil || p.Added != 200 || p.Failed != 0 {
		t.Fatalf("import %+v %v", p, err)
	}
	st, _ := s.Stats(context.Background())
	if st.Threads >= 200 || st.Threads < 80 {
		t.Errorf("threads = %d: generator should produce reply chains", st.Threads)
	}
}

type embedder struct{ e *llm.LocalEmbedder }

func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.e.Embed(ctx, llm.EmbedRequest{Inputs: texts})
	return res.Vectors, err
}
func (embedder) Dimension() int { return llm.LocalEmbedDim }

// peakRSS reads the process high-water mark in KiB.
func peakRSS() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

func curRSS() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

func resetPeak() { os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

func percentiles(d []time.Duration) (p50, p95 time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*95/100]
}

// TestMailBench is the hand-run benchmark:
//
//	HESTIA_MAIL_BENCH=100000 go test -run TestMailBench -v -timeout 60m ./internal/mail/mailbench/
//
// HESTIA_MAIL_BENCH_DIR reuses a generated corpus between runs.
func TestMailBench(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HESTIA_MAIL_BENCH"))
	if n <= 0 {
		t.Skip("set HESTIA_MAIL_BENCH=10000 (or 100000) to run")
	}
	ctx := context.Background()
	corpus := os.Getenv("HESTIA_MAIL_BENCH_DIR")
	if corpus == "" {
		corpus = filepath.Join(t.TempDir(), "Maildir")
	}
	if _, err := os.Stat(filepath.Join(corpus, "cur")); err != nil {
		start := time.Now()
		if _, err := Generate(corpus, Options{Messages: n, Seed: 42}); err != nil {
			t.Fatal(err)
		}
		t.Logf("generated %d messages in %s", n, time.Since(start).Round(time.Millisecond))
	}
	work := t.TempDir()
	runtime.GC()
	resetPeak()
	s, err := mail.Open(ctx, mail.Options{DBPath: filepath.Join(work, "mail.db"), BlobDir: filepath.Join(work, "blobs"),
		Embedder: embedder{llm.NewLocalEmbedder()}, EmbedModel: llm.LocalEmbedModel})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	p, err := s.Import(ctx, corpus, mail.ImportOptions{BatchSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	imp := time.Since(start)
	t.Logf("import: %d messages in %s = %.0f msg/s, peak RSS %d MiB", p.Added, imp.Round(time.Millisecond), float64(p.Added)/imp.Seconds(), peakRSS()/1024)
	fi, _ := os.Stat(filepath.Join(work, "mail.db"))
	t.Logf("mail.db size %d MiB", fi.Size()>>20)

	start = time.Now()
	resetPeak()
	if _, err := s.EmbedPending(ctx, 256, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("embed: %s (local-embed, %d dims), peak RSS %d MiB", time.Since(start).Round(time.Millisecond), llm.LocalEmbedDim, peakRSS()/1024)

	qv := llm.LocalVector("quarterly budget report for the solar panel installer")
	f := false
	queries := []struct {
		name string
		q    mail.Query
	}{
		{"lexical", mail.Query{Text: "invoice renewal", NoVectors: true}},
		{"lexical-rare", mail.Query{Text: "photovoltaic certification", NoVectors: true}},
		{"substring", mail.Query{Body: "ertificatio"}},
		{"substring-from", mail.Query{From: "marco.ross"}},
		{"absent-substring", mail.Query{Subject: "zqxjvw"}},
		{"filtered-browse", mail.Query{Role: "inbox", Unread: &f, After: time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC)}},
		{"browse-size", mail.Query{Sort: "size", Attachment: ptrTrue()}},
		{"hybrid", mail.Query{Text: "quarterly budget report", Vector: qv}},
	}
	resetPeak()
	for _, q := range queries {
		if _, err := s.Search(ctx, q.q); err != nil { // warm
			t.Fatal(err)
		}
		var d []time.Duration
		var hits int
		for i := 0; i < 40; i++ {
			st := time.Now()
			r, err := s.Search(ctx, q.q)
			d = append(d, time.Since(st))
			if err != nil {
				t.Fatal(err)
			}
			hits = len(r.Messages)
		}
		p50, p95 := percentiles(d)
		t.Logf("%-17s p50 %7.2f ms  p95 %7.2f ms  (%d results)", q.name, ms(p50), ms(p95), hits)
	}
	t.Logf("search peak RSS %d MiB", peakRSS()/1024)
	runtime.GC()
	debug.FreeOSMemory()
	t.Logf("steady RSS after searches (vectors loaded) %d MiB", curRSS()/1024)
	if os.Getenv("HESTIA_MAIL_BENCH_NOTMUCH") != "0" {
		notmuch(t, corpus, n)
	}
}

func ptrTrue() *bool { b := true; return &b }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// notmuch runs Debian's notmuch on the same Maildir when installed.
func notmuch(t *testing.T, corpus string, n int) {
	bin, err := exec.LookPath("notmuch")
	if err != nil {
		t.Log("notmuch not installed: skipping comparison")
		return
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "notmuch-config")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[database]\npath=%s\nmail_root=%s\n[new]\ntags=inbox;\n[maildir]\nsynchronize_flags=false\n", filepath.Join(dir, "db"), corpus)), 0o644)
	os.MkdirAll(filepath.Join(dir, "db"), 0o755)
	os.RemoveAll(filepath.Join(corpus, ".notmuch"))
	run := func(args ...string) (time.Duration, string) {
		st := time.Now()
		out, err := exec.Command(bin, append([]string{"--config=" + cfg}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("notmuch %v: %v %s", args, err, out)
		}
		return time.Since(st), string(out)
	}
	d, out := run("new", "--quiet")
	t.Logf("notmuch new: %s = %.0f msg/s %s", d.Round(time.Millisecond), float64(n)/d.Seconds(), strings.TrimSpace(out))
	for _, q := range [][]string{{"invoice", "renewal"}, {"photovoltaic", "certification"}, {"from:marco*"}, {"subject:zqxjvw"}} {
		var ds []time.Duration
		for i := 0; i < 10; i++ {
			d, _ := run(append([]string{"search", "--limit=8", "--output=threads"}, q...)...)
			ds = append(ds, d)
		}
		p50, p95 := percentiles(ds)
		t.Logf("notmuch search %-28s p50 %7.2f ms  p95 %7.2f ms (process per query)", strings.Join(q, " "), ms(p50), ms(p95))
	}
}
