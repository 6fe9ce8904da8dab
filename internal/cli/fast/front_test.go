package fast_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/cli/fast"
)

func goList(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	out, err := exec.Command(goBin, "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		deps[l] = true
	}
	return deps
}

// The binaries must stay small: everything they link starts in every
// one-shot query. The front links nothing beyond the standard library but
// its socket client, and not the standard library's network stack or
// JSON either; hestia-fast links the stores but none of the packages that
// belong to hestia-core only.
func TestFrontStaysSmall(t *testing.T) {
	const mod = "github.com/hestia-dev/hestia/"
	front := goList(t, mod+"cmd/hestia")
	for dep := range front {
		if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") && dep != mod+"cmd/hestia" &&
			dep != mod+"internal/clisock/wire" && dep != mod+"internal/homedir" && dep != mod+"internal/binpath" {
			t.Errorf("cmd/hestia links %s; the front must stay a socket client and an exec", dep)
		}
	}
	for _, heavy := range []string{"net", "encoding/json", "log/slog", "context"} {
		if front[heavy] {
			t.Errorf("cmd/hestia links %s: it starts in every command", heavy)
		}
	}
	deps := goList(t, mod+"cmd/hestia-fast")
	if !deps[mod+"internal/cli/fast"] || !deps["modernc.org/sqlite"] {
		t.Fatalf("go list did not list hestia-fast's packages: %v", deps)
	}
	for _, heavy := range []string{
		"github.com/hestia-dev/hestia/internal/app", "github.com/hestia-dev/hestia/internal/cli",
		"github.com/hestia-dev/hestia/internal/agent", "github.com/hestia-dev/hestia/internal/llm",
		"github.com/hestia-dev/hestia/internal/tools", "github.com/hestia-dev/hestia/internal/server",
		"github.com/hestia-dev/hestia/internal/docs", "github.com/hestia-dev/hestia/internal/mail/imapsync",
		"github.com/hestia-dev/hestia/internal/mail/mailtools", "github.com/hestia-dev/hestia/internal/calendar",
		"github.com/modelcontextprotocol/go-sdk/mcp", "github.com/go-shiori/go-readability", "github.com/ledongthuc/pdf",
		// An HTTP client is a fifth of the binary and of its start; the
		// front asks the daemon over its socket.
		"net/http", "github.com/hestia-dev/hestia/internal/cli/daemonclient",
		// Nor an SMTP or TLS client (the send journal's submission).
		"github.com/emersion/go-smtp", "crypto/tls", "github.com/hestia-dev/hestia/internal/mail/journal/smtpsend",
	} {
		if deps[heavy] {
			t.Errorf("cmd/hestia-fast links %s; keep it in hestia-core", heavy)
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

// TestFrontExecsCore builds the three binaries as `make build` does and
// checks that the front answers its queries exactly as hestia-core does,
// hands everything else over (exit statuses included), finds its siblings
// through a symbolic link, says clearly when one is missing, and, with the
// daemon running, has the daemon answer on its socket as the command
// would have.
func TestFrontExecsCore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	bin := t.TempDir()
	for name, pkg := range map[string]string{"hestia": "./cmd/hestia", "hestia-fast": "./cmd/hestia-fast", "hestia-core": "./cmd/hestia-core"} {
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
		cmd.Env = append(os.Environ(), "HESTIA_HOME="+home, "TZ=Pacific/Kiritimati")
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

	// Without hestia-core, hestia-fast still answers its own commands and
	// says what is missing for the rest; the front alone says it needs
	// hestia-fast.
	dir := t.TempDir()
	for _, name := range []string{"hestia", "hestia-fast"} {
		data, _ := os.ReadFile(filepath.Join(bin, name))
		os.WriteFile(filepath.Join(dir, name), data, 0o755)
	}
	if r := runBin(filepath.Join(dir, "hestia"), "mail", "search", "installer"); r.code != 0 || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("without hestia-core, mail search: %+v", r)
	}
	if r := runBin(filepath.Join(dir, "hestia"), "serve"); r.code != 1 || !strings.Contains(r.stderr, "hestia-core is not installed next to") {
		t.Errorf("without hestia-core, serve: %+v", r)
	}
	alone := filepath.Join(t.TempDir(), "hestia")
	data, _ := os.ReadFile(front)
	os.WriteFile(alone, data, 0o755)
	if r := runBin(alone, "mail", "search", "installer"); r.code != 1 || !strings.Contains(r.stderr, "hestia-fast is not installed next to") {
		t.Errorf("front alone without a daemon: %+v", r)
	}

	// With the daemon running, the front alone gets its queries answered
	// on the socket, as the command answers them (dates in the asking
	// process's zone); other commands still need hestia-fast.
	want := map[string]res{}
	queries := [][]string{
		{"mail", "read", "1"}, {"mail", "thread", "1"}, {"mail", "thread", "1", "--json"}, {"mail", "read", "99"},
		{"mail", "search", "--after", "soon"}, {"mail", "search", "--from", "ann", "--count"}, {"mail", "read"},
	}
	for _, args := range queries {
		want[strings.Join(args, " ")] = runBin(core, args...)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	daemon := exec.Command(core, "serve", "--addr", addr)
	daemon.Env = append(os.Environ(), "HESTIA_HOME="+home)
	var dlog bytes.Buffer
	daemon.Stdout, daemon.Stderr = &dlog, &dlog
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(home, "cli.sock")
	defer func() {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left after the daemon stopped: %v", err)
		}
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 300 {
			t.Fatalf("the daemon made no socket:\n%s", dlog.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, args := range queries {
		if got := runBin(alone, args...); got != want[strings.Join(args, " ")] {
			t.Errorf("%q through the daemon: %+v, the command alone: %+v", args, got, want[strings.Join(args, " ")])
		}
	}
	if r := runBin(alone, "mail", "search", "installer"); r.code != 0 || !strings.Contains(r.stdout, "Solar panels") {
		t.Errorf("mail search through the daemon: %+v", r)
	}
	if r := runBin(alone, "wiki", "search", "warranty"); r.code != 0 || !strings.Contains(r.stdout, "Boiler") {
		t.Errorf("wiki search through the daemon: %+v", r)
	}
	if r := runBin(alone, "mail", "import", md); r.code != 1 || !strings.Contains(r.stderr, "hestia-fast is not installed next to") {
		t.Errorf("mail import is not the daemon's to answer: %+v", r)
	}
	if r := runBin(alone, "--log-level", "debug", "mail", "search", "x"); r.code != 1 || !strings.Contains(r.stderr, "hestia-fast is not installed") {
		t.Errorf("global flags are not the daemon's to answer: %+v", r)
	}
}
