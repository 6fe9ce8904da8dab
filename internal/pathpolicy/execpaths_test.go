package pathpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every example of every rule is refused for writing, with the rule's
// reason and the path in the message; the refusal also counts as a
// sensitive path, which is what the policy engine refuses before a card.
func TestExecRulesRefuseWrites(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// No roots: the rule itself must refuse, not the allowed folders.
	p, err := New(Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range ExecRules() {
		if r.Why == "" || len(r.Examples) == 0 {
			t.Errorf("rule %q has no reason or no example", r.pattern)
		}
		for _, ex := range r.Examples {
			n++
			for _, variant := range []string{ex, upper(ex)} {
				_, err := p.ResolveForWrite(variant)
				if !errors.Is(err, ErrExecutes) || !errors.Is(err, ErrSensitive) {
					t.Errorf("ResolveForWrite(%q) = %v, want ErrExecutes", variant, err)
					continue
				}
				if !strings.Contains(err.Error(), variant) || !strings.Contains(err.Error(), r.Why) {
					t.Errorf("refusal of %q does not name the path and %q: %v", variant, r.Why, err)
				}
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d examples; the list lost entries", n)
	}
}

// upper changes the case of everything after the home marker, the trick
// a case-insensitive disk (macOS) would let through.
func upper(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return "~/" + strings.ToUpper(rest)
	}
	return strings.ToUpper(p)
}

// A link to a refused place, or a folder under one reached through a
// link, is refused too; reading those places stays allowed.
func TestExecRulesFollowLinksAndLeaveReads(t *testing.T) {
	t.Parallel()
	home := filepath.Join(t.TempDir(), "home")
	for _, d := range []string{".config/autostart", ".local/lib/python3.12/site-packages", "notes", "projects/app/.vscode"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".gitconfig", "projects/app/.vscode/settings.json", ".local/lib/python3.12/site-packages/x.py"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"notes/start": ".config/autostart", "notes/libs": ".local/lib/python3.12/site-packages", "notes/gc": ".gitconfig"} {
		if err := os.Symlink(filepath.Join(home, target), filepath.Join(home, link)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := New(Options{Home: home, Roots: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"notes/start/x.desktop", "notes/start", "notes/libs/evil.pth", "notes/libs/new/dir/x.py", "notes/gc"} {
		if _, err := p.ResolveForWrite(w); !errors.Is(err, ErrExecutes) {
			t.Errorf("ResolveForWrite(%q) through a link = %v, want ErrExecutes", w, err)
		}
	}
	for _, r := range []string{"~/.gitconfig", "projects/app/.vscode/settings.json", "notes/libs/x.py"} {
		if _, err := p.Resolve(r); err != nil {
			t.Errorf("reading %q was refused: %v", r, err)
		}
	}
	// Names that only look like a rule stay writable.
	for _, ok := range []string{"notes/bin-notes.md", "projects/binary/x", "notes/site-packages.md", "notes/git.txt", "projects/app/src/config", "notes/my.vimrc.md", "notes/profile", "notes/x.pth.txt", "projects/app/.github/workflows/ci.yml"} {
		if _, err := p.ResolveForWrite(ok); err != nil {
			t.Errorf("ResolveForWrite(%q) = %v, want allowed", ok, err)
		}
	}
}
