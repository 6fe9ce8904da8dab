package mail

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/ingest"
	"github.com/hestia-dev/hestia/internal/mail/parse"
)

// ImportOptions configure Import and Reconcile.
type ImportOptions struct {
	Account string // default "local"
	// Progress, when set, is called after every committed batch.
	Progress func(Progress)
	// BatchSize is the number of messages committed per transaction (default 500).
	BatchSize int
	// Dirs, when set, limits the scan to files directly inside these
	// directories (the watcher's dirty set) instead of walking root.
	Dirs []string
	// Full lists and checks every file (mtime and size). Otherwise a
	// Maildir cur/ or new/ directory whose modification time is unchanged
	// since the last successful run is skipped without listing it, and in
	// a listed one only names not mirrored yet are stat-ed and read: as in
	// notmuch, a Maildir file's name is its identity.
	Full bool
}

// Progress reports an import's advance.
type Progress struct {
	Files   int `json:"files"`   // message files found (an mbox counts once)
	Done    int `json:"done"`    // files processed
	Skipped int `json:"skipped"` // unchanged since the last run
	Added   int `json:"added"`   // new logical messages
	Updated int `json:"updated"` // known messages seen at a new or changed path
	Failed  int `json:"failed"`
	Removed int `json:"removed"` // paths gone since the last run (reconcile)
	Deleted int `json:"deleted"` // messages soft-deleted because no path remains
}

type fileKind int

const (
	kindMessage fileKind = iota // one message per file (Maildir, .eml)
	kindEmlx
	kindMbox
)

type sourceFile struct {
	path    string
	mailbox string
	kind    fileKind
	mtime   int64
	size    int64
	flags   parse.Flags
	partial bool
	// unstat marks a Maildir file listed without its mtime and size: in
	// Maildir a file name is the message's identity (a change of flags
	// renames it), so a known name needs no stat; new ones get one.
	unstat bool
}

// Import mirrors a Maildir tree, an mbox file, an Apple Mail tree of .emlx
// files, or any mix below root. Files are processed newest first so recent
// mail is searchable before old history finishes. Maildir files already
// mirrored under the same name, and other files with the same mtime and
// size, are skipped (see ImportOptions.Full), and identities are unique, so
// a rerun after a crash continues without duplicates.
func (s *Store) Import(ctx context.Context, root string, opts ImportOptions) (Progress, error) {
	return s.sync(ctx, root, opts, false)
}

// Reconcile is Import plus deletion: paths under root that no longer exist
// are removed, and messages left without any path are soft-deleted. It is
// the authority the watcher's fast path converges to.
func (s *Store) Reconcile(ctx context.Context, root string, opts ImportOptions) (Progress, error) {
	return s.sync(ctx, root, opts, true)
}

func (s *Store) sync(ctx context.Context, root string, opts ImportOptions, removeMissing bool) (Progress, error) {
	if opts.Account == "" {
		opts.Account = "local"
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 500
	}
	r, err := s.planImport(ctx, root, opts, removeMissing)
	if err != nil {
		return r.prog, err
	}
	if opts.Progress != nil {
		opts.Progress(r.prog)
	}
	if err := s.writeImport(ctx, r); err != nil {
		return r.prog, err
	}
	if err := ctx.Err(); err != nil {
		return r.prog, err
	}
	if err := s.finishImport(ctx, r); err != nil {
		return r.prog, err
	}
	if opts.Progress != nil {
		opts.Progress(r.prog)
	}
	return r.prog, nil
}

// importRun is one Import or Reconcile: what the scan found and what the
// run has done so far.
type importRun struct {
	opts          ImportOptions
	removeMissing bool
	root          string // absolute
	rootIsDir     bool
	sc            *dirScan
	known         map[string]knownPath // mirrored paths below root
	dirFiles      map[string]int       // message files per directory
	todo          []sourceFile         // files to read, newest first

	// mu guards prog and seen, written by the parsers and the writer.
	mu   sync.Mutex
	prog Progress
	// seen holds the paths met, for a reconcile only (to remove the others).
	seen map[string]bool
}

