package docs

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/search"
)

// Extracter produces a Document from a file's bytes. The Extractor (child
// process) is the one the daemon uses.
type Extracter interface {
	Extract(ctx context.Context, data []byte, format Format) (*Document, error)
}

// InProcess runs Extract in this process; for tests and benchmarks of the
// parsers only, never for the daemon.
type InProcess struct{ Limits Limits }

// Extract implements Extracter.
func (p InProcess) Extract(ctx context.Context, data []byte, f Format) (*Document, error) {
	return Extract(ctx, data, f, p.Limits)
}

// Service holds what the document tools share: the path policy, the
// extractor, the optional embedder and the cache.
type Service struct {
	Paths     *pathpolicy.Policy
	Extractor Extracter
	Embedder  search.Embedder // nil: semantic ranking disabled
	Limits    Limits
	cache     *lru
}

// Cache defaults: eight documents, 64 MiB of estimated text, chunks and vectors.
const (
	CacheEntries  = 8
	CacheMaxBytes = 64 << 20
)

// NewService builds a Service.
func NewService(p *pathpolicy.Policy, x Extracter, emb search.Embedder, lim Limits) *Service {
	return &Service{Paths: p, Extractor: x, Embedder: emb, Limits: lim.WithDefaults(), cache: newLRU(CacheEntries, CacheMaxBytes)}
}

// entry is one extracted document in the cache.
type entry struct {
	key    string
	fp     string // fingerprint in cursors
	path   string
	size   int64
	mtime  time.Time
	doc    *Document
	chunks []chunk

	mu      sync.Mutex  // guards vectors and vecDim
	vectors [][]float32 // per chunk, nil until embedded
	vecDim  int

	cost int64 // the cache's estimate of the bytes this entry holds
}

func (e *entry) estimate() int64 {
	n := int64(e.doc.bytes())
	for _, c := range e.chunks {
		n += int64(len(c.norm)) + 48
	}
	e.mu.Lock()
	for _, v := range e.vectors {
		n += int64(len(v))*4 + 24
	}
	e.mu.Unlock()
	return n
}

// open resolves, checks, extracts (or finds in the cache) one document.
func (s *Service) open(ctx context.Context, raw string) (*entry, error) {
	path, err := s.Paths.Resolve(raw)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a document; use find_files or list_dir", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > s.Limits.MaxInputBytes {
		return nil, fmt.Errorf("%s is %s; documents over %s are not read: %w", path, human(st.Size()), human(s.Limits.MaxInputBytes), ErrTooLarge)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, st.Size(), st.ModTime().UnixNano())
	if e := s.cache.get(key); e != nil {
		return e, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, s.Limits.MaxInputBytes+1))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	doc, err := s.Extractor.Extract(ctx, data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// A file rewritten while the child ran would pair old text with the
	// new version's key.
	if st2, err := os.Stat(path); err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) || int64(len(data)) != st.Size() {
		return nil, fmt.Errorf("%s changed while it was being read; try again", path)
	}
	sum := sha256.Sum256([]byte(key))
	e := &entry{key: key, fp: hex.EncodeToString(sum[:6]), path: path, size: st.Size(), mtime: st.ModTime(), doc: doc, chunks: chunkPages(doc.Pages)}
	s.cache.put(e)
	return e, nil
}

func human(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Cursors are "d1." + base64url("fingerprint:page:offset"). They are
// continuation tokens for one version of one file, not citations.
func (e *entry) cursor(page, offset int) string {
	return "d1." + base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s:%d:%d", e.fp, page, offset)))
}

// ErrStaleCursor is wrapped when a cursor belongs to another version of the
// file (or another file).
var ErrStaleCursor = errors.New("stale cursor")

func (e *entry) parseCursor(c string) (page, offset int, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(c), "d1.")
	if !ok {
		return 0, 0, fmt.Errorf("cursor %q is not a document cursor (they start with d1.); use one from document_info, document_read or document_search", trunc(c, 40))
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return 0, 0, fmt.Errorf("cursor %q is malformed", trunc(c, 40))
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 {
		return 0, 0, fmt.Errorf("cursor %q is malformed", trunc(c, 40))
	}
	if parts[0] != e.fp {
		return 0, 0, fmt.Errorf("the cursor belongs to another version of %s (the file changed or it is another file); call document_info or document_search again: %w", e.path, ErrStaleCursor)
	}
	page, err1 := strconv.Atoi(parts[1])
	offset, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || page < 1 || page > len(e.doc.Pages) || offset < 0 || offset > len(e.doc.Pages[page-1].Text) {
		return 0, 0, fmt.Errorf("cursor %q points outside the document", trunc(c, 40))
	}
	return page, offset, nil
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
