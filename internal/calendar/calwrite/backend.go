package calwrite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hestia-dev/hestia/internal/calendar"
)

// ErrConflict means the object changed (or appeared) since it was read: the
// write did not happen.
var ErrConflict = errors.New("calendar object changed since it was read")

// ErrNotFound means no object holds the UID.
var ErrNotFound = errors.New("calendar object not found")

// Object is one stored calendar object (one UID: master plus overrides).
type Object struct {
	Href string
	ETag string
	Data []byte
}

// Backend stores calendar objects of one calendar. Writes are conditional
// so that nothing is overwritten blindly: Create fails with ErrConflict
// when the href exists, Update and Delete when the ETag no longer matches.
type Backend interface {
	Get(ctx context.Context, href string) (Object, error)
	Create(ctx context.Context, href string, data []byte) (etag string, err error)
	Update(ctx context.Context, href string, data []byte, etag string) (string, error)
	Delete(ctx context.Context, href, etag string) error
}

// Vdir is a Backend over a vdir folder; the ETag is the SHA-256 of the
// file (vdirsyncer uses the file's mtime; a content hash also catches
// same-second edits).
type Vdir struct{ Dir string }

func etagOf(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:16]) }

func (v Vdir) path(href string) (string, error) {
	if href == "" || strings.ContainsAny(href, `/\`) || strings.HasPrefix(href, ".") || !strings.HasSuffix(href, ".ics") {
		return "", fmt.Errorf("bad object name %q", href)
	}
	return filepath.Join(v.Dir, href), nil
}

// Get implements Backend.
func (v Vdir) Get(ctx context.Context, href string) (Object, error) {
	p, err := v.path(href)
	if err != nil {
		return Object{}, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Object{}, fmt.Errorf("%s: %w", href, ErrNotFound)
	}
	if err != nil {
		return Object{}, err
	}
	if len(b) > calendar.MaxFileBytes {
		return Object{}, fmt.Errorf("%s is larger than %d bytes", href, calendar.MaxFileBytes)
	}
	return Object{Href: href, ETag: etagOf(b), Data: b}, nil
}

// Create implements Backend: the file is written under a temporary name and
// linked into place, so it appears whole or not at all, and an existing
// file is never replaced.
func (v Vdir) Create(ctx context.Context, href string, data []byte) (string, error) {
	p, err := v.path(href)
	if err != nil {
		return "", err
	}
	tmp, err := v.writeTemp(data)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w", href, ErrConflict)
		}
		return "", fmt.Errorf("creating %s: %w", href, err)
	}
	return etagOf(data), nil
}

func (v Vdir) writeTemp(data []byte) (string, error) {
	f, err := os.CreateTemp(v.Dir, ".hestia-*.tmp")
	if err != nil {
		return "", fmt.Errorf("writing to calendar folder %s: %w", v.Dir, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing to calendar folder %s: %w", v.Dir, err)
	}
	return f.Name(), nil
}

// Update implements Backend (compare, then rename over the file).
func (v Vdir) Update(ctx context.Context, href string, data []byte, etag string) (string, error) {
	cur, err := v.Get(ctx, href)
	if err != nil {
		return "", err
	}
	if cur.ETag != etag {
		return "", fmt.Errorf("%s: %w", href, ErrConflict)
	}
	tmp, err := v.writeTemp(data)
	if err != nil {
		return "", err
	}
	p, _ := v.path(href)
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("replacing %s: %w", href, err)
	}
	return etagOf(data), nil
}

// Delete implements Backend.
func (v Vdir) Delete(ctx context.Context, href, etag string) error {
	cur, err := v.Get(ctx, href)
	if err != nil {
		return err
	}
	if cur.ETag != etag {
		return fmt.Errorf("%s: %w", href, ErrConflict)
	}
	p, _ := v.path(href)
	if err := os.Remove(p); err != nil {
		return fmt.Errorf("deleting %s: %w", href, err)
	}
	return nil
}