// planImport lists the files below root and keeps those not mirrored as
// they are (see ImportOptions.Full), newest first. The run it returns is
// never nil.
func (s *Store) planImport(ctx context.Context, root string, opts ImportOptions, removeMissing bool) (*importRun, error) {
	r := &importRun{opts: opts, removeMissing: removeMissing, sc: &dirScan{}}
	var err error
	if r.root, err = filepath.Abs(root); err != nil {
		return r, fmt.Errorf("resolving %s: %w", root, err)
	}
	info, err := os.Stat(r.root)
	if err != nil {
		return r, fmt.Errorf("import source: %w", err)
	}
	r.rootIsDir = info.IsDir()
	base := r.root
	if !r.rootIsDir {
		base = filepath.Dir(r.root)
	}
	var files []sourceFile
	if len(opts.Dirs) > 0 {
		files, err = scanDirs(base, opts.Dirs, !opts.Full)
	} else {
		if r.rootIsDir && !opts.Full {
			if r.sc.recorded, err = s.scanDirs(ctx, opts.Account, r.root); err != nil {
				return r, err
			}
		}
		files, err = scan(ctx, r.root, base, r.sc, !opts.Full)
	}
	if err != nil {
		return r, err
	}
	if err := s.loadKnown(ctx, r, files); err != nil {
		return r, err
	}
	r.prog.Files += len(files)
	r.filter(files)
	return r, nil
}

// loadKnown loads the mirrored paths the scanned files are compared with.
func (s *Store) loadKnown(ctx context.Context, r *importRun, files []sourceFile) error {
	var err error
	switch {
	case len(r.sc.skipped) > 0:
		// Only the directories that were listed (and recorded ones that
		// are gone) need their mirrored paths: skipped ones are unchanged.
		r.known, err = s.knownPaths(ctx, r.opts.Account, r.sc.changedDirs(files), true)
		for _, d := range r.sc.skipped {
			r.prog.Files += r.sc.recorded[d].files
			r.prog.Skipped += r.sc.recorded[d].files
			r.prog.Done += r.sc.recorded[d].files
		}
	case len(r.opts.Dirs) > 0:
		r.known, err = s.knownPaths(ctx, r.opts.Account, r.opts.Dirs, true)
	default:
		r.known, err = s.knownPaths(ctx, r.opts.Account, []string{r.root}, false)
	}
	return err
}

// filter keeps in r.todo the files to read, newest first, and counts the
// others as skipped. Only a reconcile records the paths seen. The listing
// is filtered in place and the per-folder counts kept apart: at 100k
// files each copy is ~10 MB of live heap, which the import's soft heap
// limit would pay for in garbage collection.
func (r *importRun) filter(files []sourceFile) {
	if r.removeMissing {
		r.seen = map[string]bool{}
	}
	r.dirFiles = map[string]int{}
	todo := files[:0]
	for _, f := range files {
		if f.kind == kindMbox {
			r.dirFiles[filepath.Dir(f.path)]++
			todo = append(todo, f) // offsets are checked per message
			continue
		}
		k, ok := r.known[f.path]
		if f.unstat && !ok {
			info, err := os.Lstat(f.path)
			if err != nil || info.Size() == 0 {
				r.prog.Files-- // gone since the listing, or still being written
				continue
			}
			f.mtime, f.size = info.ModTime().Unix(), info.Size()
		}
		r.dirFiles[filepath.Dir(f.path)]++
		if r.seen != nil {
			r.seen[f.path] = true
		}
		if ok && (f.unstat || k.mtime == f.mtime && k.size == f.size) {
			r.prog.Skipped++
			r.prog.Done++
			continue
		}
		todo = append(todo, f)
	}
	sort.SliceStable(todo, func(i, j int) bool { return todo[i].mtime > todo[j].mtime })
	r.todo = todo
}

// writeImport parses the files to read on every core and commits their
// messages from one writer (ingest.Pipeline), reporting progress after
// every committed batch.
func (s *Store) writeImport(ctx context.Context, r *importRun) error {
	limits := s.importLimits
	limits.BatchSize = r.opts.BatchSize
	return ingest.Pipeline[sourceFile, *prepared]{
		Parse: func(ctx context.Context, f sourceFile, emit func(*prepared, int64) error) error {
			n, err := s.readSource(ctx, f, r, emit)
			r.mu.Lock()
			r.prog.Failed += n
			r.prog.Done++
			r.mu.Unlock()
			return err
		},
		Skip: func(f sourceFile, err error) { s.log.Warn("mailImportFile", "path", f.path, "err", err) },
		Commit: func(ctx context.Context, batch []*prepared) error {
			res, err := s.applyBatch(ctx, batch)
			if err != nil {
				return err
			}
			r.mu.Lock()
			r.prog.Added += res.Added
			r.prog.Updated += res.Updated
			p := r.prog
			r.mu.Unlock()
			if r.opts.Progress != nil {
				r.opts.Progress(p)
			}
			return nil
		},
		Limits: limits,
	}.Run(ctx, r.todo)
}

