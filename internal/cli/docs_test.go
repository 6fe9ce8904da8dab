package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDocsCommands(t *testing.T) {
	t.Parallel()
	home, files, outside := t.TempDir(), t.TempDir(), t.TempDir()
	pdf, err := os.ReadFile(filepath.Join("..", "docs", "testdata", "contract.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(files, "contract.pdf")
	os.WriteFile(doc, pdf, 0o644)
	os.WriteFile(filepath.Join(outside, "x.pdf"), pdf, 0o644)
	os.WriteFile(filepath.Join(home, "config.toml"), []byte("[agent]\nfile_roots = [\""+files+"\"]\n"), 0o600)

	r := run(t, home, nil, "docs", "search", doc, "termination", "notice")
	if r.code != 0 || !strings.Contains(r.stdout, `"page":3`) || !strings.Contains(strings.ToLower(r.stdout), "terminat") {
		t.Fatalf("search: %+v", r)
	}
	if r := run(t, home, nil, "docs", "info", doc); r.code != 0 || !strings.Contains(r.stdout, `"pages":3`) {
		t.Fatalf("info: %+v", r)
	}
	if r := run(t, home, nil, "docs", "read", doc, "--page", "3"); r.code != 0 || !strings.Contains(r.stdout, "Either party may terminate") {
		t.Fatalf("read: %+v", r)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"docs", "search", filepath.Join(outside, "x.pdf"), "x"}, 1, "outside the allowed folders"},
		{[]string{"docs", "info", filepath.Join(files, "missing.pdf")}, 1, "does not exist"},
		{[]string{"docs", "search", doc}, 2, "usage: hestia docs search PATH QUERY"},
		{[]string{"docs", "frob", doc}, 2, `unknown docs command "frob"`},
		{[]string{"docs"}, 2, "usage: hestia docs COMMAND"},
	} {
		if r := run(t, home, nil, c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: %+v (want %d and %q)", c.args, r, c.code, c.want)
		}
	}
}
