package pathpolicy

import (
	"errors"
	"path/filepath"
	"testing"
)

// Case tricks must not get past the sensitive lists: on a case-insensitive
// disk (macOS) ~/.SSH/config is ~/.ssh/config.
func TestSensitiveIgnoresCase(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	data := filepath.Join(home, ".local", "share", "hestia")
	p, err := New(Options{Home: home, Roots: []string{home}, Protected: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{".SSH/config", ".Ssh/authorized_keys", "x/.GnuPG/pubring.kbx", ".AWS/credentials", ".Local/Share/Hestia/db/policy.db", "/ETC/passwd", ".BASHRC", "ID_RSA"} {
		if _, err := p.ResolveForWrite(path); !errors.Is(err, ErrSensitive) {
			t.Errorf("%s: err = %v, want a sensitive-path refusal", path, err)
		}
	}
	if _, err := p.ResolveForWrite("notes/SSH-notes.md"); err != nil {
		t.Errorf("an ordinary name containing ssh was refused: %v", err)
	}
}
