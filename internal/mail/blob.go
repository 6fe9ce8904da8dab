package mail

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hestia-dev/hestia/internal/lazyre"
)

// blobStore keeps attachment bytes once per SHA-256, so the same file sent
// in many messages (or under many names) is stored once.
type blobStore struct{ dir string }

var hexSHA = lazyre.New(`^[0-9a-f]{64}$`)

func (b *blobStore) path(sum string) (string, error) {
	if !hexSHA.MatchString(sum) {
		return "", fmt.Errorf("blob id %q is not a SHA-256 hex digest", sum)
	}
	return filepath.Join(b.dir, sum[:2], sum), nil
}

// put writes data under its hash unless present. Written via a temp file
// and rename so a crash never leaves a truncated blob under a valid name.
func (b *blobStore) put(sum string, data []byte) error {
	p, err := b.path(sum)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("creating blob directory: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing blob: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("writing blob: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing blob: %w", err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("storing blob: %w", err)
	}
	return nil
}

// ErrBlobMissing is returned when an attachment's bytes were not stored
// (too large, or the blob directory was cleared).
var ErrBlobMissing = errors.New("attachment bytes are not in the blob store")

func (b *blobStore) get(sum string) ([]byte, error) {
	p, err := b.path(sum)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrBlobMissing
	}
	return data, err
}