// finishImport, after every batch is committed: a reconcile removes the
// paths not seen, a full walk records its directories, and the indexes are
// tidied and the token counts brought up to date.
func (s *Store) finishImport(ctx context.Context, r *importRun) error {
	if r.removeMissing {
		var gone []string
		for p := range r.known {
			if !r.seen[p] { // the parsers are done: no lock needed
				gone = append(gone, p)
			}
		}
		sort.Strings(gone)
		n, err := s.RemovePaths(ctx, gone)
		r.prog.Removed, r.prog.Deleted = len(gone), n
		if err != nil {
			return err
		}
	}
	if len(r.opts.Dirs) == 0 && r.rootIsDir {
		if err := s.recordScan(ctx, r.opts.Account, r.root, r.sc, r.dirFiles); err != nil {
			return err
		}
	}
	prog := r.prog
	if prog.Added+prog.Updated+prog.Deleted > 0 {
		if err := s.compactIndexes(ctx, prog.Added); err != nil {
			s.log.Warn("mailCompactIndexes", "err", err)
		}
	}
	// Also after a run that changed nothing: the index may have changed
	// under another writer, or the counts never been computed (a file
	// from an earlier version). Such a run looks at the stored row's small
	// columns only (reading and checking its 200 KB was a fifth of an
	// unchanged rescan's page faults); a damaged row is still replaced by
	// the next import that changes something, the daemon's refresh or
	// --full.
	refresh, force := r.opts.Full || prog.Added+prog.Updated+prog.Deleted+prog.Removed > 0, r.opts.Full
	if !refresh {
		current, err := s.lengthsLookCurrent(ctx)
		// Found stale: rewritten without reading the row again; a failed
		// look: the refresh reports what failed.
		refresh, force = !current || err != nil, !current && err == nil
	}
	if refresh {
		if _, err := s.refreshRankLengths(ctx, force); err != nil {
			s.log.Warn("mailRankLengths", "err", err)
		}
	}
	return nil
}

