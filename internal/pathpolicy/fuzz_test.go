package pathpolicy

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzResolve: whatever path the model sends, an accepted result lies inside
// the root and is not sensitive.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"docs/a.txt", "../x", "~/.ssh/id_ed25519", "docs/../../etc", "/proc/1", "~", "docs/.env.local", "a\x00b"} {
		f.Add(s)
	}
	p, _, _ := setup(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, res := range []func(string) (string, error){p.Resolve, p.ResolveForWrite} {
			got, err := res(s)
			if err != nil {
				continue
			}
			if !strings.HasPrefix(got, p.roots[0]) || p.sensitive(got) != "" || filepath.Clean(got) != got {
				t.Fatalf("%q resolved to %q", s, got)
			}
		}
	})
}
