package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRun records commands; fail lists the commands (name + args) that fail.
type fakeRun struct {
	calls []string
	fail  map[string]bool
}

func (f *fakeRun) run(ctx context.Context, stdout, stderr io.Writer, name string, args ...string) error {
	c := strings.TrimSpace(name + " " + strings.Join(args, " "))
	f.calls = append(f.calls, c)
	if f.fail[c] {
		fmt.Fprintln(stderr, "Failed to connect to bus: No medium found")
		return errors.New("exit status 1")
	}
	return nil
}

func manager(t *testing.T, goos string, f *fakeRun) (*Manager, *strings.Builder) {
	t.Helper()
	home := t.TempDir()
	out := &strings.Builder{}
	return &Manager{
		GOOS: goos, UserHome: home, UID: 501, User: "anna",
		Spec: Spec{Exe: "/opt/hestia 1/bin/hestia", HestiaHome: "/home/anna/100% hestia", LogDir: filepath.Join(home, "logs")},
		Run:  f.run, Stdout: out, Stderr: out,
	}, out
}

func TestUnitContent(t *testing.T) {
	t.Parallel()
	u, err := Unit(Spec{Exe: "/usr/local/bin/hestia", HestiaHome: `/srv/a "b"%$x`})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"\nExecStart=\"/usr/local/bin/hestia\" serve\n",
		"\nEnvironment=\"HESTIA_HOME=/srv/a \\\"b\\\"%%$x\"\n",
		"\nRestart=on-failure\n",
		"\n[Install]\nWantedBy=default.target\n",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("unit lacks %q:\n%s", want, u)
		}
	}
	// $ in ExecStart is variable expansion: doubled there.
	u, _ = Unit(Spec{Exe: "/a$b/hestia"})
	if !strings.Contains(u, `ExecStart="/a$$b/hestia" serve`) || strings.Contains(u, "HESTIA_HOME") {
		t.Errorf("unit:\n%s", u)
	}
}

func TestPlistContent(t *testing.T) {
	t.Parallel()
	p, err := Plist(Spec{Exe: "/Users/a&b/bin/hestia", HestiaHome: "/Users/a/h<", LogDir: "/Users/a/logs"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"<key>Label</key>\n\t<string>dev.hestia.daemon</string>",
		"<string>/Users/a&amp;b/bin/hestia</string>\n\t\t<string>serve</string>",
		"<key>HESTIA_HOME</key>\n\t\t<string>/Users/a/h&lt;</string>",
		"<key>SuccessfulExit</key>\n\t\t<false/>",
		"<key>StandardErrorPath</key>\n\t<string>/Users/a/logs/launchd.log</string>",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("plist lacks %q:\n%s", want, p)
		}
	}
	if plutil, err := exec.LookPath("plutil"); err == nil {
		f := filepath.Join(t.TempDir(), "x.plist")
		os.WriteFile(f, []byte(p), 0o644)
		if out, err := exec.Command(plutil, "-lint", f).CombinedOutput(); err != nil {
			t.Errorf("plutil -lint: %v: %s", err, out)
		}
	}
}

func TestSpecRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{Exe: "hestia"}, `executable path "hestia" is not absolute`},
		{Spec{Exe: "/bin/hestia\nExecStartPre=/bin/rm"}, "contains a newline"},
		{Spec{Exe: "/bin/hestia", HestiaHome: "rel/home"}, `HESTIA_HOME "rel/home" is not absolute`},
		{Spec{Exe: "/bin/hestia", HestiaHome: "/h\x00"}, "contains a newline or NUL"},
	} {
		if _, err := Unit(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Unit(%q): %v, want %q", c.spec, err, c.want)
		}
		if _, err := Plist(c.spec); err == nil {
			t.Errorf("Plist(%q) accepted", c.spec)
		}
	}
	if _, err := Plist(Spec{Exe: "/bin/hestia"}); err == nil || !strings.Contains(err.Error(), "no log directory") {
		t.Errorf("Plist without a log dir: %v", err)
	}
}