// compactIndexes tidies the file after an import that changed it. After a
// bulk import (added is at least a quarter of all messages) the word index
// is merged into one segment ('optimize'): automerge leaves several
// segments per level, each repeating its terms, about 6% of that table.
// The header trigram index is merged too: it is small (0.6 s at 100,000
// messages) and a fragmented one made --subject/--from searches ~1.5×
// slower. (The body trigram index gains 1% for 4 s, so it is left as is.)
// The B-tree indexes on paths, identities, Message-IDs, dates and
// references were filled in no particular key order, which leaves their
// pages about half empty; REINDEX rebuilds them from sorted keys (14 MB
// of a 276 MB file at 100,000 messages, for 2% of the import's time).
// Both rewrite what they touch, so smaller imports skip them. Then the
// free pages left behind (about a tenth of the file after a first import)
// go back to the file system rather than wait for later writes.
func (s *Store) compactIndexes(ctx context.Context, added int) error {
	var maxID int64
	if err := s.db.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM messages`).Scan(&maxID); err != nil {
		return fmt.Errorf("counting messages: %w", err)
	}
	if added > 0 && int64(added)*4 >= maxID {
		err := s.db.Tx(ctx, func(tx *sql.Tx) error {
			for _, t := range []string{"messages_fts", "messages_hdr_tri"} {
				if _, err := tx.ExecContext(ctx, `INSERT INTO `+t+`(`+t+`) VALUES ('optimize')`); err != nil {
					return fmt.Errorf("merging %s: %w", t, err)
				}
			}
			for _, t := range []string{"message_paths", "messages", "message_refs"} {
				if _, err := tx.ExecContext(ctx, `REINDEX `+t); err != nil {
					return fmt.Errorf("rebuilding the indexes of %s: %w", t, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	_, err := s.db.ReleaseFreePages(ctx)
	return err
}

// dirScan carries the Maildir directory state of one scan: the recorded
// mtimes, the directories listed (with the mtime seen before listing) and
// those skipped as unchanged.
type dirScan struct {
	recorded map[string]scanDir
	listed   map[string]int64
	skipped  []string
}

type scanDir struct {
	mtime int64
	files int
}

// visit decides, for a directory met during the walk, whether to list it.
// Only Maildir leaf directories are candidates; the mtime is read before
// listing, so a delivery racing with the scan changes it again and the
// next run looks.
func (d *dirScan) visit(p string, de fs.DirEntry) (skip bool) {
	name := de.Name()
	if name != "cur" && name != "new" {
		return false
	}
	info, err := de.Info()
	if err != nil {
		return false
	}
	mt := info.ModTime().UnixNano()
	if d.listed == nil {
		d.listed = map[string]int64{}
	}
	if r, ok := d.recorded[p]; ok && r.mtime == mt {
		d.skipped = append(d.skipped, p)
		return true
	}
	d.listed[p] = mt
	return false
}

// changedDirs are the directories whose mirrored paths must be loaded:
// those holding scanned files and recorded ones that were not met (gone).
func (d *dirScan) changedDirs(files []sourceFile) []string {
	seen := map[string]bool{}
	var out []string
	add := func(dir string) {
		if !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
	}
	for dir := range d.listed {
		add(dir)
	}
	for _, f := range files {
		add(filepath.Dir(f.path))
	}
	skipped := map[string]bool{}
	for _, s := range d.skipped {
		skipped[s] = true
	}
	for dir := range d.recorded {
		if !skipped[dir] {
			add(dir)
		}
	}
	sort.Strings(out)
	return out
}

// scanDirs loads the recorded Maildir directories of account below root.
func (s *Store) scanDirs(ctx context.Context, account, root string) (map[string]scanDir, error) {
	lo, hi := prefixRange(root + string(filepath.Separator))
	rows, err := s.db.QueryContext(ctx, `SELECT path, mtime, files FROM scan_dirs WHERE account = ? AND path >= ? AND path < ?`, account, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("loading scanned directories: %w", err)
	}
	defer rows.Close()
	out := map[string]scanDir{}
	for rows.Next() {
		var p string
		var d scanDir
		if err := rows.Scan(&p, &d.mtime, &d.files); err != nil {
			return nil, err
		}
		out[p] = d
	}
	return out, rows.Err()
}

// recordScan stores the mtimes of the directories listed by a successful
// run and forgets recorded ones that are gone.
func (s *Store) recordScan(ctx context.Context, account, root string, sc *dirScan, count map[string]int) error {
	skipped := map[string]bool{}
	for _, p := range sc.skipped {
		skipped[p] = true
	}
	// A directory changed within the last seconds may change again within
	// the filesystem's timestamp granularity without its mtime moving:
	// it is listed again next time rather than trusted.
	settled := s.now().Add(-2 * time.Second).UnixNano()
	var gone []string
	for p := range sc.recorded {
		if _, ok := sc.listed[p]; !ok && !skipped[p] {
			gone = append(gone, p)
		}
	}
	if len(sc.listed) == 0 && len(gone) == 0 {
		return nil // an unchanged tree: no write transaction (nor its lock)
	}
	return s.db.Tx(ctx, func(tx *sql.Tx) error {
		for p, mt := range sc.listed {
			if mt > settled {
				if _, err := tx.ExecContext(ctx, `DELETE FROM scan_dirs WHERE account = ? AND path = ?`, account, p); err != nil {
					return fmt.Errorf("forgetting scanned directory: %w", err)
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO scan_dirs(account, path, mtime, files) VALUES (?, ?, ?, ?)
				ON CONFLICT(account, path) DO UPDATE SET mtime = excluded.mtime, files = excluded.files`, account, p, mt, count[p]); err != nil {
				return fmt.Errorf("recording scanned directory: %w", err)
			}
		}
		for _, p := range gone {
			if _, err := tx.ExecContext(ctx, `DELETE FROM scan_dirs WHERE account = ? AND path = ?`, account, p); err != nil {
				return fmt.Errorf("forgetting scanned directory: %w", err)
			}
		}
		return nil
	})
}

// prefixRange returns [lo, hi) bounds of the strings starting with
// prefix, so a prefix query can use an index instead of substr().
func prefixRange(prefix string) (string, string) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return prefix, string(b[:i+1])
		}
	}
	return prefix, "\xff\xff\xff\xff"
}

// maxBatchBytes bounds the message text one import transaction carries;
// queueBytes bounds the text parsed ahead of the writer (see
// ingest.Limits; it must be at least twice maxBatchBytes).
const (
	maxBatchBytes = 16 << 20
	queueBytes    = 64 << 20
)

type knownPath struct{ mtime, size int64 }

