// Package backup copies every domain database of a home into a directory
// with a manifest of SHA-256 sums, using SQLite's online backup API so the
// daemon can keep running, and restores such a copy into an empty home.
//
// Only DATA/db is copied. Credentials stay out of backups on purpose: the
// OAuth token files (DATA/oauth, refresh tokens that work without a
// password), the auth token and the secret files are never copied, so a
// backup carries no credential in plain text; after a restore the user
// connects each OAuth account again (`hestia accounts connect NAME`).
package backup

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/store"
)

// ManifestName is the manifest file inside a backup directory.
const ManifestName = "manifest.json"

// Manifest describes a backup.
type Manifest struct {
	Format    int       `json:"format"`
	CreatedAt time.Time `json:"created_at"`
	Version   string    `json:"hestia_version"`
	Files     []File    `json:"files"`
}

// File is one copied database.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Databases lists the *.db files in dir, sorted.
func Databases(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing databases in %s: %w", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".db") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// Create backs up every database in dbDir into out. out must not exist or be
// empty. The copy is assembled in a staging directory beside out and renamed
// into place only when complete, so a failed backup never looks finished.
func Create(ctx context.Context, dbDir, out, version string, now time.Time) (Manifest, error) {
	out = filepath.Clean(out)
	if entries, err := os.ReadDir(out); err == nil {
		if len(entries) > 0 {
			return Manifest{}, fmt.Errorf("backup output %s exists and is not empty; choose a new directory", out)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("checking backup output %s: %w", out, err)
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("creating %s: %w", parent, err)
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".staging-")
	if err != nil {
		return Manifest{}, fmt.Errorf("creating staging directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(staging)
		}
	}()
	dbs, err := Databases(dbDir)
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{Format: 1, CreatedAt: now.UTC(), Version: version}
	for _, src := range dbs {
		name := filepath.Base(src)
		dst := filepath.Join(staging, name)
		if err := copyDB(ctx, src, dst); err != nil {
			return Manifest{}, err
		}
		f, err := describe(dst)
		if err != nil {
			return Manifest{}, err
		}
		m.Files = append(m.Files, f)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return Manifest{}, fmt.Errorf("encoding manifest: %w", err)
	}
	if err := writeSync(filepath.Join(staging, ManifestName), data); err != nil {
		return Manifest{}, err
	}
	// An empty pre-existing out would make rename fail on some systems.
	os.Remove(out)
	if err := os.Rename(staging, out); err != nil {
		return Manifest{}, fmt.Errorf("moving backup into place: %w", err)
	}
	ok = true
	return m, nil
}

func copyDB(ctx context.Context, src, dst string) error {
	db, err := store.OpenExisting(ctx, src)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := store.BackupTo(ctx, db, dst); err != nil {
		return fmt.Errorf("backing up %s: %w", filepath.Base(src), err)
	}
	// Fold any WAL into the copy so the backup is one self-contained file.
	cp, err := store.OpenExisting(ctx, dst)
	if err != nil {
		return err
	}
	_, err = cp.ExecContext(ctx, "PRAGMA journal_mode=DELETE")
	cerr := cp.Close()
	if err != nil {
		return fmt.Errorf("finalising copy of %s: %w", filepath.Base(src), err)
	}
	if cerr != nil {
		return fmt.Errorf("closing copy of %s: %w", filepath.Base(src), cerr)
	}
	return nil
}

func describe(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("hashing %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, fmt.Errorf("hashing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return File{}, fmt.Errorf("syncing %s: %w", path, err)
	}
	return File{Name: filepath.Base(path), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

func writeSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	return f.Close()
}

// Verify reads a backup's manifest and checks every file's size and hash.
func Verify(dir string) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return Manifest{}, fmt.Errorf("reading backup manifest: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("backup manifest %s is not valid JSON: %w", filepath.Join(dir, ManifestName), err)
	}
	if m.Format != 1 {
		return Manifest{}, fmt.Errorf("backup manifest format %d is not supported", m.Format)
	}
	for _, want := range m.Files {
		if want.Name != filepath.Base(want.Name) || !strings.HasSuffix(want.Name, ".db") {
			return Manifest{}, fmt.Errorf("backup manifest names an invalid file %q", want.Name)
		}
		got, err := describe(filepath.Join(dir, want.Name))
		if err != nil {
			return Manifest{}, err
		}
		if got.SHA256 != want.SHA256 || got.Size != want.Size {
			return Manifest{}, fmt.Errorf("backup file %s does not match its manifest (sha256 %s, manifest says %s)", want.Name, got.SHA256, want.SHA256)
		}
	}
	return m, nil
}

// Restore verifies the backup in dir and copies its databases into dbDir,
// which must hold no databases yet: restoring over live data is refused so
// nothing already stored is lost.
func Restore(dir, dbDir string) (Manifest, error) {
	m, err := Verify(dir)
	if err != nil {
		return Manifest{}, err
	}
	existing, err := Databases(dbDir)
	if err != nil {
		return Manifest{}, err
	}
	if len(existing) > 0 {
		return Manifest{}, fmt.Errorf("%s already holds %d databases; restore into a new, empty home (set HESTIA_HOME)", dbDir, len(existing))
	}
	if err := os.MkdirAll(dbDir, 0o700); err != nil {
		return Manifest{}, fmt.Errorf("creating %s: %w", dbDir, err)
	}
	for _, f := range m.Files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			return Manifest{}, fmt.Errorf("reading %s: %w", f.Name, err)
		}
		if err := writeSync(filepath.Join(dbDir, f.Name), data); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}
