package wiki

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// MaxImportBytes is the largest file import copies; bigger files are
// skipped and reported.
const MaxImportBytes = 100 << 20

// Import outcomes.
const (
	ImportCopied  = "copied"  // new file under sources/
	ImportSkipped = "skipped" // same bytes already there
	ImportUpdated = "updated" // the tracked origin changed; its copy replaced
	ImportRenamed = "renamed" // an unrelated file held the name: "name (2).ext"
	ImportRefused = "refused" // symlink, too big, hidden, unreadable
)

// ImportResult is what happened to one file.
type ImportResult struct {
	Origin string `json:"origin"`
	Dest   string `json:"dest,omitempty"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Import copies files (and the files of folders, recursively) into
// sources/ with these collision rules: a destination with the same SHA-256
// is skipped; a tracked origin whose bytes changed replaces its own earlier
// copy; an unrelated file of the same name gets "name (2).ext" (then 3, …).
// Symlinks are never followed, hidden files and folders are skipped.
func (w *Wiki) Import(ctx context.Context, paths []string) ([]ImportResult, error) {
	var out []ImportResult
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			out = append(out, ImportResult{Origin: p, Status: ImportRefused, Reason: err.Error()})
			continue
		}
		fi, err := os.Lstat(abs)
		if err != nil {
			out = append(out, ImportResult{Origin: abs, Status: ImportRefused, Reason: err.Error()})
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			out = append(out, ImportResult{Origin: abs, Status: ImportRefused, Reason: "symbolic links are not followed"})
			continue
		}
		if within(w.root, abs) {
			out = append(out, ImportResult{Origin: abs, Status: ImportRefused, Reason: "already inside the wiki"})
			continue
		}
		if !fi.IsDir() {
			out = append(out, w.importFile(ctx, abs, path.Base(filepath.ToSlash(abs))))
			continue
		}
		base := filepath.Dir(abs)
		err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				out = append(out, ImportResult{Origin: p, Status: ImportRefused, Reason: err.Error()})
				return nil
			}
			if p != abs && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if !d.Type().IsRegular() {
				out = append(out, ImportResult{Origin: p, Status: ImportRefused, Reason: "not a regular file (symbolic links are not followed)"})
				return nil
			}
			rel, err := filepath.Rel(base, p)
			if err != nil {
				return nil
			}
			out = append(out, w.importFile(ctx, p, filepath.ToSlash(rel)))
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	for _, r := range out {
		if r.Status == ImportCopied || r.Status == ImportUpdated || r.Status == ImportRenamed {
			w.appendLog("import "+r.Status, r.Dest, "import")
		}
	}
	return out, nil
}

func within(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator))
}

func fileSHA(p string) (string, int64, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// importFile copies one origin to sources/<rel> under the collision rules.
func (w *Wiki) importFile(ctx context.Context, origin, rel string) ImportResult {
	res := ImportResult{Origin: origin}
	refuse := func(why string) ImportResult { res.Status, res.Reason = ImportRefused, why; return res }
	fi, err := os.Lstat(origin)
	if err != nil {
		return refuse(err.Error())
	}
	if fi.Size() > MaxImportBytes {
		return refuse(fmt.Sprintf("%d MiB is over the %d MiB import limit", fi.Size()>>20, MaxImportBytes>>20))
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return refuse("bad file name")
		}
	}
	sum, _, err := fileSHA(origin)
	if err != nil {
		return refuse(err.Error())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var tracked, trackedSHA string
	err = w.db.QueryRowContext(ctx, `SELECT dest, sha256 FROM imports WHERE origin = ?`, origin).Scan(&tracked, &trackedSHA)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return refuse(err.Error())
	}
	want := SourcesDir + "/" + rel
	if tracked != "" {
		// A tracked origin keeps its snapshot: unchanged is a skip, changed
		// replaces that snapshot (if it still exists and is ours).
		if cur, _, err := fileSHA(filepath.Join(w.root, filepath.FromSlash(tracked))); err == nil {
			if cur == sum {
				res.Dest, res.Status = tracked, ImportSkipped
				return res
			}
			if err := w.copyInto(origin, tracked, false); err != nil {
				return refuse(err.Error())
			}
			res.Dest, res.Status = tracked, ImportUpdated
			return w.track(ctx, res, sum)
		}
	}
	dir, file := path.Split(want)
	ext := path.Ext(file)
	stem := strings.TrimSuffix(file, ext)
	for n := 1; n < 1000; n++ {
		dest := want
		if n > 1 {
			dest = fmt.Sprintf("%s%s (%d)%s", dir, stem, n, ext)
		}
		full := filepath.Join(w.root, filepath.FromSlash(dest))
		if cur, _, err := fileSHA(full); err == nil {
			if cur == sum {
				res.Dest, res.Status = dest, ImportSkipped
				return w.track(ctx, res, sum)
			}
			continue // an unrelated file holds this name
		} else if !errors.Is(err, fs.ErrNotExist) {
			if strings.Contains(err.Error(), "symbolic link") || errors.Is(err, fs.ErrPermission) {
				continue
			}
			continue
		}
		if err := w.copyInto(origin, dest, true); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue // created meanwhile: try the next name
			}
			return refuse(err.Error())
		}
		res.Dest, res.Status = dest, ImportCopied
		if n > 1 {
			res.Status = ImportRenamed
		}
		return w.track(ctx, res, sum)
	}
	return refuse("no free name")
}

func (w *Wiki) track(ctx context.Context, res ImportResult, sum string) ImportResult {
	_, err := w.db.ExecContext(ctx, `INSERT INTO imports (origin, dest, sha256, at) VALUES (?, ?, ?, ?)
		ON CONFLICT(origin) DO UPDATE SET dest = excluded.dest, sha256 = excluded.sha256, at = excluded.at`, res.Origin, res.Dest, sum, w.now().Unix())
	if err != nil {
		res.Reason = "copied but not tracked: " + err.Error()
	}
	return res
}

// copyInto copies origin to a wiki path: exclusive creation for a new
// name, temporary file + rename for a replacement. Folders on the way must
// not be symlinks.
func (w *Wiki) copyInto(origin, dest string, exclusive bool) error {
	full := filepath.Join(w.root, filepath.FromSlash(dest))
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return err
	}
	if err := w.checkNoLinks(dest); err != nil {
		return err
	}
	src, err := os.OpenFile(origin, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer src.Close()
	var dst *os.File
	if exclusive {
		dst, err = os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	} else {
		dst, err = os.CreateTemp(filepath.Dir(full), ".hestia-*.tmp")
	}
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.LimitReader(src, MaxImportBytes+1))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil && !exclusive {
		err = os.Rename(dst.Name(), full)
	}
	if err != nil {
		os.Remove(dst.Name())
	}
	return err
}

func (w *Wiki) checkNoLinks(rel string) error {
	cur := w.root
	segs := strings.Split(rel, "/")
	for _, seg := range segs[:len(segs)-1] {
		cur = filepath.Join(cur, seg)
		fi, err := os.Lstat(cur)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder (symbolic links are not followed)", seg)
		}
	}
	return nil
}
