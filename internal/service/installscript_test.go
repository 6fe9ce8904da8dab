package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/install.sh (make install, and install.sh in a release tarball)
// copies the binary into $PREFIX/bin and says whether that is on PATH.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs("../../scripts/install.sh")
	if err != nil {
		t.Fatal(err)
	}
	// The tarball layout: the script beside a binary named hestia.
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "install.sh"), mustRead(t, script), 0o755)
	os.WriteFile(filepath.Join(pkg, "hestia"), []byte("#!/bin/sh\necho hestia v1.2.3\n"), 0o755)
	prefix := filepath.Join(t.TempDir(), "pre fix")
	run := func(path string, args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(pkg, "install.sh"), args...)
		cmd.Env = []string{"HOME=" + t.TempDir(), "PREFIX=" + prefix, "PATH=" + path}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	sysPath := os.Getenv("PATH")
	out, err := run(sysPath)
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	bin := filepath.Join(prefix, "bin", "hestia")
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v %v", fi, err)
	}
	if !strings.Contains(out, "Installed "+bin+": hestia v1.2.3") || !strings.Contains(out, "is not on your PATH") || !strings.Contains(out, `export PATH="`+filepath.Join(prefix, "bin")+`:$PATH"`) {
		t.Fatalf("install.sh said:\n%s", out)
	}
	out, err = run(filepath.Join(prefix, "bin") + ":" + sysPath)
	if err != nil || !strings.Contains(out, "is on your PATH") {
		t.Fatalf("install.sh with the prefix on PATH: %v\n%s", err, out)
	}
	// make install passes the binary; a missing one is named.
	out, err = run(sysPath, filepath.Join(pkg, "nope"))
	if err == nil || !strings.Contains(out, "no hestia binary at "+filepath.Join(pkg, "nope")) {
		t.Fatalf("missing binary: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
