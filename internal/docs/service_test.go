package docs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

// childExtractor re-executes this test binary as the extraction child.
func childExtractor(lim Limits) *Extractor {
	return &Extractor{Exe: os.Args[0], Args: []string{"extract"}, Limits: lim}
}

func TestChildExtracts(t *testing.T) {
	t.Parallel()
	x := childExtractor(Limits{})
	doc, err := x.Extract(context.Background(), fixture(t, "contract.pdf"), PDF)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Pages) != 3 || !strings.Contains(doc.Pages[2].Text, "terminate") {
		t.Fatalf("%+v", doc)
	}
	if _, err := x.Extract(context.Background(), fixture(t, "scanned.pdf"), PDF); !errors.Is(err, ErrNoText) {
		t.Fatalf("scanned PDF: %v", err)
	}
	if _, err := x.Extract(context.Background(), fixture(t, "zipbomb.docx"), DOCX); err == nil || !strings.Contains(err.Error(), "declares more than") {
		t.Fatalf("zip bomb: %v", err)
	}
}

// A PDF whose page tree contains itself must not take the caller down:
// the child dies or times out, and the parent reports it.
func TestChildSurvivesLoopingPDF(t *testing.T) {
	t.Parallel()
	x := childExtractor(Limits{Timeout: 3 * time.Second, MemoryBytes: 1 << 30})
	_, err := x.Extract(context.Background(), fixture(t, "loop.pdf"), PDF)
	if err == nil {
		t.Fatal("a looping PDF extracted")
	}
	t.Logf("looping PDF: %v", err)
}

// A child that never finishes is killed at the timeout.
func TestChildTimeout(t *testing.T) {
	t.Parallel()
	for _, prestart := range []bool{false, true} {
		x := &Extractor{Exe: "/bin/sh", Args: []string{"-c", "sleep 30", "sh"}, Limits: Limits{Timeout: time.Second}, Prestart: prestart}
		if _, err := os.Stat(x.Exe); err != nil {
			t.Skip("no /bin/sh")
		}
		if prestart {
			x.Warm()
		}
		_, err := x.Extract(context.Background(), []byte("x"), Text)
		if err == nil || !strings.Contains(err.Error(), "longer than 1s") {
			t.Fatalf("prestart %v: %v", prestart, err)
		}
		x.Close()
	}
}

func readyPid(x *Extractor) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ready == nil || x.ready.cmd.Process == nil {
		return 0
	}
	return x.ready.cmd.Process.Pid
}

// waitReady polls (generously: a loaded machine starts processes slowly)
// until a waiting child other than not is there.
func waitReady(t *testing.T, x *Extractor, not int) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if p := readyPid(x); p != 0 && p != not {
			return p
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no prestarted child appeared")
	return 0
}

// A prestarted child takes the next document, one more is started for the
// one after, a waiting child killed from outside is replaced, and Close
// stops the waiting one.
func TestPrestartedChild(t *testing.T) {
	t.Parallel()
	x := childExtractor(Limits{})
	x.Prestart = true
	x.Warm()
	first := waitReady(t, x, 0)
	doc, err := x.Extract(context.Background(), fixture(t, "contract.pdf"), PDF)
	if err != nil || len(doc.Pages) != 3 {
		t.Fatalf("%+v %v", doc, err)
	}
	second := waitReady(t, x, first)
	x.mu.Lock()
	c := x.ready
	x.mu.Unlock()
	killGroup(second)
	<-c.done // as when it was killed a while ago
	doc, err = x.Extract(context.Background(), fixture(t, "contract.docx"), DOCX)
	if err != nil || !strings.Contains(doc.Pages[0].Text, "Termination") {
		t.Fatalf("after the waiting child was killed: %+v %v", doc, err)
	}
	third := waitReady(t, x, second)
	if _, err := x.Extract(context.Background(), fixture(t, "scanned.pdf"), PDF); !errors.Is(err, ErrNoText) {
		t.Fatalf("scanned PDF through a prestarted child: %v", err)
	}
	waitReady(t, x, third)
	x.Close()
	if readyPid(x) != 0 {
		t.Fatal("a child still waits after Close")
	}
}

