package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "config.toml")
	if err := Write(p, []byte("a = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	// KeepMode keeps what the user set.
	os.Chmod(p, 0o640)
	if err := Write(p, []byte("a = 2\n"), KeepMode); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode after KeepMode %v", st.Mode())
	}
	if b, _ := os.ReadFile(p); string(b) != "a = 2\n" {
		t.Fatalf("content %q", b)
	}
	// A failed write (a folder in the way) leaves the old content and no
	// temporary file.
	blocked := filepath.Join(dir, "sub")
	os.Mkdir(blocked, 0o700)
	if err := Write(blocked, []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), blocked) {
		t.Fatalf("writing over a folder: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("x"), 0o600); err == nil {
		t.Fatal("wrote into a missing folder")
	}
}
