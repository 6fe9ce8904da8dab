package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestArchitectureMapIsTrue keeps ARCHITECTURE.md a map of the code: under
// 1,500 words, every file it points at exists, every package it names
// exists, and every package of the module is on it (a new package gets its
// line).
func TestArchitectureMapIsTrue(t *testing.T) {
	b, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	// A map, not a manual (issue 32): details belong in the packages' doc
	// comments and docs/decisions.
	if n := len(strings.Fields(doc)); n >= 1500 {
		t.Errorf("ARCHITECTURE.md has %d words; keep it under 1,500 and move detail into the package's doc comment", n)
	}
	root, _ := filepath.Abs("../..")
	for _, m := range regexp.MustCompile("`([a-z0-9_/]+\\.go)`").FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(filepath.Join(root, "internal", m[1])); err != nil {
			t.Errorf("ARCHITECTURE.md points at %s, which does not exist under internal/", m[1])
		}
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_/*]+)`").FindAllStringSubmatch(doc, -1) {
		named[m[1]] = true
	}
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, "github.com/hestia-dev/hestia/internal/")
		if !ok {
			continue
		}
		short := rel[strings.LastIndex(rel, "/")+1:]
		if !named[rel] && !named[short] && !strings.HasSuffix(rel, "test") && !strings.Contains(rel, "mailbench") {
			t.Errorf("package internal/%s is not on ARCHITECTURE.md's map", rel)
		}
	}
}
