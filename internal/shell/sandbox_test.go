package shell

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/tools"
)

// TestShellSandboxed runs the tools under each mechanism this machine has
// (bubblewrap, Landlock, the rlimits-only fallback): the result names the
// mechanism, shell_run still works, and a shell_exec the user approved
// cannot read a key, create a start-up file or reach Hestia's data when
// the mechanism confines the filesystem.
func TestShellSandboxed(t *testing.T) {
	helper := []string{os.Args[0], "sandbox-exec"}
	for _, c := range []struct {
		mode     sandbox.Mode
		sb       *sandbox.Sandbox
		confines bool
	}{
		{sandbox.Bubblewrap, &sandbox.Sandbox{NoLandlock: true}, true},
		{sandbox.Landlock, &sandbox.Sandbox{Bwrap: "-", Helper: helper}, true},
		{sandbox.RlimitOnly, &sandbox.Sandbox{Bwrap: "-", NoLandlock: true, Helper: helper}, false},
	} {
		t.Run(string(c.mode), func(t *testing.T) {
			if st := c.sb.Status(context.Background()); st.Mode != c.mode {
				t.Skipf("not available here: %s", st)
			}
			r, home := newRunner(t)
			r.Sandbox = c.sb
			out, isErr := run(t, r, "grep -c total ~/Documents/invoice-2024.txt")
			if isErr || !strings.HasPrefix(out, "exit: 0\n1\n") || !strings.Contains(out, "[sandbox: "+string(c.mode)+"]") {
				t.Fatalf("%s", out)
			}
			exec := r.Tools()[1]
			for _, script := range []string{
				"cd ~/.s?h && cat id_*",
				"cat ~/.local/share/hes?ia/auth-*",
				"echo pwned >> ~/.bash?c; cat ~/.bash?c",
			} {
				args, _ := json.Marshal(map[string]any{"argv": []string{"sh", "-c", script}})
				res, err := exec.Run(context.Background(), tools.Call{Args: args})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.Content, "[sandbox: "+string(c.mode)+"]") {
					t.Errorf("%s: no sandbox line: %s", script, res.Content)
				}
				leaked := strings.Contains(res.Content, "PRIVATE KEY") || strings.Contains(res.Content, "tok\n") || strings.Contains(res.Content, "pwned")
				if c.confines && leaked {
					t.Errorf("%s escaped %s:\n%s", script, c.mode, res.Content)
				}
				// Unconfined, the same script does get through: the
				// sandbox, not the argument checks, is what stops it.
				if !c.confines && !leaked {
					t.Errorf("%s did not reach its target without confinement, so the check proves nothing:\n%s", script, res.Content)
				}
			}
			if _, err := os.Stat(home + "/.bashrc"); c.confines && err == nil {
				t.Errorf("~/.bashrc was created under %s", c.mode)
			}
		})
	}
}
