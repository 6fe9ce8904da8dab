// Package wiki is Hestia's long-term memory: a folder of Markdown pages the
// user can open in any editor (Obsidian-compatible [[wikilinks]]), with YAML
// front matter carrying provenance, and a rebuildable SQLite index (chunks
// with FTS5 word and trigram search plus optional vectors fused by RRF, the
// link graph and backlinks).
//
// The folder is the source of truth. The index is reconciled on start and
// kept current by a filesystem watcher, so edits made outside Hestia are
// picked up; the wiki's own writes go to a temporary file and are renamed
// into place. Content that came from outside (mail-derived notes and
// imported files under sources/, or pages whose sources name mail or
// files) is marked untrusted, and the tools that return it taint the turn.
//
// Design notes (the package map in ARCHITECTURE.md points here); they cover `wiki/wikitools` too:
//
// the Markdown wiki (folder = truth): front matter and `[[wikilink]]` parsing, its index
// (`wiki.db`: pages, link graph, chunks in FTS5 word + trigram tables, optional vectors, RRF),
// reconcile on start + fsnotify watcher, import with collision rules, lint, atomic writes with
// `log.md` trail; the agent's `wiki_search`/`wiki_read`/`wiki_links` and gated
// `wiki_write`/`wiki_edit` (unified diff on the card; outside-provenance content wrapped and
// tainting the turn).
package wiki

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/search"
	"github.com/hestia-dev/hestia/internal/store"
)

// Layout names.
const (
	SourcesDir = "sources"
	PagesDir   = "pages"
	IndexFile  = "index.md"
	LogFile    = "log.md"
	Purpose    = "purpose.md"
	SchemaFile = "schema.md"
)

// Page kinds.
const (
	KindPage    = "page"    // a page anywhere outside sources/
	KindSource  = "source"  // raw material under sources/ (imports, mail notes)
	KindSpecial = "special" // index.md, log.md, purpose.md, schema.md
	KindFile    = "file"    // a non-text file (pdf, image); not indexed
	KindBinary  = "binary"  // a .md/.txt file that holds binary data
)

// MaxIndexBytes bounds how much of one file is read into the index; the
// rest of a larger file is reported by lint and still readable page by page.
const MaxIndexBytes = 4 << 20

// ErrNotFound is returned for a page the wiki does not hold.
var ErrNotFound = store.ErrNotFound

// Options configure a Wiki.
type Options struct {
	Root   string // the Markdown folder
	DBPath string // the index database
	Logger *slog.Logger
	Now    func() time.Time
	// Embedder is optional; without one, search is FTS5 + trigram.
	Embedder search.Embedder
}

// Wiki is an open wiki folder and its index.
type Wiki struct {
	root string
	db   *store.DB
	log  *slog.Logger
	now  func() time.Time
	emb  search.Embedder

	// mu serialises index writes (reconcile, watcher, the wiki's own
	// writes and imports) so a page is never indexed twice at once.
	mu sync.Mutex

	vecMu sync.Mutex // guards vec
	vec   *search.Index
}

