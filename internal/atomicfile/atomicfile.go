// Package atomicfile writes a file so that a reader or a crash never sees
// it half-written: the bytes go to a temporary file in the same folder,
// are synced, and the temporary file is renamed over the target.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeepMode, as the mode, keeps an existing file's permission bits (and
// uses 0o644 for a new file): for files the user owns and reads.
const KeepMode fs.FileMode = 1 << 31

// Write replaces path with data, created with mode (or KeepMode). The
// folder must exist. On failure the target is unchanged and the temporary
// file is removed.
func Write(path string, data []byte, mode fs.FileMode) (err error) {
	if mode == KeepMode {
		mode = 0o644
		if st, serr := os.Stat(path); serr == nil {
			mode = st.Mode().Perm()
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode.Perm())
	}
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
