package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/daemonaddr"
)

// `hestia service` where systemd does not run (as in CI): install writes
// the unit for the given binary and this home, status says systemd is
// missing, uninstall removes the unit; bad arguments are usage errors.
func TestServiceCommandsWithoutSystemd(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("checks the systemd unit")
	}
	home, user := t.TempDir(), t.TempDir()
	var ran []string
	svc := func(args ...string) result {
		var out, errb bytes.Buffer
		env := &Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Version: "test",
			Getenv: func(k string) string {
				return map[string]string{"HESTIA_HOME": home, "HOME": user, "USER": "anna"}[k]
			},
			serviceRun: func(ctx context.Context, stdout, stderr io.Writer, name string, args ...string) error {
				ran = append(ran, name+" "+strings.Join(args, " "))
				return errors.New("Failed to connect to bus: No medium found")
			},
		}
		code := Main(context.Background(), append([]string{"service"}, args...), env)
		return result{code, out.String(), errb.String()}
	}
	r := svc("install", "--exe", "/usr/local/bin/hestia")
	if r.code != 0 || !strings.Contains(r.stdout, "systemd is not available here") {
		t.Fatalf("install: %+v", r)
	}
	unit := filepath.Join(user, ".config", "systemd", "user", "hestia.service")
	b, err := os.ReadFile(unit)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ExecStart=\"/usr/local/bin/hestia\" serve\n", "Environment=\"HESTIA_HOME=" + home + "\"\n", "Restart=on-failure\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("unit lacks %q:\n%s", want, b)
		}
	}
	if r := svc("status"); r.code != 0 || !strings.Contains(r.stdout, "Installed: "+unit) || !strings.Contains(r.stdout, "systemd is not available here") {
		t.Fatalf("status: %+v", r)
	}
	if r := svc("start"); r.code != 1 || !strings.Contains(r.stderr, "systemd is not available here") {
		t.Fatalf("start: %+v", r)
	}
	if r := svc("logs"); r.code != 1 || !strings.Contains(r.stderr, "log files are in "+filepath.Join(home, "logs")) {
		t.Fatalf("logs: %+v", r)
	}
	if r := svc("uninstall"); r.code != 0 {
		t.Fatalf("uninstall: %+v", r)
	}
	if _, err := os.Stat(unit); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unit left behind: %v", err)
	}
	for _, c := range ran {
		if c != "systemctl --user show-environment" {
			t.Errorf("ran %q without systemd", c)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage: hestia service install"},
		{[]string{"frob"}, `unknown subcommand "frob"`},
		{[]string{"install", "extra"}, `unexpected argument "extra"`},
		{[]string{"logs", "-n", "0"}, "-n must be positive, not 0"},
		{[]string{"status", "--nope"}, "flag provided but not defined: -nope"},
	} {
		if r := svc(c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("service %q: %+v, want exit 2 and %q", c.args, r, c.want)
		}
	}
}

// `hestia restart` against a real daemon: it shuts down, re-executes
// itself in place (same PID, a new start), and answers again.
func TestRestartReexecsDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts daemon processes")
	}
	if runtime.GOOS == "windows" {
		t.Skip("no exec(2)")
	}
	home := t.TempDir()
	env := map[string]string{"HOME": t.TempDir()}
	cmd, base, tok := startDaemonProc(t, home, env)
	before, err := daemonaddr.Read(filepath.Join(home, daemonaddr.FileName))
	if err != nil {
		t.Fatal(err)
	}
	var sys struct {
		StartedAt time.Time `json:"started_at"`
	}
	apiCall(t, base, tok, "GET", "/api/system", "", &sys)
	first := sys.StartedAt

	r := run(t, home, env, "restart")
	if r.code != 0 || !strings.Contains(r.stdout, "Hestia restarted (pid ") {
		t.Fatalf("restart: %+v", r)
	}
	after, err := daemonaddr.Read(filepath.Join(home, daemonaddr.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if after.PID != cmd.Process.Pid || before.PID != cmd.Process.Pid || !after.StartedAt.After(before.StartedAt) {
		t.Fatalf("record before %+v, after %+v, process %d: want the same PID and a later start", before, after, cmd.Process.Pid)
	}
	apiCall(t, after.BaseURL(), tok, "GET", "/api/system", "", &sys)
	if !sys.StartedAt.After(first) {
		t.Fatalf("started_at %s after the restart, %s before", sys.StartedAt, first)
	}
	// The restarted daemon still stops cleanly on SIGTERM.
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the restarted daemon did not stop on SIGTERM")
	}
}
