// Package binpath finds Hestia's other executables, installed next to the
// running one.
package binpath

import (
	"fmt"
	"os"
	"path/filepath"
)

// The three executables `make build` writes side by side: the small front
// users run, the one-shot query engine it execs, and the whole program.
const (
	Front = "hestia"
	Fast  = "hestia-fast"
	Core  = "hestia-core"
)

// Sibling finds the executable name next to this one (symbolic links
// resolved, so a link to hestia in ~/bin still finds it).
func Sibling(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this executable: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	p := filepath.Join(filepath.Dir(self), name)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s is not installed next to %s (build them with `make build`): %w", name, self, err)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not an executable file", p)
	}
	return p, nil
}
