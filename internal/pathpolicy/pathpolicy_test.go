package pathpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func setup(t testing.TB) (*Policy, string, string) {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	data := filepath.Join(root, "hestia-data")
	for _, d := range []string{home, data, filepath.Join(home, ".ssh"), filepath.Join(home, "docs"), filepath.Join(home, ".aws")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".ssh/id_ed25519", "docs/a.txt", ".aws/credentials", ".bashrc", "docs/.env", "docs/server.pem"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(data, "auth-token"), []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := New(Options{Home: home, Roots: []string{home}, Protected: []string{data}})
	if err != nil {
		t.Fatal(err)
	}
	return p, home, data
}

func TestResolveRefusesSensitive(t *testing.T) {
	t.Parallel()
	p, home, data := setup(t)
	link := func(target, name string) string {
		l := filepath.Join(home, "docs", name)
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	link(filepath.Join(home, ".ssh", "id_ed25519"), "innocent.txt")
	link(filepath.Join(home, ".ssh"), "keys")
	link(data, "dd")
	link("/etc/passwd", "pw")
	link(filepath.Join(home, ".bashrc"), "rc")
	link(filepath.Join(home, "docs", "innocent.txt"), "chain") // link to a link
	cases := []struct {
		path string
		want error
	}{
		{"~/.ssh/id_ed25519", ErrSensitive},
		{"~/docs/../.ssh/id_ed25519", ErrSensitive},
		{"docs/innocent.txt", ErrSensitive}, // relative, symlink to a key
		{"docs/chain", ErrSensitive},
		{"docs/keys/id_ed25519", ErrSensitive}, // symlinked directory
		{"docs/dd/auth-token", ErrSensitive},   // Hestia's own data
		{data + "/auth-token", ErrSensitive},
		{"docs/pw", ErrSensitive},
		{"docs/rc", ErrSensitive},
		{"~/.aws/credentials", ErrSensitive},
		{"~/.bashrc", ErrSensitive},
		{"docs/.env", ErrSensitive},
		{"docs/server.pem", ErrSensitive},
		{"/etc/shadow", ErrSensitive},
		{"/proc/self/environ", ErrSensitive},
		{"/tmp", ErrOutsideRoots},
	}
	for _, c := range cases {
		_, err := p.Resolve(c.path)
		if !errors.Is(err, c.want) {
			t.Errorf("Resolve(%q) = %v, want %v", c.path, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "refused") {
			t.Errorf("error for %q does not say refused: %v", c.path, err)
		}
	}
	got, err := p.Resolve("docs/a.txt")
	if err != nil || got != filepath.Join(home, "docs", "a.txt") {
		t.Errorf("ordinary file: %q %v", got, err)
	}
	// Git hooks and repository config run programs; the rest of a
	// repository stays usable.
	for _, w := range []string{"~/proj/.git/hooks/pre-commit", "~/proj/.git/config", "~/proj/.GIT/Hooks/post-checkout"} {
		if _, err := p.ResolveForWrite(w); !errors.Is(err, ErrSensitive) {
			t.Errorf("ResolveForWrite(%q) = %v, want ErrSensitive", w, err)
		}
	}
	// Reading the rest of a repository's .git stays allowed; writing
	// anywhere in it is refused (execpaths.go: a .git file or folder can
	// point git at config that runs programs).
	if err := os.MkdirAll(filepath.Join(home, "proj", ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "proj", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Resolve("~/proj/.git/HEAD"); err != nil {
		t.Errorf("Resolve(~/proj/.git/HEAD) = %v", err)
	}
	for _, ok := range []string{"~/proj/src/config", "~/proj/hooks/x"} {
		if _, err := p.ResolveForWrite(ok); err != nil {
			t.Errorf("ResolveForWrite(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "~other/x", "a\x00b"} {
		if _, err := p.Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) accepted", bad)
		}
	}
}

func TestResolveForWrite(t *testing.T) {
	t.Parallel()
	p, home, _ := setup(t)
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "docs", "sshdir")); err != nil {
		t.Fatal(err)
	}
	// New file under a symlinked sensitive directory, several levels deep.
	for _, path := range []string{"docs/sshdir/authorized_keys", "docs/sshdir/new/deeper/file.txt", "~/.config/hestia/config.toml", "~/.zshrc", "new/.env.local"} {
		if _, err := p.ResolveForWrite(path); !errors.Is(err, ErrSensitive) {
			t.Errorf("ResolveForWrite(%q) = %v, want sensitive", path, err)
		}
	}
	got, err := p.ResolveForWrite("docs/new/dir/file.md")
	if err != nil || got != filepath.Join(home, "docs", "new", "dir", "file.md") {
		t.Errorf("new file: %q %v", got, err)
	}
	if _, err := p.ResolveForWrite("../outside.txt"); !errors.Is(err, ErrOutsideRoots) {
		t.Errorf("escape via ..: %v", err)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	if _, err := New(Options{Home: "relative"}); err == nil {
		t.Error("relative home accepted")
	}
}