// Without a systemd user instance (containers, CI) install still writes
// the unit and says how to start it; status says systemd is missing;
// uninstall removes the file.
func TestLinuxWithoutSystemd(t *testing.T) {
	t.Parallel()
	f := &fakeRun{fail: map[string]bool{"systemctl --user show-environment": true}}
	m, out := manager(t, "linux", f)
	if err := m.Install(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.UserHome, ".config", "systemd", "user", "hestia.service")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Unit(m.Spec)
	if string(b) != want || !strings.Contains(string(b), `ExecStart="/opt/hestia 1/bin/hestia" serve`) || !strings.Contains(string(b), `HESTIA_HOME=/home/anna/100%% hestia`) {
		t.Fatalf("unit file:\n%s", b)
	}
	if s := out.String(); !strings.Contains(s, "systemd is not available here") || !strings.Contains(s, "systemctl --user daemon-reload && systemctl --user enable --now hestia.service") {
		t.Fatalf("install said: %s", s)
	}
	out.Reset()
	if err := m.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "Installed: "+path) || !strings.Contains(s, "systemd is not available here") {
		t.Fatalf("status said: %s", s)
	}
	for name, op := range map[string]func(context.Context) error{"start": m.Start, "stop": m.Stop, "logs": func(ctx context.Context) error { return m.Logs(ctx, 10, false) }} {
		if err := op(context.Background()); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s without systemd: %v", name, err)
		}
	}
	out.Reset()
	if err := m.Uninstall(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unit still there: %v", err)
	}
	for _, c := range f.calls {
		if c != "systemctl --user show-environment" {
			t.Errorf("ran %q without systemd", c)
		}
	}
	// A second uninstall, and start with nothing installed.
	out.Reset()
	if err := m.Uninstall(context.Background()); err != nil || !strings.Contains(out.String(), "No service installed") {
		t.Fatalf("second uninstall: %v %s", err, out)
	}
	if err := m.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "run `hestia service install` first") {
		t.Fatalf("start before install: %v", err)
	}
}

// With systemd, the commands are the ones a user would type.
func TestLinuxWithSystemd(t *testing.T) {
	t.Parallel()
	f := &fakeRun{}
	m, out := manager(t, "linux", f)
	m.ConfigHome = filepath.Join(m.UserHome, "xdg")
	ctx := context.Background()
	if err := m.Install(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "loginctl enable-linger anna") {
		t.Fatalf("no linger hint: %s", out)
	}
	if _, err := os.Stat(filepath.Join(m.ConfigHome, "systemd", "user", UnitName)); err != nil {
		t.Fatal(err)
	}
	m.Start(ctx)
	m.Stop(ctx)
	m.Status(ctx)
	m.Logs(ctx, 50, true)
	if err := m.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range f.calls {
		if c != "systemctl --user show-environment" {
			got = append(got, c)
		}
	}
	want := []string{
		"systemctl --user daemon-reload",
		"systemctl --user enable --now hestia.service",
		"systemctl --user start hestia.service",
		"systemctl --user stop hestia.service",
		"systemctl --user status --no-pager hestia.service",
		"journalctl --user -u hestia.service --no-pager -n 50 -f",
		"systemctl --user disable --now hestia.service",
		"systemctl --user daemon-reload",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ran:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := m.Logs(ctx, 0, false); err == nil {
		t.Fatal("logs -n 0 accepted")
	}
}

func TestDarwin(t *testing.T) {
	t.Parallel()
	f := &fakeRun{fail: map[string]bool{"launchctl bootout gui/501/dev.hestia.daemon": true}}
	m, _ := manager(t, "darwin", f)
	ctx := context.Background()
	if err := m.Install(ctx, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(m.UserHome, "Library", "LaunchAgents", "dev.hestia.daemon.plist")
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "<string>/opt/hestia 1/bin/hestia</string>") {
		t.Fatalf("plist: %v\n%s", err, b)
	}
	m.Logs(ctx, 20, false)
	if err := m.Uninstall(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("plist still there: %v", err)
	}
	want := []string{
		"launchctl bootout gui/501/dev.hestia.daemon",
		"launchctl bootstrap gui/501 " + path,
		"tail -n 20 " + filepath.Join(m.Spec.LogDir, "launchd.log"),
		"launchctl bootout gui/501/dev.hestia.daemon",
	}
	if strings.Join(f.calls, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ran:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), strings.Join(want, "\n"))
	}
}

func TestUnsupportedOS(t *testing.T) {
	t.Parallel()
	m, _ := manager(t, "windows", &fakeRun{})
	if err := m.Install(context.Background(), true); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "windows") {
		t.Fatalf("install on windows: %v", err)
	}
}

// systemd-analyze verify checks the written unit where systemd is installed.
func TestUnitVerifies(t *testing.T) {
	t.Parallel()
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed: the unit's syntax is checked only by TestUnitContent")
	}
	dir := t.TempDir()
	// A real executable, as verify checks that ExecStart's program exists.
	exe := filepath.Join(dir, "bin dir", "hestia")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	u, err := Unit(Spec{Exe: exe, HestiaHome: filepath.Join(dir, "home%1")})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, UnitName)
	os.WriteFile(path, []byte(u), 0o644)
	cmd := exec.Command(sa, "verify", "--user", path)
	// --user needs a runtime directory even when no user instance runs.
	rt := filepath.Join(dir, "run")
	os.Mkdir(rt, 0o700)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s\n%s", err, out, u)
	}
	if strings.Contains(string(out), UnitName) {
		t.Fatalf("systemd-analyze verify warns about the unit:\n%s", out)
	}
}
