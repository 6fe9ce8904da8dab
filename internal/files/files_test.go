package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

func setup(t *testing.T) (map[string]tools.Tool, string) {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "d", "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(home, "d", "a.txt"), []byte("one\ntwo\nthree\n"), 0o640)
	os.WriteFile(filepath.Join(home, "d", ".env"), []byte("SECRET=1"), 0o600)
	os.WriteFile(filepath.Join(home, "d", "bin"), []byte{0, 1, 2, 3}, 0o600)
	p, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]tools.Tool{}
	for _, tl := range Tools(p) {
		m[tl.Spec().Name] = tl
	}
	return m, home
}

func run(t *testing.T, tl tools.Tool, args string) tools.Result {
	t.Helper()
	_, canon, err := tools.DecodeArgs(tl.Spec().Name, args, tl.Spec().Schema)
	if err != nil {
		t.Fatalf("args %s: %v", args, err)
	}
	res, err := tl.Run(context.Background(), tools.Call{Args: canon})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func TestReadAndList(t *testing.T) {
	t.Parallel()
	m, _ := setup(t)
	if r := run(t, m["read_file"], `{"path":"d/a.txt","offset":2,"limit":1}`); r.IsError || !strings.Contains(r.Content, "     2\ttwo") || strings.Contains(r.Content, "three\n     ") || !strings.Contains(r.Content, "continue with offset 3") {
		t.Errorf("read window: %+v", r)
	}
	if r := run(t, m["read_file"], `{"path":"d/bin"}`); !r.IsError || !strings.Contains(r.Content, "binary") {
		t.Errorf("binary: %+v", r)
	}
	if r := run(t, m["read_file"], `{"path":"d"}`); !r.IsError || !strings.Contains(r.Content, "directory") {
		t.Errorf("dir: %+v", r)
	}
	if r := run(t, m["read_file"], `{"path":"d/missing.txt"}`); !r.IsError || !strings.Contains(r.Content, "does not exist") {
		t.Errorf("missing: %+v", r)
	}
	r := run(t, m["list_dir"], `{"path":"d"}`)
	if r.IsError || !strings.HasPrefix(strings.Split(r.Content, "\n")[1], "sub/") || !strings.Contains(r.Content, "a.txt\t14 bytes") {
		t.Errorf("list: %q", r.Content)
	}
	if strings.Contains(r.Content, ".env") || !strings.Contains(r.Content, "1 sensitive entries hidden") {
		t.Errorf("sensitive entry listed: %q", r.Content)
	}
}

func TestWriteAndEdit(t *testing.T) {
	t.Parallel()
	m, home := setup(t)
	if r := run(t, m["write_file"], `{"path":"d/new/n.md","content":"hello hello"}`); r.IsError {
		t.Fatalf("write: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "d", "new", "n.md")); string(b) != "hello hello" {
		t.Fatalf("content %q", b)
	}
	if r := run(t, m["edit_file"], `{"path":"d/new/n.md","old_text":"hello","new_text":"bye"}`); !r.IsError || !strings.Contains(r.Content, "occurs 2 times") {
		t.Errorf("ambiguous edit: %+v", r)
	}
	if r := run(t, m["edit_file"], `{"path":"d/new/n.md","old_text":"hello","new_text":"bye","replace_all":true}`); r.IsError {
		t.Errorf("replace_all: %+v", r)
	}
	if r := run(t, m["edit_file"], `{"path":"d/new/n.md","old_text":"zzz","new_text":"y"}`); !r.IsError || !strings.Contains(r.Content, "not found") {
		t.Errorf("missing old_text: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(home, "d", "new", "n.md")); string(b) != "bye bye" {
		t.Errorf("after edits %q", b)
	}
	// Permissions of an existing file survive a rewrite.
	run(t, m["write_file"], `{"path":"d/a.txt","content":"x"}`)
	if st, _ := os.Stat(filepath.Join(home, "d", "a.txt")); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if r := run(t, m["write_file"], `{"path":"d/.env","content":"x"}`); !r.IsError || !strings.Contains(r.Content, "refused") {
		t.Errorf("sensitive write: %+v", r)
	}
	pv := m["write_file"].(tools.Previewer).Preview(context.Background(), json.RawMessage(`{"path":"d/a.txt","content":"abc"}`))
	if !strings.Contains(pv, "write 3 bytes") || !strings.Contains(pv, "replaces 1 bytes") {
		t.Errorf("preview %q", pv)
	}
}
