package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/doctor"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/sandbox"
)

// TestSandboxCheckRunsTheTools: the shell.sandbox check runs a program
// through the shell tools, so it passes with the default XDG layout
// (Hestia's data, its logs folder inside it, and its config hidden) and
// fails when the tools cannot run anything, even though the sandbox's own
// trial run succeeds. It once reported OK while every tool call failed.
func TestSandboxCheckRunsTheTools(t *testing.T) {
	home := t.TempDir()
	data, cfg := filepath.Join(home, ".local", "share", "hestia"), filepath.Join(home, ".config", "hestia")
	for _, d := range []string{filepath.Join(data, "logs"), cfg, filepath.Join(home, "work")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pp, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}, Protected: []string{data, cfg, filepath.Join(data, "logs")}})
	if err != nil {
		t.Fatal(err)
	}
	exe := os.Args[0] // answers `sandbox-exec` (TestMain)
	ctx := context.Background()

	sh := shellRunner(pp, home, exe)
	t.Cleanup(func() { sh.Sandbox.Close() })
	st := sh.Sandbox.Status(ctx)
	t.Logf("sandbox: %s", st)
	status, detail := SandboxCheck(sh).Run(ctx)
	if st.Mode == sandbox.Bubblewrap || st.Mode == sandbox.Landlock {
		if status != doctor.OK {
			t.Fatalf("default layout: %s %s", status, detail)
		}
	} else if status != doctor.Warn {
		t.Fatalf("default layout without confinement: %s %s", status, detail)
	}

	// A runner whose programs cannot run (its working folder is hidden)
	// makes the check fail, naming the tool.
	broken := shellRunner(pp, home, exe)
	t.Cleanup(func() { broken.Sandbox.Close() })
	broken.Hide = append(broken.Hide, home)
	status, detail = SandboxCheck(broken).Run(ctx)
	if broken.Sandbox.Status(ctx).Mode == sandbox.None {
		t.Skipf("no sandbox helper runs here, so nothing can fail: %s %s", status, detail)
	}
	if status != doctor.Fail || !strings.Contains(detail, "shell_run cannot run a program") {
		t.Fatalf("a runner that runs nothing: %s %s", status, detail)
	}
}