// knownPathsSQL lists the mirrored paths of an account in two ranges
// (a directory's files, an mbox file's messages). The ranges must drive the
// plan: joined the other way round SQLite walks every path of the account
// for each directory (4×100k rows for 1,000 new messages in four folders);
// "+mailbox_id" keeps it off the mailbox index.
const knownPathsSQL = `SELECT p.path, p.mtime, p.size FROM message_paths p
	WHERE ((p.path >= ? AND p.path < ?) OR (p.path >= ? AND p.path < ?))
	AND +p.mailbox_id IN (SELECT b.id FROM mailboxes b JOIN accounts a ON a.id = b.account_id WHERE a.name = ?)`

// knownPaths loads the mirrored paths of account below each prefix (a root,
// or with direct set only the files directly inside each directory).
func (s *Store) knownPaths(ctx context.Context, account string, prefixes []string, direct bool) (map[string]knownPath, error) {
	out := map[string]knownPath{}
	for _, pre := range prefixes {
		// Range conditions on the primary key: "pre/…" files, "pre#offset" mbox messages.
		dlo, dhi := prefixRange(pre + string(filepath.Separator))
		mlo, mhi := prefixRange(pre + "#")
		rows, err := s.db.QueryContext(ctx, knownPathsSQL, dlo, dhi, mlo, mhi, account)
		if err != nil {
			return nil, fmt.Errorf("loading mirrored paths: %w", err)
		}
		for rows.Next() {
			var p string
			var k knownPath
			if err := rows.Scan(&p, &k.mtime, &k.size); err != nil {
				rows.Close()
				return nil, err
			}
			if direct && filepath.Dir(strings.SplitN(p, "#", 2)[0]) != pre {
				continue // only direct children of a dirty directory
			}
			out[p] = k
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readSource reads one file into prepared messages handed to emit; for
// mbox it yields every message not already mirrored at that offset. It
// returns the number of messages that failed; an error from emit (the
// import stopped) ends it.
func (s *Store) readSource(ctx context.Context, f sourceFile, r *importRun, emit func(*prepared, int64) error) (int, error) {
	account := r.opts.Account
	send := func(it Item) (failed int, err error) {
		p, err := s.prepare(it)
		if err != nil {
			s.log.Debug("mailParse", "path", it.Path, "err", err)
			return 1, nil
		}
		return 0, emit(p, int64(len(p.msg.Text))+1)
	}
	fallback := time.Unix(f.mtime, 0)
	switch f.kind {
	case kindMbox:
		fh, err := os.Open(f.path)
		if err != nil {
			return 1, err
		}
		defer fh.Close()
		mr := parse.NewMboxReader(fh, 0)
		failed := 0
		for {
			m, err := mr.Next()
			if errors.Is(err, io.EOF) {
				return failed, nil
			}
			if err != nil {
				return failed + 1, err
			}
			key := fmt.Sprintf("%s#%d", f.path, m.Offset)
			if r.seen != nil {
				r.mu.Lock()
				r.seen[key] = true
				r.mu.Unlock()
			}
			if k, ok := r.known[key]; ok && k.mtime == f.mtime && k.size == f.size {
				continue
			}
			n, err := send(Item{Account: account, Mailbox: f.mailbox, Path: key, Mtime: f.mtime, Size: f.size, Raw: m.Raw, FallbackDate: fallback})
			failed += n
			if err != nil {
				return failed, err
			}
		}
	case kindEmlx:
		data, err := os.ReadFile(f.path)
		if err != nil {
			return 1, err
		}
		e, err := parse.ParseEmlx(data, f.partial)
		if err != nil {
			return 1, err
		}
		return send(Item{Account: account, Mailbox: f.mailbox, Path: f.path, Mtime: f.mtime, Size: f.size, Raw: e.Message, Flags: e.Flags, Partial: e.Partial, FallbackDate: fallback})
	default:
		data, err := os.ReadFile(f.path)
		if err != nil {
			return 1, err
		}
		return send(Item{Account: account, Mailbox: f.mailbox, Path: f.path, Mtime: f.mtime, Size: f.size, Raw: data, Flags: f.flags, FallbackDate: fallback})
	}
}

// skipNames are files mail programs keep beside messages.
var skipNames = map[string]bool{
	"maildirfolder": true, "subscriptions": true, ".ds_store": true, "info.plist": true,
	"dovecot-uidlist": true, "dovecot-keywords": true, "dovecot.index": true, "dovecot.index.log": true,
	"dovecot.index.cache": true, "dovecot.list.index": true, "dovecot.list.index.log": true, "dovecot-uidvalidity": true,
	"courierimapuiddb": true, "courierimapkeywords": true, ".mh_sequences": true, "readme": true, "copying": true,
}

func scan(ctx context.Context, root, base string, sc *dirScan, lazy bool) ([]sourceFile, error) {
	var out []sourceFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // unreadable subtree: reconcile will retry later
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "tmp" || name == ".notmuch" || name == ".git" || name == "Attachments") {
				return filepath.SkipDir
			}
			if p != root && sc.visit(p, d) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if f, ok := classify(base, p, d, lazy); ok {
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", root, err)
	}
	return out, nil
}

func scanDirs(base string, dirs []string, lazy bool) ([]sourceFile, error) {
	var out []sourceFile
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("scanning %s: %w", dir, err)
		}
		for _, d := range entries {
			if d.Type().IsRegular() {
				if f, ok := classify(base, filepath.Join(dir, d.Name()), d, lazy); ok {
					out = append(out, f)
				}
			}
		}
	}
	return out, nil
}