type sandbox struct {
	home string
	svc  *Service
	tl   map[string]tools.Tool
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	home := t.TempDir()
	docs := filepath.Join(home, "Documents")
	os.MkdirAll(docs, 0o755)
	for name, data := range fixtures() {
		if err := os.WriteFile(filepath.Join(docs, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(home, ".ssh", "notes.txt"), []byte("secret"), 0o600)
	os.Symlink(filepath.Join(home, ".ssh", "notes.txt"), filepath.Join(docs, "link.txt"))
	pp, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	lim := Limits{}
	svc := NewService(pp, childExtractor(lim), nil, lim)
	sb := &sandbox{home: home, svc: svc, tl: map[string]tools.Tool{}}
	for _, tl := range svc.Tools() {
		sb.tl[tl.Spec().Name] = tl
	}
	return sb
}

func (sb *sandbox) call(t *testing.T, name string, args any) (string, bool) {
	t.Helper()
	raw, _ := json.Marshal(args)
	tl := sb.tl[name]
	_, canon, err := tools.DecodeArgs(name, string(raw), tl.Spec().Schema)
	if err != nil {
		return err.Error(), true
	}
	res, err := tl.Run(context.Background(), tools.Call{Args: canon})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content, res.IsError
}

func TestDocumentTools(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	for _, tl := range sb.svc.Tools() {
		s := tl.Spec()
		if !s.UntrustedOutput || !s.ReadOnly || s.Risk != tools.RiskLow {
			t.Fatalf("%s spec %+v: document output must be untrusted, read-only", s.Name, s)
		}
	}
	out, isErr := sb.call(t, "document_info", map[string]any{"path": "~/Documents/contract.pdf"})
	if isErr {
		t.Fatal(out)
	}
	var info Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.Format != PDF || info.Pages != 3 || len(info.Headings) != 1 || info.Headings[0].Page != 3 || strings.Contains(out, "terminate") {
		t.Fatalf("info %s", out)
	}
	// The heading's cursor reads from the heading.
	out, isErr = sb.call(t, "document_read", map[string]any{"path": "~/Documents/contract.pdf", "cursor": info.Headings[0].Cursor})
	if isErr || !strings.Contains(out, `"text":"7. Termination\nEither party may terminate`) {
		t.Fatalf("read by heading cursor: %s", out)
	}
	// Search finds the termination clause on page 3 with a usable cursor.
	out, isErr = sb.call(t, "document_search", map[string]any{"path": "~/Documents/contract.pdf", "query": "termination notice"})
	if isErr {
		t.Fatal(out)
	}
	var sr SearchResult
	json.Unmarshal([]byte(out), &sr)
	if len(sr.Matches) == 0 || sr.Matches[0].Page != 3 || !strings.Contains(sr.Matches[0].Excerpt, "terminate this contract with three months notice") || sr.Semantic.Status != "disabled" {
		t.Fatalf("search %s", out)
	}
	out, isErr = sb.call(t, "document_read", map[string]any{"path": "~/Documents/contract.pdf", "cursor": sr.Matches[0].Cursor, "max_chars": 100})
	if isErr || !strings.Contains(out, "Termination") {
		t.Fatalf("read from search cursor: %s", out)
	}
}

func TestDocumentReadPaging(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	var long strings.Builder
	for i := range 400 {
		long.WriteString(strings.Repeat("word ", 10) + "line " + string(rune('a'+i%26)) + ".\n")
	}
	path := filepath.Join(sb.home, "Documents", "long.txt")
	os.WriteFile(path, []byte(long.String()), 0o644)
	total := len(strings.TrimSpace(long.String()))
	var got strings.Builder
	args := map[string]any{"path": path}
	for i := 0; ; i++ {
		if i > 20 {
			t.Fatal("paging does not end")
		}
		out, isErr := sb.call(t, "document_read", args)
		if isErr {
			t.Fatal(out)
		}
		var r ReadResult
		json.Unmarshal([]byte(out), &r)
		if r.Selection.Chars > DefaultReadChars {
			t.Fatalf("read %d chars", r.Selection.Chars)
		}
		for _, p := range r.Pages {
			got.WriteString(p.Text)
		}
		if !r.Navigation.HasMore {
			break
		}
		args = map[string]any{"path": path, "cursor": r.Navigation.NextCursor}
	}
	if got.Len() != total {
		t.Fatalf("paging read %d bytes of %d", got.Len(), total)
	}
	// Pages: max_pages 3 of the PPTX returns all three slides; page 4 is
	// past the end.
	out, isErr := sb.call(t, "document_read", map[string]any{"path": "~/Documents/slides.pptx", "page": 1, "max_pages": 3})
	if isErr || !strings.Contains(out, "Roadmap") || strings.Contains(out, `"has_more":true`) {
		t.Fatalf("%s", out)
	}
	out, isErr = sb.call(t, "document_read", map[string]any{"path": "~/Documents/slides.pptx", "page": 2})
	if isErr || strings.Contains(out, "Roadmap") || !strings.Contains(out, `"has_more":true`) {
		t.Fatalf("%s", out)
	}
	if out, isErr := sb.call(t, "document_read", map[string]any{"path": "~/Documents/slides.pptx", "page": 9}); !isErr || !strings.Contains(out, "has 3 pages") {
		t.Fatalf("%s", out)
	}
	if out, isErr := sb.call(t, "document_read", map[string]any{"path": "~/Documents/slides.pptx", "page": 1, "cursor": "d1.x"}); !isErr || !strings.Contains(out, "not both") {
		t.Fatalf("%s", out)
	}
	if out, isErr := sb.call(t, "document_read", map[string]any{"path": "~/Documents/slides.pptx", "max_chars": 50000}); !isErr || !strings.Contains(out, "at most 12000") {
		t.Fatalf("%s", out)
	}
}

func TestStaleCursorRefused(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	path := filepath.Join(sb.home, "Documents", "notes.md")
	out, _ := sb.call(t, "document_info", map[string]any{"path": path})
	var info Info
	json.Unmarshal([]byte(out), &info)
	if len(info.Headings) != 2 {
		t.Fatalf("%s", out)
	}
	// Another file's cursor is refused too.
	other, _ := sb.call(t, "document_info", map[string]any{"path": "~/Documents/contract.docx"})
	var oi Info
	json.Unmarshal([]byte(other), &oi)
	if out, isErr := sb.call(t, "document_read", map[string]any{"path": path, "cursor": oi.Headings[0].Cursor}); !isErr || !strings.HasPrefix(out, "stale_cursor") {
		t.Fatalf("foreign cursor: %s", out)
	}
	os.WriteFile(path, []byte("# Changed\n\nnew text that is longer than before\n"), 0o644)
	os.Chtimes(path, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	out, isErr := sb.call(t, "document_read", map[string]any{"path": path, "cursor": info.Headings[1].Cursor})
	if !isErr || !strings.HasPrefix(out, "stale_cursor") {
		t.Fatalf("stale cursor accepted: %s", out)
	}
	for _, bad := range []string{"garbage", "d1.!!!", "d1." + "YWJj"} {
		if out, isErr := sb.call(t, "document_read", map[string]any{"path": path, "cursor": bad}); !isErr || !strings.Contains(out, "cursor") {
			t.Fatalf("cursor %q: %s", bad, out)
		}
	}
}

func TestDocumentRefusalsNameReason(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	big := filepath.Join(sb.home, "Documents", "huge.pdf")
	f, _ := os.Create(big)
	f.Truncate(100 << 20) // sparse: 100 MiB without writing it
	f.Close()
	os.WriteFile(filepath.Join(sb.home, "Documents", "tool.exe"), []byte("MZ"), 0o644)
	cases := map[string]string{
		"~/Documents/scanned.pdf":  "no_extractable_text",
		"~/Documents/zipbomb.docx": "too_large",
		"~/Documents/huge.pdf":     "too_large: " + big + " is 100.0 MiB; documents over 25.0 MiB are not read",
		"~/Documents/tool.exe":     "unsupported_format",
		"~/Documents/missing.pdf":  "does not exist",
		"~/Documents":              "is a directory",
		"~/.ssh/notes.txt":         "refused",
		"~/Documents/link.txt":     "refused",
		"/etc/passwd":              "refused",
		"~/Documents/loop.pdf":     "no readable pages",
	}
	for path, want := range cases {
		out, isErr := sb.call(t, "document_info", map[string]any{"path": path})
		if !isErr || !strings.Contains(out, want) {
			t.Errorf("%s: %v %s (want %q)", path, isErr, out, want)
		}
	}
}

func TestCacheReusesAndEvicts(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	calls := 0
	sb.svc.Extractor = countingExtractor{InProcess{}, &calls}
	for range 3 {
		sb.call(t, "document_info", map[string]any{"path": "~/Documents/contract.docx"})
	}
	if calls != 1 {
		t.Fatalf("%d extractions for 3 reads of one file", calls)
	}
	for i := range 10 {
		p := filepath.Join(sb.home, "Documents", "n"+string(rune('a'+i))+".txt")
		os.WriteFile(p, []byte("note"), 0o644)
		sb.call(t, "document_info", map[string]any{"path": p})
	}
	if n := sb.svc.cache.len(); n != CacheEntries {
		t.Fatalf("cache holds %d entries, want %d", n, CacheEntries)
	}
	sb.call(t, "document_info", map[string]any{"path": "~/Documents/contract.docx"})
	if calls != 12 {
		t.Fatalf("%d extractions; the evicted document should be extracted again", calls)
	}
}

type countingExtractor struct {
	InProcess
	n *int
}

func (c countingExtractor) Extract(ctx context.Context, data []byte, f Format) (*Document, error) {
	*c.n++
	return c.InProcess.Extract(ctx, data, f)
}

type fakeEmbedder struct{ fail bool }

func (f fakeEmbedder) Dimension() int { return 0 }

// Embed maps each text to a 3-d vector of keyword presence, so "ending the
// deal" finds the termination clause without sharing a word with it.
func (f fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.fail {
		return nil, errors.New("embedding endpoint down")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		t = strings.ToLower(t)
		v := []float32{0.01, 0.01, 0.01}
		if strings.Contains(t, "terminat") || strings.Contains(t, "ending") {
			v[0] = 1
		}
		if strings.Contains(t, "scope") || strings.Contains(t, "hosting") {
			v[1] = 1
		}
		out[i] = v
	}
	return out, nil
}

func TestSemanticSearch(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.svc.Embedder = fakeEmbedder{}
	out, isErr := sb.call(t, "document_search", map[string]any{"path": "~/Documents/contract.pdf", "query": "ending the deal"})
	var sr SearchResult
	json.Unmarshal([]byte(out), &sr)
	if isErr || sr.Semantic.Status != "full" || len(sr.Matches) == 0 || sr.Matches[0].Page != 3 || sr.Matches[0].Via != "semantic" {
		t.Fatalf("%s", out)
	}
	sb.svc.Embedder = fakeEmbedder{fail: true}
	out, isErr = sb.call(t, "document_search", map[string]any{"path": "~/Documents/contract.docx", "query": "termination"})
	json.Unmarshal([]byte(out), &sr)
	if isErr || sr.Semantic.Status != "unavailable" || !strings.Contains(sr.Semantic.Error, "endpoint down") || len(sr.Matches) == 0 {
		t.Fatalf("lexical results must survive a dead embedder: %s", out)
	}
}

func TestSemanticSampledOnLargeDocuments(t *testing.T) {
	t.Parallel()
	sb := newSandbox(t)
	sb.svc.Embedder = fakeEmbedder{}
	path := filepath.Join(sb.home, "Documents", "big.txt")
	os.WriteFile(path, []byte(strings.Repeat("A sentence about nothing in particular. ", 20000)), 0o644)
	out, _ := sb.call(t, "document_search", map[string]any{"path": path, "query": "termination", "max_results": 10, "context_chars": 800})
	var sr SearchResult
	json.Unmarshal([]byte(out), &sr)
	if sr.Semantic.Status != "sampled" || sr.Semantic.Selected != maxSemantic || len(sr.Warnings) == 0 || len(sr.Matches) > 10 {
		t.Fatalf("%s", trunc(out, 2000))
	}
}
