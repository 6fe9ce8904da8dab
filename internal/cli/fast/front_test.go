package fast_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/cli/fast"
)

// The front binary must stay small: everything it links starts in every
// one-shot query. These packages belong to hestia-core only.
func TestFrontStaysSmall(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", "github.com/hestia-dev/hestia/cmd/hestia").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		deps[l] = true
	}
	if !deps["github.com/hestia-dev/hestia/internal/cli/fast"] || !deps["modernc.org/sqlite"] {
		t.Fatalf("go list did not list the front's packages:\n%s", out)
	}
	for _, heavy := range []string{
		"github.com/hestia-dev/hestia/internal/app", "github.com/hestia-dev/hestia/internal/cli",
		"github.com/hestia-dev/hestia/internal/agent", "github.com/hestia-dev/hestia/internal/llm",
		"github.com/hestia-dev/hestia/internal/tools", "github.com/hestia-dev/hestia/internal/server",
		"github.com/hestia-dev/hestia/internal/docs", "github.com/hestia-dev/hestia/internal/mail/imapsync",
		"github.com/hestia-dev/hestia/internal/mail/mailtools", "github.com/hestia-dev/hestia/internal/calendar",
		"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/go-shiori/go-readability", "github.com/ledongthuc/pdf",
	} {
		if deps[heavy] {
			t.Errorf("cmd/hestia links %s; keep it in hestia-core", heavy)
		}
	}
}

func TestRunAnswersOnlyItsCommands(t *testing.T) {
	home := t.TempDir()
	env := func() (*fast.Env, *bytes.Buffer, *bytes.Buffer) {
		var out, errb bytes.Buffer
		return &fast.Env{Stdout: &out, Stderr: &errb, Version: "v9", Getenv: func(k string) string {
			if k == "HESTIA_HOME" {
				return home
			}
			return ""
		}}, &out, &errb
	}
	for _, args := range [][]string{nil, {"help"}, {"serve"}, {"--bogus", "version"}, {"version", "extra"}, {"mail"}, {"mail", "sync"},
		{"mail", "-h"}, {"wiki", "read", "x"}, {"wiki"}, {"chat", "--once", "hi"}, {"--log-level", "debug"}} {
		e, out, _ := env()
		if _, ok := fast.Run(context.Background(), args, e); ok || out.Len() != 0 {
			t.Errorf("%q: handled by the front (%q); it belongs to hestia-core", args, out)
		}
	}
	e, out, _ := env()
	if code, ok := fast.Run(context.Background(), []string{"--version"}, e); !ok || code != 0 || out.String() != "hestia v9\n" {
		t.Errorf("--version: %d %v %q", code, ok, out)
	}
	e, out, errb := env()
	if code, ok := fast.Run(context.Background(), []string{"--log-level", "debug", "mail", "search", "solar", "--json"}, e); !ok || code != 0 || !strings.Contains(out.String(), `"messages": []`) {
		t.Errorf("mail search on an empty home: %d %v %q %q", code, ok, out, errb)
	}
	e, _, errb = env()
	if code, ok := fast.Run(context.Background(), []string{"mail", "read", "abc"}, e); !ok || code != 2 || !strings.Contains(errb.String(), `message id "abc" is not a number`) {
		t.Errorf("mail read abc: %d %v %q", code, ok, errb)
	}
	e, _, errb = env()
	if code, ok := fast.Run(context.Background(), []string{"--log-level", "loud", "wiki", "search", "x"}, e); !ok || code != 2 || !strings.Contains(errb.String(), "log-level") {
		t.Errorf("bad --log-level: %d %v %q", code, ok, errb)
	}
	e, _, errb = env()
	if code, ok := fast.Run(context.Background(), []string{"wiki", "search"}, e); !ok || code != 2 || !strings.Contains(errb.String(), "usage: hestia wiki search") {
		t.Errorf("wiki search without a query: %d %v %q", code, ok, errb)
	}
	e, _, errb = env()
	if code, ok := fast.Run(context.Background(), []string{"mail", "search", "-h"}, e); !ok || code != 0 || !strings.Contains(errb.String(), "-from") {
		t.Errorf("mail search -h: %d %v %q", code, ok, errb)
	}
}