// classify decides whether a file holds mail and which mailbox it belongs
// to. With lazy set, a Maildir message file is not stat-ed (see unstat).
func classify(base, p string, d fs.DirEntry, lazy bool) (sourceFile, bool) {
	name := d.Name()
	lower := strings.ToLower(name)
	if skipNames[lower] || strings.HasPrefix(lower, "dovecot") || strings.HasSuffix(lower, ".plist") || strings.HasSuffix(lower, ".json") || strings.HasSuffix(lower, ".summary") || strings.HasSuffix(lower, ".msf") {
		return sourceFile{}, false
	}
	dir := filepath.Dir(p)
	maildir := !strings.HasSuffix(lower, ".emlx") && (filepath.Base(dir) == "cur" || filepath.Base(dir) == "new")
	if lazy && maildir {
		return sourceFile{path: p, kind: kindMessage, flags: parse.MaildirFlags(name), mailbox: maildirMailbox(base, filepath.Dir(dir)), unstat: true}, true
	}
	info, err := d.Info()
	if err != nil || info.Size() == 0 {
		return sourceFile{}, false
	}
	f := sourceFile{path: p, mtime: info.ModTime().Unix(), size: info.Size()}
	switch {
	case strings.HasSuffix(lower, ".emlx"):
		f.kind = kindEmlx
		f.partial = strings.HasSuffix(lower, ".partial.emlx")
		f.mailbox = emlxMailbox(base, dir)
		return f, true
	case maildir:
		f.kind = kindMessage
		f.flags = parse.MaildirFlags(name)
		f.mailbox = maildirMailbox(base, filepath.Dir(dir))
		return f, true
	}
	head := make([]byte, 512)
	fh, err := os.Open(p)
	if err != nil {
		return sourceFile{}, false
	}
	n, _ := io.ReadFull(fh, head)
	fh.Close()
	head = head[:n]
	switch {
	case parse.LooksLikeMbox(head):
		f.kind = kindMbox
		f.mailbox = strings.TrimSuffix(relMailbox(base, p), filepath.Ext(p))
	case parse.LooksLikeMessage(head) && !bytes.Contains(head, []byte{0}):
		f.kind = kindMessage
		f.mailbox = relMailbox(base, dir)
	default:
		return sourceFile{}, false
	}
	if f.mailbox == "" || f.mailbox == "." {
		f.mailbox = "INBOX"
	}
	return f, true
}

func relMailbox(base, dir string) string {
	rel, err := filepath.Rel(base, dir)
	if err != nil || rel == "." {
		return "INBOX"
	}
	return filepath.ToSlash(rel)
}

// maildirMailbox names a Maildir folder: the root is INBOX; Maildir++
// folders (".Sent", ".Lists.go") lose the leading dot and use '/'.
func maildirMailbox(base, folder string) string {
	rel := relMailbox(base, folder)
	if rel == "INBOX" {
		return rel
	}
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ".") && len(p) > 1 {
			parts[i] = strings.ReplaceAll(p[1:], ".", "/")
		}
	}
	return strings.Join(parts, "/")
}

// emlxMailbox names the Apple Mail mailbox holding an .emlx file: the
// nearest "X.mbox" ancestor, else the directory above Messages/.
func emlxMailbox(base, dir string) string {
	for d := dir; len(d) >= len(base) && d != filepath.Dir(d); d = filepath.Dir(d) {
		if b := filepath.Base(d); strings.HasSuffix(b, ".mbox") {
			return strings.TrimSuffix(b, ".mbox")
		}
	}
	if filepath.Base(dir) == "Messages" {
		return relMailbox(base, filepath.Dir(dir))
	}
	return relMailbox(base, dir)
}
