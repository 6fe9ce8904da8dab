package wiki

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// genPages writes n Markdown pages with front matter, headings, links and
// words drawn from a fixed vocabulary (deterministic).
func genPages(tb testing.TB, root string, n int) {
	tb.Helper()
	// A Zipf-distributed vocabulary of 20,000 made-up words plus a few
	// real ones, like the long tail of real notes (a tiny vocabulary would
	// make every word match every page, which no real wiki does).
	r := rand.New(rand.NewSource(1))
	// Function words take the head of the distribution, as in real text;
	// the topic words sit in the middle, made-up words fill the tail.
	words := strings.Fields("the of and to a in is it that for on was with he as at by this had not are but from or have an they which one you were her all she there would their we him been has when who will more no if out so said what up its about into than them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three")
	topic := strings.Fields("solar roof contract invoice garden school holiday lisbon budget doctor insurance car repair kitchen piano lesson birthday cake train ticket passport renewal tax return pension bank loan mortgage plumber heating boiler warranty")
	syll := strings.Fields("ka lo mi ne ru sa te vi zo ba de fu gi ho ja ku ma no pe ri")
	for len(words) < 20_000 {
		if len(words)%40 == 0 && len(topic) > 0 {
			words, topic = append(words, topic[0]), topic[1:]
			continue
		}
		var w strings.Builder
		for range 2 + r.Intn(3) {
			w.WriteString(syll[r.Intn(len(syll))])
		}
		words = append(words, w.String())
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(words)-1))
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "---\ntitle: Page %d\ntags: [gen, t%d]\nsources: [hestia://chat/c%d]\n---\n# Page %d\n\n", i, i%17, i%91, i)
		for s := range 3 {
			fmt.Fprintf(&b, "## Section %d\n\n", s)
			for range 60 {
				b.WriteString(words[zipf.Uint64()])
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "\nSee [[Page %d]] and [[Page %d#Section 1|there]].\n\n", r.Intn(n), r.Intn(n))
		}
		dir := filepath.Join(root, "pages", fmt.Sprintf("d%02d", i%50))
		os.MkdirAll(dir, 0o700)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("Page %d.md", i)), []byte(b.String()), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkIndex10k indexes 10,000 generated pages from scratch (target:
// ≤ 30 s on the project machine).
func BenchmarkIndex10k(b *testing.B) {
	for range b.N {
		b.StopTimer()
		dir := b.TempDir()
		w, err := Open(context.Background(), Options{Root: filepath.Join(dir, "wiki"), DBPath: filepath.Join(dir, "wiki.db")})
		if err != nil {
			b.Fatal(err)
		}
		genPages(b, w.Root(), 10_000)
		b.StartTimer()
		st, err := w.Reconcile(context.Background())
		if err != nil || st.Indexed < 10_000 {
			b.Fatalf("%+v %v", st, err)
		}
		b.StopTimer()
		w.Close()
	}
}

// BenchmarkSearch10k measures wiki search over 10,000 pages and reports
// the median (target: p50 ≤ 5 ms in-process).
func BenchmarkSearch10k(b *testing.B) {
	dir := b.TempDir()
	w, err := Open(context.Background(), Options{Root: filepath.Join(dir, "wiki"), DBPath: filepath.Join(dir, "wiki.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	genPages(b, w.Root(), 10_000)
	if _, err := w.Reconcile(context.Background()); err != nil {
		b.Fatal(err)
	}
	queries := []string{"boiler warranty", "lisbon", "passport renewal", "page 4242", "mortg", "piano lesson birthday"}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		t := time.Now()
		if _, err := w.Search(context.Background(), queries[i%len(queries)], 10); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	if os.Getenv("WIKI_BENCH_DETAIL") != "" {
		for qi, q := range queries {
			var ls []time.Duration
			for i := qi; i < len(lat); i += len(queries) {
				ls = append(ls, lat[i])
			}
			sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
			if len(ls) > 0 {
				b.Logf("%-22q p50 %v", q, ls[len(ls)/2])
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*9/10].Microseconds())/1000, "p90-ms")
}