// TestFrontExecsCore builds both binaries as `make build` does and checks
// that the front answers its queries exactly as hestia-core does, hands
// everything else over (exit status included), finds hestia-core through
// a symbolic link, and says clearly when hestia-core is missing.
func TestFrontExecsCore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	bin := t.TempDir()
	for name, pkg := range map[string]string{"hestia": "./cmd/hestia", "hestia-core": "./cmd/hestia-core"} {
		cmd := exec.Command(goBin, "build", "-o", filepath.Join(bin, name), pkg)
		cmd.Dir = "../../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	home := t.TempDir()
	md := filepath.Join(t.TempDir(), "Maildir")
	for _, d := range []string{"cur", "new", "tmp"} {
		os.MkdirAll(filepath.Join(md, d), 0o755)
	}
	os.WriteFile(filepath.Join(md, "cur", "1:2,S"), []byte("Message-ID: <a@x>\nFrom: Ann <ann@x.org>\nTo: me@x.org\nSubject: Solar panels\nDate: Mon, 5 Jan 2026 10:00:00 +0000\n\nThe installer comes on Tuesday.\n"), 0o644)
	os.WriteFile(filepath.Join(md, "cur", "2:2,S"), []byte("Message-ID: <b@x>\nFrom: Bo <bo@x.org>\nTo: ann@x.org\nSubject: Re: Solar panels\nIn-Reply-To: <a@x>\nDate: Mon, 5 Jan 2026 11:00:00 +0000\n\nGreat, the installer.\n"), 0o644)
	os.MkdirAll(filepath.Join(home, "wiki", "pages"), 0o700)
	os.WriteFile(filepath.Join(home, "wiki", "pages", "Boiler.md"), []byte("---\ntitle: Boiler\n---\n# Boiler\nThe boiler warranty ends in May.\n"), 0o600)

	type res struct {
		code           int
		stdout, stderr string
	}
	runBin := func(path string, args ...string) res {
		t.Helper()
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), "HESTIA_HOME="+home)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s %q: %v", path, args, err)
		}
		return res{code, out.String(), errb.String()}
	}
	front, core := filepath.Join(bin, "hestia"), filepath.Join(bin, "hestia-core")

	if r := runBin(front, "mail", "import", "--quiet", md); r.code != 0 || !strings.Contains(r.stdout, "2 new messages") {
		t.Fatalf("mail import: %+v", r)
	}
	if r := runBin(core, "mail", "import", "--quiet", "--json", md); r.code != 0 || !strings.Contains(r.stdout, `"skipped": 2`) {
		t.Fatalf("mail import again by hestia-core: %+v", r)
	}
	// Handed over to hestia-core, exit statuses included.
	if r := runBin(front, "wiki", "reindex"); r.code != 0 || !strings.Contains(r.stdout, "5 files, 5 indexed") {
		t.Fatalf("wiki reindex through the front: %+v", r)
	}
	if r := runBin(front, "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, `unknown command "frobnicate"`) {
		t.Errorf("unknown command through the front: %+v", r)
	}
	if r := runBin(front, "help"); r.code != 0 || !strings.Contains(r.stdout, "serve") {
		t.Errorf("help through the front: %+v", r)
	}

	// Answered by the front, exactly as hestia-core answers.
	for _, args := range [][]string{
		{"mail", "search", "installer", "--json"}, {"mail", "search", "solar"}, {"mail", "search", "--from", "ann", "--count"},
		{"mail", "read", "1"}, {"mail", "thread", "1", "--json"}, {"mail", "read", "99"}, {"mail", "search", "--after", "soon"},
		{"wiki", "search", "warranty", "--json"}, {"wiki", "search", "boiler"}, {"version"},
	} {
		f, c := runBin(front, args...), runBin(core, args...)
		if f != c {
			t.Errorf("%q: the front answered %+v, hestia-core %+v", args, f, c)
		}
	}
	if r := runBin(front, "mail", "search", "installer"); r.code != 0 || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("mail search: %+v", r)
	}
	if r := runBin(front, "wiki", "search", "warranty"); r.code != 0 || !strings.Contains(r.stdout, "Boiler") {
		t.Errorf("wiki search: %+v", r)
	}

	// A link to the front elsewhere still finds hestia-core.
	link := filepath.Join(t.TempDir(), "hestia")
	if err := os.Symlink(front, link); err != nil {
		t.Fatal(err)
	}
	if r := runBin(link, "config", "show"); r.code != 0 || !strings.Contains(r.stdout, "[server]") {
		t.Errorf("config show through a link: %+v", r)
	}

	// Without hestia-core, the front still answers its own commands and
	// says what is missing for the rest.
	alone := filepath.Join(t.TempDir(), "hestia")
	data, _ := os.ReadFile(front)
	os.WriteFile(alone, data, 0o755)
	if r := runBin(alone, "mail", "search", "installer"); r.code != 0 || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("front alone, mail search: %+v", r)
	}
	if r := runBin(alone, "serve"); r.code != 1 || !strings.Contains(r.stderr, "hestia-core is not installed next to") {
		t.Errorf("front alone, serve: %+v", r)
	}
}
