package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWikiCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "Heat pump.md"), []byte("---\ntitle: Heat pump\n---\nThe installer said the compressor warranty runs ten years. See [[Nowhere]].\n"), 0o644)
	os.WriteFile(filepath.Join(src, "blob.bin"), []byte{0, 1, 2}, 0o644)

	r := run(t, home, nil, "wiki", "import", src)
	if r.code != 0 || !strings.Contains(r.stdout, "copied") || !strings.Contains(r.stdout, "sources/") {
		t.Fatalf("import: %+v", r)
	}
	r = run(t, home, nil, "wiki", "import", "--json", src)
	var ir struct{ Results []struct{ Status string } }
	if json.Unmarshal([]byte(r.stdout), &ir); len(ir.Results) != 2 || ir.Results[0].Status != "skipped" {
		t.Fatalf("re-import: %s", r.stdout)
	}
	r = run(t, home, nil, "wiki", "search", "compressor", "--json")
	var sr struct {
		Hits []struct {
			Path      string
			Untrusted bool
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &sr); err != nil || len(sr.Hits) != 1 || !sr.Hits[0].Untrusted {
		t.Fatalf("search: %+v %v", r, err)
	}
	r = run(t, home, nil, "wiki", "read", "Heat pump")
	if r.code != 0 || !strings.Contains(r.stdout, "warranty runs ten years") {
		t.Fatalf("read: %+v", r)
	}
	r = run(t, home, nil, "wiki", "lint", "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"broken_link"`) {
		t.Fatalf("lint: %+v", r)
	}
	r = run(t, home, nil, "wiki", "reindex")
	if r.code != 0 || !strings.Contains(r.stdout, "indexed") {
		t.Fatalf("reindex: %+v", r)
	}
	r = run(t, home, nil, "wiki", "links", "Heat pump")
	if r.code != 0 || !strings.Contains(r.stdout, "(broken)") {
		t.Fatalf("links: %+v", r)
	}
	for _, bad := range [][]string{{"wiki"}, {"wiki", "frob"}, {"wiki", "search"}, {"wiki", "read", "no such page"}, {"wiki", "import"}} {
		if r := run(t, home, nil, bad...); r.code == 0 || r.stderr == "" {
			t.Errorf("%v: %+v", bad, r)
		}
	}
}

// A search asks the running daemon (which has the page vectors loaded);
// without one the CLI searches the index itself, words only, and says so.
func TestWikiSearchAsksTheRunningDaemon(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "Heat pump.md"), []byte("---\ntitle: Heat pump\n---\nThe installer said the compressor warranty runs ten years.\n"), 0o644)
	type answer struct {
		Hits       []struct{ Title string }
		VectorNote string `json:"vector_note"`
	}
	search := func(home string, env map[string]string) (answer, result) {
		r := run(t, home, env, "wiki", "search", "compressor", "--json")
		var a answer
		if r.code == 0 {
			if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
				t.Fatalf("search output: %v\n%s", err, r.stdout)
			}
		}
		return a, r
	}

	alone := t.TempDir()
	if r := run(t, alone, nil, "wiki", "import", src); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	a, r := search(alone, nil)
	if r.code != 0 || len(a.Hits) != 1 || a.Hits[0].Title != "Heat pump" || !strings.Contains(a.VectorNote, "daemon") {
		t.Errorf("without a daemon: %+v %+v", a, r)
	}

	home, env, _ := daemonEnvWith(t, false)
	if r := run(t, home, env, "wiki", "import", src); r.code != 0 {
		t.Fatalf("import: %+v", r)
	}
	a, r = search(home, env)
	if r.code != 0 || len(a.Hits) != 1 || a.Hits[0].Title != "Heat pump" || strings.Contains(a.VectorNote, "daemon") {
		t.Errorf("with the daemon: %+v %+v", a, r)
	}
}
