package files

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/tools"
)

func TestFindFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dl := filepath.Join(home, "Downloads")
	os.MkdirAll(filepath.Join(dl, "sub"), 0o755)
	mk := func(name string, size int64, age time.Duration) {
		p := filepath.Join(dl, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(size) // sparse
		f.Close()
		mt := time.Now().Add(-age)
		os.Chtimes(p, mt, mt)
	}
	mk("movie.MKV", 700<<20, time.Hour)
	mk("sub/backup.tar", 150<<20, 40*24*time.Hour)
	mk("small.pdf", 10<<10, time.Hour)
	mk("id_rsa", 200<<20, time.Hour) // sensitive: skipped even though large
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(dl, "ssh-link"))
	pp, _ := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}})
	tl := FindTool(pp, nil)
	call := func(args string) (string, bool) {
		_, canon, err := tools.DecodeArgs("find_files", args, tl.Spec().Schema)
		if err != nil {
			return err.Error(), true
		}
		res, err := tl.Run(context.Background(), tools.Call{Args: canon})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content, res.IsError
	}
	out, isErr := call(`{"root":"~/Downloads","min_size":"100MB","sort":"size"}`)
	if isErr || !strings.HasPrefix(out, "2 matches") || strings.Index(out, "movie.MKV") > strings.Index(out, "backup.tar") || strings.Contains(out, "small.pdf") || strings.Contains(out, "id_rsa") || !strings.Contains(out, "700.0 MiB") || !strings.Contains(out, "1 sensitive entries skipped") {
		t.Fatalf("%s", out)
	}
	out, _ = call(`{"root":"~/Downloads","name":"*.mkv"}`)
	if !strings.HasPrefix(out, "1 matches") {
		t.Fatalf("%s", out)
	}
	out, _ = call(`{"root":"~/Downloads","modified_after":"7d"}`)
	if strings.Contains(out, "backup.tar") || !strings.Contains(out, "small.pdf") {
		t.Fatalf("%s", out)
	}
	for args, want := range map[string]string{
		`{"root":"~/.ssh"}`:                                   "refused",
		`{"root":"~/Downloads","min_size":"lots"}`:            "not a size",
		`{"root":"~/Downloads","name":"[x"}`:                  "malformed",
		`{"root":"~/Downloads","modified_after":"yesterday"}`: "not a time",
		`{"root":"~/nope"}`:                                   "does not exist",
		`{"root":"~/Downloads","max_results":5000}`:           "at most 1000",
	} {
		out, isErr := call(args)
		if !isErr || !strings.Contains(out, want) {
			t.Errorf("%s: %s (want %q)", args, out, want)
		}
	}
	_ = json.Valid
}
