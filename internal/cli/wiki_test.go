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