// Open creates the folder layout where missing, opens the index and
// returns the wiki. It does not reconcile; call Reconcile (the daemon does
// on start).
func Open(ctx context.Context, o Options) (*Wiki, error) {
	if o.Root == "" {
		return nil, errors.New("wiki: no folder configured")
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("wiki folder %s: %w", o.Root, err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Wiki{root: root, log: o.Logger, now: o.Now, emb: o.Embedder}
	if err := w.ensureLayout(); err != nil {
		return nil, err
	}
	// The root itself may be a symlink (a vault kept elsewhere); what is
	// inside it is never followed.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		w.root = r
	}
	db, err := store.Open(ctx, o.DBPath, Schema)
	if err != nil {
		return nil, err
	}
	w.db = db
	return w, nil
}

// Close closes the index.
func (w *Wiki) Close() error { return w.db.Close() }

// Root is the wiki folder.
func (w *Wiki) Root() string { return w.root }

// DB is the index database (doctor and backups walk it).
func (w *Wiki) DB() *store.DB { return w.db }

var defaultFiles = map[string]string{
	IndexFile:  "---\ntitle: Index\n---\n# Index\n\nA catalog of the pages in this wiki. Link new pages here with [[wikilinks]].\n",
	LogFile:    "---\ntitle: Log\n---\n# Log\n\nOperations on this wiki, newest last.\n\n",
	Purpose:    "---\ntitle: Purpose\n---\n# Purpose\n\nWhy this wiki exists: durable facts, decisions, commitments and documents worth remembering, each with its source.\n",
	SchemaFile: "---\ntitle: Schema\n---\n# Schema\n\nPages live in `pages/`, raw material (imports, mail notes) in `sources/`.\nFront matter keys: `title`, `tags`, `created`, `updated`, `sources` (provenance URIs such as `hestia://mail/thread/<id>`), `review_by` (YYYY-MM-DD).\nLink pages with `[[Page name]]`, `[[Page name#Heading]]` or `[[Page name|shown text]]`.\n",
}

func (w *Wiki) ensureLayout() error {
	for _, d := range []string{w.root, filepath.Join(w.root, SourcesDir), filepath.Join(w.root, PagesDir)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating wiki folder %s: %w", d, err)
		}
	}
	for name, content := range defaultFiles {
		p := filepath.Join(w.root, name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", p, err)
		}
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

// kindOf classifies a wiki-relative path (forward slashes).
func kindOf(rel string) string {
	switch rel {
	case IndexFile, LogFile, Purpose, SchemaFile:
		return KindSpecial
	}
	if strings.HasPrefix(rel, SourcesDir+"/") {
		return KindSource
	}
	return KindPage
}

func textFile(rel string) bool {
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown", ".txt":
		return true
	}
	return false
}

// skipName reports names the index never looks at: hidden files and
// folders (.obsidian, .git, .trash) and editor temporaries.
func skipName(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") || strings.HasSuffix(name, ".swp") || strings.HasSuffix(name, ".tmp")
}

type known struct {
	id    int64
	size  int64
	mtime int64
	sha   string
}

// ReconcileStats says what a reconcile changed.
type ReconcileStats struct {
	Seen    int `json:"seen"`
	Indexed int `json:"indexed"`
	Removed int `json:"removed"`
	Failed  int `json:"failed"`
}

// Reconcile brings the index in line with the folder: new and changed
// files are indexed (a file whose size and mtime are unchanged is not
// read), files that are gone are dropped. Symlinks are never followed.
func (w *Wiki) Reconcile(ctx context.Context) (ReconcileStats, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st ReconcileStats
	have := map[string]known{}
	rows, err := w.db.QueryContext(ctx, `SELECT id, path, size, mtime, sha256 FROM pages`)
	if err != nil {
		return st, fmt.Errorf("listing indexed pages: %w", err)
	}
	for rows.Next() {
		var k known
		var p string
		if err := rows.Scan(&k.id, &p, &k.size, &k.mtime, &k.sha); err != nil {
			rows.Close()
			return st, err
		}
		have[p] = k
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, err
	}
	var todo []string
	seen := map[string]bool{}
	err = filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			w.log.Warn("wikiWalk", "path", p, "err", err)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p != w.root && skipName(d.Name()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked, symlinks and devices skipped
		}
		rel, err := w.rel(p)
		if err != nil {
			return nil
		}
		seen[rel] = true
		st.Seen++
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if k, ok := have[rel]; ok && k.size == info.Size() && k.mtime == info.ModTime().UnixNano() {
			return nil
		}
		todo = append(todo, rel)
		return nil
	})
	if err != nil {
		return st, err
	}
	const batch = 256
	for start := 0; start < len(todo); start += batch {
		n, failed, err := w.indexBatch(ctx, todo[start:min(len(todo), start+batch)], have)
		st.Indexed += n
		st.Failed += failed
		if err != nil {
			return st, err
		}
	}
	var gone []int64
	for p, k := range have {
		if !seen[p] {
			gone = append(gone, k.id)
		}
	}
	if len(gone) > 0 {
		err := w.db.Tx(ctx, func(sqltx *sql.Tx) error {
			tx := newStmts(sqltx)
			defer tx.close()
			for _, id := range gone {
				if err := deletePage(ctx, tx, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return st, err
		}
		st.Removed = len(gone)
		w.dropVectors()
	}
	return st, nil
}

// rel turns an absolute path inside the root into a wiki path.
func (w *Wiki) rel(p string) (string, error) {
	r, err := filepath.Rel(w.root, p)
	if err != nil || r == "." || strings.HasPrefix(r, "..") {
		return "", fmt.Errorf("%s is outside the wiki", p)
	}
	return filepath.ToSlash(r), nil
}

// loaded is one file read for indexing.
type loaded struct {
	rel   string
	size  int64
	mtime int64
	sha   string
	page  Page
	kind  string
}

// load reads one file: the hash over all of it, the text only up to
// MaxIndexBytes.
func (w *Wiki) load(rel string) (*loaded, error) {
	full := filepath.Join(w.root, filepath.FromSlash(rel))
	f, err := os.OpenFile(full, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	l := &loaded{rel: rel, size: info.Size(), mtime: info.ModTime().UnixNano(), kind: kindOf(rel)}
	h := sha256.New()
	if !textFile(rel) {
		if _, err := io.Copy(h, f); err != nil {
			return nil, err
		}
		l.sha = hex.EncodeToString(h.Sum(nil))
		l.kind = KindFile
		return l, nil
	}
	head := make([]byte, min(info.Size(), MaxIndexBytes))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	head = head[:n]
	h.Write(head)
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	l.sha = hex.EncodeToString(h.Sum(nil))
	if isBinary(head) {
		l.kind = KindBinary
		l.page.Problems = []string{"binary content in a text file (not indexed)"}
		return l, nil
	}
	if info.Size() > int64(len(head)) {
		// Cut at a rune boundary so the cut does not look like bad UTF-8.
		for len(head) > 0 && head[len(head)-1]&0xC0 == 0x80 {
			head = head[:len(head)-1]
		}
		if len(head) > 0 && head[len(head)-1] >= 0xC0 {
			head = head[:len(head)-1]
		}
	}
	l.page = ParsePage(head)
	if info.Size() > MaxIndexBytes {
		l.page.Problems = append(l.page.Problems, fmt.Sprintf("file is %d MiB; only the first %d MiB are indexed", info.Size()>>20, MaxIndexBytes>>20))
	}
	return l, nil
}

func isBinary(b []byte) bool {
	return strings.IndexByte(string(b[:min(len(b), 8000)]), 0) >= 0
}

func (w *Wiki) indexBatch(ctx context.Context, rels []string, have map[string]known) (indexed, failed int, err error) {
	var ls []*loaded
	for _, rel := range rels {
		l, err := w.load(rel)
		if err != nil {
			w.log.Warn("wikiIndexFile", "path", rel, "err", err)
			failed++
			continue
		}
		ls = append(ls, l)
	}
	err = w.db.Tx(ctx, func(sqltx *sql.Tx) error {
		tx := newStmts(sqltx)
		defer tx.close()
		for _, l := range ls {
			if k, ok := have[l.rel]; ok && k.sha == l.sha {
				// Touched but unchanged: remember the new mtime only.
				if _, err := tx.exec(ctx, `UPDATE pages SET size = ?, mtime = ? WHERE id = ?`, l.size, l.mtime, k.id); err != nil {
					return err
				}
				continue
			}
			if err := w.writePage(ctx, tx, l); err != nil {
				return fmt.Errorf("indexing %s: %w", l.rel, err)
			}
			indexed++
		}
		return nil
	})
	if err != nil {
		return 0, failed, err
	}
	if indexed > 0 {
		w.dropVectors()
	}
	return indexed, failed, nil
}

func deletePage(ctx context.Context, tx *stmts, id int64) error {
	if _, err := tx.exec(ctx, `DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE page_id = ?)`, id); err != nil {
		return fmt.Errorf("dropping page text: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM chunks_tri WHERE rowid IN (SELECT id FROM chunks WHERE page_id = ?)`, id); err != nil {
		return fmt.Errorf("dropping page text: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM pages WHERE id = ?`, id); err != nil {
		return fmt.Errorf("dropping page: %w", err)
	}
	return nil
}

// Untrusted reports whether a page's content came from outside: anything
// under sources/, or a page whose sources name mail, files or the web.
func Untrusted(rel string, sources []string) bool {
	if kindOf(rel) == KindSource {
		return true
	}
	for _, s := range sources {
		s = strings.ToLower(strings.TrimSpace(s))
		for _, p := range []string{"hestia://mail/", "message:", "mid:", "file:", "http://", "https://", "hestia://import/"} {
			if strings.HasPrefix(s, p) {
				return true
			}
		}
	}
	return false
}

// title is the page's display title: its front matter title, else its
// file name without extension.
func title(rel string, fm FrontMatter) string {
	if t := strings.TrimSpace(fm.Title); t != "" {
		return t
	}
	return strings.TrimSuffix(path.Base(rel), path.Ext(rel))
}

func (w *Wiki) writePage(ctx context.Context, tx *stmts, l *loaded) error {
	var id int64
	err := tx.queryRow(ctx, `SELECT id FROM pages WHERE path = ?`, l.rel).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return err
	default:
		if err := deletePage(ctx, tx, id); err != nil {
			return err
		}
	}
	p := l.page
	js := func(v any) string {
		if v == nil {
			return "[]"
		}
		b, _ := json.Marshal(v)
		if string(b) == "null" {
			return "[]"
		}
		return string(b)
	}
	t := title(l.rel, p.FrontMatter)
	res, err := tx.exec(ctx, `INSERT INTO pages (path, kind, title, tags, sources, created, updated, review_by, has_fm, untrusted, size, mtime, sha256, problems)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.rel, l.kind, t, js(p.Tags), js(p.Sources), p.Created, p.Updated, p.ReviewBy, p.HasFrontMatter, Untrusted(l.rel, p.Sources),
		l.size, l.mtime, l.sha, js(p.Problems))
	if err != nil {
		return err
	}
	if id, err = res.LastInsertId(); err != nil {
		return err
	}
	// Resolution keys: the path, the file name and the title, all without
	// extension and case, so [[Name]], [[pages/Name]] and [[Title]] all
	// reach the page.
	keys := map[string]bool{LinkKey(l.rel): true, LinkKey(path.Base(l.rel)): true}
	if t != "" {
		keys[LinkKey(t)] = true
	}
	for k := range keys {
		if _, err := tx.exec(ctx, `INSERT OR IGNORE INTO page_keys (key, page_id) VALUES (?, ?)`, k, id); err != nil {
			return err
		}
	}
	if l.kind == KindFile || l.kind == KindBinary {
		return nil
	}
	for _, lk := range p.Links {
		target := lk.Target
		if target == "" {
			target = l.rel // [[#Heading]] points into the same page
		}
		if _, err := tx.exec(ctx, `INSERT INTO links (page_id, target_key, target, heading, alias, line) VALUES (?, ?, ?, ?, ?, ?)`,
			id, LinkKey(target), lk.Target, lk.Heading, lk.Alias, lk.Line); err != nil {
			return err
		}
	}
	for i, c := range chunkBody(p.Body) {
		ct := ""
		if i == 0 {
			ct = t
		}
		sum := sha256.Sum256([]byte(t + "\x00" + c.heading + "\x00" + c.text))
		res, err := tx.exec(ctx, `INSERT INTO chunks (page_id, ord, heading, start, hash) VALUES (?, ?, ?, ?, ?)`, id, i, c.heading, c.start, hex.EncodeToString(sum[:16]))
		if err != nil {
			return err
		}
		cid, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO chunks_fts (rowid, title, heading, text) VALUES (?, ?, ?, ?)`, cid, ct, c.heading, c.text); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO chunks_tri (rowid, title, text) VALUES (?, ?, ?)`, cid, ct, c.text); err != nil {
			return err
		}
	}
	return nil
}

type chunk struct {
	heading string
	text    string
	start   int // byte offset in the body
}

// chunkTarget is the size a chunk aims for; sections split at paragraph
// breaks past it, and never grow past chunkMax.
const (
	chunkTarget = 1500
	chunkMax    = 4000
)

// chunkBody splits a body at headings, then long sections at blank lines
// (or hard at chunkMax), so a hit points near its text.
func chunkBody(body string) []chunk {
	var out []chunk
	heading := ""
	start := 0
	var cur strings.Builder
	flush := func(next int) {
		if strings.TrimSpace(cur.String()) != "" {
			out = append(out, chunk{heading: heading, text: cur.String(), start: start})
		}
		cur.Reset()
		start = next
	}
	off := 0
	fence := false
	for off < len(body) {
		nl := strings.IndexByte(body[off:], '\n')
		end := len(body)
		if nl >= 0 {
			end = off + nl + 1
		}
		line := body[off:end]
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = !fence
		}
		if !fence && strings.HasPrefix(t, "#") {
			if h := strings.TrimLeft(t, "#"); len(t)-len(h) <= 6 && (h == "" || h[0] == ' ') {
				flush(off)
				heading = strings.TrimSpace(h)
			}
		}
		for len(line) > chunkMax { // one enormous line
			cut := chunkMax
			for cut > 0 && line[cut]&0xC0 == 0x80 {
				cut--
			}
			cur.WriteString(line[:cut])
			flush(off + cut)
			off += cut
			line = line[cut:]
		}
		cur.WriteString(line)
		off = end
		if cur.Len() >= chunkTarget && (t == "" || cur.Len() >= chunkMax) {
			flush(off)
		}
	}
	flush(off)
	return out
}

// Reindex drops the derived index and rebuilds it from the folder. Import
// tracking is kept.
func (w *Wiki) Reindex(ctx context.Context) (ReconcileStats, error) {
	w.mu.Lock()
	err := w.db.Tx(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{`DELETE FROM chunks_fts`, `DELETE FROM chunks_tri`, `DELETE FROM pages`} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("clearing the wiki index: %w", err)
			}
		}
		return nil
	})
	w.mu.Unlock()
	if err != nil {
		return ReconcileStats{}, err
	}
	w.dropVectors()
	return w.Reconcile(ctx)
}

// IndexPath re-indexes one file now (used after the wiki's own writes so a
// read right after sees them; the watcher would catch up anyway).
func (w *Wiki) IndexPath(ctx context.Context, rel string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	l, err := w.load(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return w.db.Tx(ctx, func(sqltx *sql.Tx) error {
			tx := newStmts(sqltx)
			defer tx.close()
			var id int64
			err := tx.queryRow(ctx, `SELECT id FROM pages WHERE path = ?`, rel).Scan(&id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			return deletePage(ctx, tx, id)
		})
	}
	if err != nil {
		return err
	}
	defer w.dropVectors()
	return w.db.Tx(ctx, func(sqltx *sql.Tx) error {
		tx := newStmts(sqltx)
		defer tx.close()
		return w.writePage(ctx, tx, l)
	})
}

// stmts prepares each statement of a transaction once: indexing runs the
// same dozen statements for every page, and preparing them per call cost
// more than running them.
type stmts struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

func newStmts(tx *sql.Tx) *stmts { return &stmts{tx: tx, m: map[string]*sql.Stmt{}} }

func (s *stmts) prep(ctx context.Context, q string) (*sql.Stmt, error) {
	if st, ok := s.m[q]; ok {
		return st, nil
	}
	st, err := s.tx.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.m[q] = st
	return st, nil
}

func (s *stmts) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	st, err := s.prep(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *stmts) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.prep(ctx, q)
	if err != nil {
		// Surface the error through the row, as QueryRowContext would.
		return s.tx.QueryRowContext(ctx, q, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

func (s *stmts) close() {
	for _, st := range s.m {
		st.Close()
	}
}
