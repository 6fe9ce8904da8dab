package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's "What works today" and package list stay in step with the
// code: every command it names exists, every command exists in the README,
// and every Debian package CI installs for the tests is named.
func TestReadmeMatchesTheCode(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	known := map[string]bool{}
	for _, c := range commands() {
		known[c.name] = true
		if !strings.Contains(readme, "hestia "+c.name) {
			t.Errorf("README never mentions `hestia %s`", c.name)
		}
	}
	for _, m := range regexp.MustCompile("`hestia ([a-z]+)").FindAllStringSubmatch(readme, -1) {
		if !known[m[1]] && m[1] != "help" {
			t.Errorf("README names `hestia %s`, which does not exist", m[1])
		}
	}
	lists, _ := filepath.Glob(filepath.Join("..", "..", ".ci", "packages.d", "*.txt"))
	for _, l := range lists {
		data, _ := os.ReadFile(l)
		for _, line := range strings.Split(string(data), "\n") {
			if pkg := strings.TrimSpace(strings.SplitN(line, "#", 2)[0]); pkg != "" && !strings.Contains(readme, "`"+pkg+"`") {
				t.Errorf("README does not name the Debian package `%s` (%s)", pkg, filepath.Base(l))
			}
		}
	}
}
