package shell

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/tools"
)

func newRunner(t testing.TB) (*Runner, string) {
	t.Helper()
	home := t.TempDir()
	for p, c := range map[string]string{
		"Documents/invoice-2024.txt":     "Invoice 2024\ntotal: 120 EUR\n",
		"Documents/notes.md":             "no money here\n",
		"Documents/sub/invoice.txt":      "another INVOICE\n",
		".ssh/id_ed25519":                "PRIVATE KEY MATERIAL\n",
		".env":                           "API_KEY=sk-123\n",
		"Downloads/small.bin":            "x",
		".local/share/hestia/auth-token": "tok",
	} {
		full := filepath.Join(home, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "Documents", "ssh-link"))
	pp, err := pathpolicy.New(pathpolicy.Options{Home: home, Roots: []string{home}, Protected: []string{filepath.Join(home, ".local/share/hestia")}})
	if err != nil {
		t.Fatal(err)
	}
	sb := &sandbox.Sandbox{Helper: []string{os.Args[0], "sandbox-exec"}}
	return &Runner{Paths: pp, Home: home, Timeout: 20 * time.Second, Sandbox: sb, Read: []string{home}, Hide: pp.Hidden()}, home
}

// TestMain lets the test binary stand in for `hestia sandbox-exec`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-exec" {
		os.Exit(sandbox.Main(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

func run(t *testing.T, r *Runner, line string) (string, bool) {
	t.Helper()
	tl := r.Tools()[0]
	args, _ := json.Marshal(map[string]string{"command": line})
	res, err := tl.Run(context.Background(), tools.Call{Args: args})
	if err != nil {
		t.Fatal(err)
	}
	return res.Content, res.IsError
}

func TestShellRunWorks(t *testing.T) {
	t.Parallel()
	r, home := newRunner(t)
	cases := []struct{ line, want string }{
		{"grep -ril invoice ~/Documents/invoice-2024.txt ~/Documents/sub | sort", "Documents/invoice-2024.txt\n" + home + "/Documents/sub/invoice.txt"},
		{"cat ~/Documents/invoice-2024.txt | head -1", "exit: 0 | 0\nInvoice 2024\n"},
		{"wc -l Documents/notes.md", "1 Documents/notes.md"},
		{`grep -c "total: 120" ~/Documents/*.txt`, "1"},
		{"ls ~/Documents/sub 2>/dev/null", "invoice.txt"},
		{"find ~/Downloads -type f -size -2k", home + "/Downloads/small.bin"},
		{"echo 'a  b' \"c\\\"d\" e\\ f", "a  b c\"d e f"},
		{"grep -rc api_key ~/Documents/sub", "invoice.txt:0"},
	}
	for _, c := range cases {
		out, isErr := run(t, r, c.line)
		if isErr || !strings.Contains(out, c.want) {
			t.Errorf("%s:\n%s\n(want %q)", c.line, out, c.want)
		}
	}
}

func TestShellRunRefusals(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t)
	cases := []struct{ line, reason string }{
		{"cat ~/.ssh/id_ed25519", "is refused: it holds credentials"},
		{"cat .env", ".env files hold secrets"},
		{"cat Documents/ssh-link/id_ed25519", "refused"},
		{"grep -r KEY ~", "would read"},
		{"grep -rl KEY", "would read"},
		{"grep -R KEY ~/Documents", "follows symbolic links"},
		{"grep -e PRIVATE ~/.ssh/id_ed25519", "is refused"},
		{"find ~/Documents -exec rm {} ;", "-exec is not allowed"},
		{"find ~/Documents -exec rm {} \\;", "-exec is not allowed: it runs other programs"},
		{"find ~/Documents -delete", "it writes files"},
		{"find ~/Documents -fprint /tmp/x", "it writes files"},
		{"find -L ~/Documents", "follows symbolic links"},
		{"echo $(cat ~/.ssh/id_ed25519)", "command substitution '$(…)' is not allowed"},
		{"echo `id`", "backticks"},
		{"echo $HOME", "variable expansion ($HOME)"},
		{"echo ${HESTIA_LLM_API_KEY}", "variable expansion"},
		{"ls; rm -rf ~", "only one pipeline"},
		{"ls && rm -rf ~", "'&&' is not supported"},
		{"ls || true", "'||' is not supported"},
		{"ls &", "background"},
		{"ls > out.txt", "output can only be discarded to /dev/null"},
		{"sort -o out.txt Documents/notes.md", "it writes files"},
		{"cat < ~/.env", "input redirection"},
		{"cat <<EOF\nx\nEOF", "here-documents"},
		{"rm -rf ~", "rm is not on the allow-list"},
		{"sh -c id", "sh is not on the allow-list"},
		{"/bin/cat Documents/notes.md", "by name"},
		{"FOO=1 ls", "variable assignments"},
		{"(ls)", "subshell"},
		{"diff <(ls) <(ls)", "process substitution"},
		{"tail -f Documents/notes.md", "never ends"},
		{"date -s 2020-01-01", "sets the clock"},
		{"cat /etc/passwd", "refused"},
		{"ls ~root", "another user's home"},
		{"cat ~/Documents/*.pdf", "matched nothing"},
		{"cat ~/.ssh/*", "refused"},
		{"uniq Documents/notes.md Documents/out.txt", "at most 1 file"},
		{"ls | xargs rm", "xargs is not on the allow-list"},
		{"echo 'unterminated", "does not parse"},
		{"", "empty"},
		{"cat ~/.local/share/hestia/auth-token", "Hestia's own data"},
		{"for f in a; do ls; done", "'for'"},
	}
	for _, c := range cases {
		out, isErr := run(t, r, c.line)
		if !isErr || !strings.Contains(out, c.reason) || !strings.HasSuffix(out, "(nothing was run)") {
			t.Errorf("%q: %v\n%s\n(want the reason %q)", c.line, isErr, out, c.reason)
		}
	}
}

func TestShellOutputCappedAndTimeout(t *testing.T) {
	t.Parallel()
	r, _ := newRunner(t)
	r.MaxOutput, r.MaxRead = 1000, 100_000
	out, _ := run(t, r, "seq 1 100000000")
	if !strings.Contains(out, "[output cut:") || len(out) > 3000 || !strings.Contains(out, "signal: killed") {
		t.Fatalf("%s", out)
	}
	r2, _ := newRunner(t)
	r2.Timeout = time.Second
	out, isErr := run(t, r2, "seq 1 1000000000000000 | tail -n 1")
	if !isErr || !strings.Contains(out, "stopped after the 1s timeout") {
		t.Fatalf("%s", out)
	}
}

func TestShellEnvironmentSanitized(t *testing.T) {
	t.Setenv("HESTIA_LLM_API_KEY", "sk-should-not-leak")
	t.Setenv("OPENAI_API_KEY", "sk-openai-leak")
	r, _ := newRunner(t)
	r.defaults()
	if _, err := r.lookPath("jq"); err != nil && os.Getenv("HESTIA_REQUIRE_SERVICES") != "1" {
		t.Skip("jq is not installed (.ci/packages.d/shell.txt)")
	}
	out, isErr := run(t, r, "jq -n env")
	if isErr || strings.Contains(out, "leak") || !strings.Contains(out, `"HOME"`) {
		t.Fatalf("%s", out)
	}
}

func TestShellExec(t *testing.T) {
	t.Parallel()
	r, home := newRunner(t)
	tl := r.Tools()[1]
	s := tl.Spec()
	if s.ReadOnly || s.Risk != tools.RiskHigh {
		t.Fatalf("shell_exec must be gated: %+v", s)
	}
	args := json.RawMessage(`{"argv":["sh","-c","echo hi; echo $HESTIA_X"]}`)
	if p := tl.(tools.Previewer).Preview(context.Background(), args); p != `run ["sh" "-c" "echo hi; echo $HESTIA_X"] in `+home+` (no shell, clean environment, no network)` {
		t.Fatalf("preview %q", p)
	}
	res, _ := tl.Run(context.Background(), tools.Call{Args: args})
	if !strings.Contains(res.Content, "hi\n") {
		t.Fatalf("%+v", res)
	}
	res, _ = tl.Run(context.Background(), tools.Call{Args: json.RawMessage(`{"argv":["cat","~/.ssh/id_ed25519"]}`)})
	if !res.IsError || !strings.Contains(res.Content, "is refused") {
		t.Fatalf("%+v", res)
	}
}
