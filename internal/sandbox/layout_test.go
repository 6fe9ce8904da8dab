//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
)

// layout is a user's home with Hestia's folders where one layout puts
// them, and the spec the shell tools would get for it (the hidden paths
// from the real path policy, as the daemon builds it).
type layout struct {
	name                  string
	home, work, data, cfg string
}

func newLayout(t *testing.T, name string) layout {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	l := layout{name: name, home: home, work: filepath.Join(home, "work")}
	switch name {
	case "xdg":
		l.data, l.cfg = filepath.Join(home, ".local", "share", "hestia"), filepath.Join(home, ".config", "hestia")
	case "hestia-home-in-home":
		l.data, l.cfg = filepath.Join(home, "hestia", "data"), filepath.Join(home, "hestia", "config")
	default:
		t.Fatalf("unknown layout %q", name)
	}
	for p, c := range map[string]string{
		filepath.Join(l.work, "in.txt"):           "hello\n",
		filepath.Join(l.data, "auth-token"):       "TOKEN-SECRET\n",
		filepath.Join(l.data, "logs", "a.log"):    "LOG-SECRET\n",
		filepath.Join(l.cfg, "config.toml"):       "CONFIG-SECRET\n",
		filepath.Join(home, ".ssh", "id_ed25519"): "KEY-SECRET\n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// spec is what shell_run (writable false) or shell_exec (true) gets.
func (l layout) spec(t *testing.T, writable bool) Spec {
	t.Helper()
	pp, err := pathpolicy.New(pathpolicy.Options{Home: l.home, Roots: []string{l.home}, Protected: []string{l.data, l.cfg, filepath.Join(l.data, "logs")}})
	if err != nil {
		t.Fatal(err)
	}
	return Spec{Dir: l.work, Writable: writable, Read: pp.Roots(), Hide: pp.Hidden()}
}

// TestBubblewrapRun runs programs under bubblewrap, one-shot and in a
// worker, with Hestia's folders where the default XDG layout and a
// HESTIA_HOME inside the home put them: the data folder and its logs
// folder are both hidden, which once made every run fail ("Can't mkdir
// DATA/logs: Read-only file system"). The line "bubblewrap run: …" says
// whether it ran here (.ci/run prints it).
func TestBubblewrapRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		bwrapRunLine(t, "skipped: bubblewrap is Linux only")
		t.Skip("bubblewrap is Linux only")
	}
	if findBin("bwrap") == "" && os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
		t.Fatal("bwrap is not installed (.ci/packages.d/sandbox.txt)")
	}
	sb := &Sandbox{NoLandlock: true, Helper: helper()}
	t.Cleanup(func() { sb.Close() })
	if st := sb.Status(context.Background()); st.Mode != Bubblewrap {
		bwrapRunLine(t, "skipped: "+st.String())
		t.Skipf("bubblewrap cannot run here: %s", st)
	}
	for _, name := range []string{"xdg", "hestia-home-in-home"} {
		t.Run(name, func(t *testing.T) {
			l := newLayout(t, name)
			for _, writable := range []bool{false, true} {
				spec := l.spec(t, writable)
				if out, ok := sh(t, sb, spec, "cat in.txt"); !ok || out != "hello\n" {
					t.Fatalf("writable=%v: a program under bubblewrap failed: %q", writable, out)
				}
				for _, p := range []string{filepath.Join(l.data, "auth-token"), filepath.Join(l.data, "logs", "a.log"), filepath.Join(l.cfg, "config.toml"), filepath.Join(l.home, ".ssh", "id_ed25519")} {
					if out, _ := sh(t, sb, spec, "cat "+p); strings.Contains(out, "SECRET") {
						t.Errorf("writable=%v: %s was readable: %q", writable, p, out)
					}
				}
			}
			spec := l.spec(t, false)
			warm(t, sb, spec)
			if out, exits := runW(t, sb, spec, 30*time.Second, "cat in.txt"); exits[0] != "0" || out != "hello\n" {
				t.Fatalf("in a worker: %v %q", exits, out)
			}
		})
	}
	if !t.Failed() {
		bwrapRunLine(t, "ran")
	}
}

// bwrapRunLine says on stderr whether the bubblewrap run happened, for CI
// logs, and in the test log.
func bwrapRunLine(t *testing.T, what string) {
	t.Helper()
	fmt.Fprintln(os.Stderr, "bubblewrap run: "+what)
	t.Log("bubblewrap run: " + what)
}

// TestOutermost: a hidden path inside another (or named twice) gets no
// cover of its own; a sibling that merely shares a prefix does.
func TestOutermost(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"/h/d", "/h/d/logs", "/h/c"}, []string{"/h/d", "/h/c"}},
		{[]string{"/h/d/logs", "/h/d/"}, []string{"/h/d"}},
		{[]string{"/h/d", "/h/d"}, []string{"/h/d"}},
		{[]string{"/h/d", "/h/data"}, []string{"/h/d", "/h/data"}},
	} {
		if got := outermost(c.in); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("outermost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
