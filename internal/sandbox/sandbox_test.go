package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary stand in for `hestia sandbox-exec`.
func TestMain(m *testing.M) {
	RunHelperIfAsked()
	os.Exit(m.Run())
}

func helper() []string { return []string{os.Args[0], "sandbox-exec"} }

// fixture is a home with a key, Hestia's data dir, a work folder, and a
// folder outside every root.
type fixture struct {
	home, work, outside, key, token, tmpMarker string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside")}
	f.work = filepath.Join(f.home, "work")
	f.key = filepath.Join(f.home, ".ssh", "id_ed25519")
	f.token = filepath.Join(f.home, ".local", "share", "hestia", "auth-token")
	for p, c := range map[string]string{f.key: "SSH-KEY-SECRET\n", f.token: "TOKEN-SECRET\n", filepath.Join(f.work, "in.txt"): "hello\n", filepath.Join(f.outside, "o.txt"): "outside\n"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := os.CreateTemp("/tmp", "hestia-sandbox-marker-")
	if err != nil {
		t.Fatal(err)
	}
	m.WriteString("TMP-SECRET\n")
	m.Close()
	t.Cleanup(func() { os.Remove(m.Name()) })
	f.tmpMarker = m.Name()
	return f
}

func (f fixture) spec(writable, netOK bool) Spec {
	return Spec{Dir: f.work, Writable: writable, Net: netOK, Read: []string{f.home}, Hide: []string{filepath.Dir(f.key), filepath.Dir(f.token)}}
}

// sh runs a shell script under the sandbox and returns its output and
// whether it exited 0.
func sh(t *testing.T, sb *Sandbox, spec Spec, script string) (string, bool) {
	t.Helper()
	shell := "/bin/sh"
	if strings.Contains(script, "/dev/tcp") || strings.Contains(script, "/dev/udp") {
		shell = "/bin/bash"
	}
	argv, cleanup, err := sb.Wrap(context.Background(), spec, []string{shell, "-c", script})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(spec.Dir), "HESTIA_LLM_API_KEY=sk-leak"}
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func requireMode(t *testing.T, sb *Sandbox, want Mode) {
	t.Helper()
	st := sb.Status(context.Background())
	if st.Mode != want {
		t.Skipf("%s is not available here: %s", want, st)
	}
	t.Logf("sandbox: %s", st)
}

// checkConfined is the boundary every confining mechanism must hold.
func checkConfined(t *testing.T, sb *Sandbox) {
	f := newFixture(t)
	ro, rw := f.spec(false, false), f.spec(true, false)

	if out, ok := sh(t, sb, ro, "cat in.txt"); !ok || out != "hello\n" {
		t.Fatalf("reading the work folder failed: %v %q", ok, out)
	}
	for _, c := range []struct{ what, script string }{
		{"read ~/.ssh", "cat " + f.key},
		{"read Hestia's data", "cat " + f.token},
		{"read the real /tmp", "cat " + f.tmpMarker},
		{"list ~/.ssh contents by reading them", "cat " + filepath.Dir(f.key) + "/*"},
		// Run as root, a program that kept its capabilities could remove
		// the cover bubblewrap puts over a hidden folder.
		{"unmount the cover of ~/.ssh", "umount " + filepath.Dir(f.key) + " 2>/dev/null; cat " + f.key},
	} {
		out, ok := sh(t, sb, rw, c.script)
		if ok || strings.Contains(out, "SECRET") {
			t.Errorf("%s: the sandbox let it through: %q", c.what, out)
		}
	}
	outsideFile := filepath.Join(f.outside, "pwned")
	homeFile := filepath.Join(f.home, "pwned")
	for _, c := range []struct{ what, script, path string }{
		{"write outside the roots", "echo x > " + outsideFile, outsideFile},
		{"write in the home outside the work folder", "echo x > " + homeFile, homeFile},
		{"write into ~/.ssh", "echo x > " + filepath.Dir(f.key) + "/authorized_keys", filepath.Join(filepath.Dir(f.key), "authorized_keys")},
	} {
		if out, ok := sh(t, sb, rw, c.script); ok {
			t.Errorf("%s succeeded: %q", c.what, out)
		}
		if _, err := os.Stat(c.path); err == nil {
			t.Errorf("%s: %s exists", c.what, c.path)
		}
	}
	// The work folder: writable for shell_exec, read-only for shell_run.
	if out, ok := sh(t, sb, rw, "echo made > new.txt && cat new.txt"); !ok || out != "made\n" {
		t.Errorf("writing the work folder (writable) failed: %v %q", ok, out)
	}
	if out, ok := sh(t, sb, ro, "echo x > ro.txt"); ok {
		t.Errorf("writing the work folder (read-only) succeeded: %q", out)
	}
	// With the home itself as the writable working folder, its folders
	// stay writable but nothing new appears directly in it (a start-up
	// file), and the hidden folders stay closed.
	home := rw
	home.Dir = f.home
	if out, ok := sh(t, sb, home, "echo x > work/via-home.txt && cat work/via-home.txt"); !ok || out != "x\n" {
		t.Errorf("writing a folder of the home failed: %v %q", ok, out)
	}
	if out, ok := sh(t, sb, home, "echo x >> .bashrc"); ok {
		t.Errorf("created ~/.bashrc: %q", out)
	}
	if _, err := os.Stat(filepath.Join(f.home, ".bashrc")); err == nil {
		t.Error("~/.bashrc exists")
	}
	if out, ok := sh(t, sb, home, "cat .ssh/id_ed25519; echo x > .ssh/new"); ok || strings.Contains(out, "SECRET") {
		t.Errorf("reached ~/.ssh from the home: %q", out)
	}
	// A private temp folder works.
	if out, ok := sh(t, sb, ro, `t="${TMPDIR:-/tmp}"; echo tmp > "$t/x" && cat "$t/x"`); !ok || out != "tmp\n" {
		t.Errorf("private temp folder: %v %q", ok, out)
	}
	// The environment is cleaned (the helper clears it; bubblewrap relies
	// on its caller, which the shell tests check).
	if sb.Status(context.Background()).Mode != Bubblewrap {
		if out, _ := sh(t, sb, ro, "env"); strings.Contains(out, "sk-leak") {
			t.Errorf("environment leaked: %q", out)
		}
	}
	checkLimits(t, sb, ro)
	checkNetwork(t, sb, f)
}

func checkLimits(t *testing.T, sb *Sandbox, spec Spec) {
	t.Helper()
	spec.Limits = Limits{CPUSeconds: 7, MemoryBytes: 3 << 30, FileBytes: 5 << 20}
	out, ok := sh(t, sb, spec, "cat /proc/$$/limits")
	if !ok {
		t.Fatalf("reading the limits: %q", out)
	}
	for _, want := range []string{`Max cpu time\s+7\s+7`, fmt.Sprintf(`Max address space\s+%d`, 3<<30), fmt.Sprintf(`Max file size\s+%d`, 5<<20)} {
		if !matches(want, out) {
			t.Errorf("limit %q missing in\n%s", want, out)
		}
	}
	// The file-size limit stops a big write.
	spec.Writable = true
	if out, ok := sh(t, sb, spec, "head -c 6000000 /dev/zero > big.bin"); ok {
		t.Errorf("a 6 MB file was written under a 5 MB limit: %q", out)
	}
}

func checkNetwork(t *testing.T, sb *Sandbox, f fixture) {
	t.Helper()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Log("no bash: network attempts not run")
		return
	}
	// A connection or datagram that reached the host is queued on these
	// sockets before the sandboxed program's call returns, so checking
	// them afterwards with a short deadline cannot miss one.
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	udpLn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udpLn.Close()
	accepted := func(wait time.Duration) bool {
		ln.SetDeadline(time.Now().Add(wait))
		c, err := ln.Accept()
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	tcp := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)
	if out, ok := sh(t, sb, f.spec(false, false), tcp); ok || strings.Contains(out, "connected") {
		t.Errorf("a TCP connection was made: %q", out)
	}
	if accepted(100 * time.Millisecond) {
		t.Error("the host's TCP listener was reached")
	}
	// In its own network namespace (bubblewrap) a datagram to 127.0.0.1
	// is sent to the sandbox's own loopback; elsewhere the socket itself
	// is refused. Either way nothing reaches the host.
	udp := fmt.Sprintf("echo x > /dev/udp/127.0.0.1/%d && echo sent", udpLn.LocalAddr().(*net.UDPAddr).Port)
	out, ok := sh(t, sb, f.spec(false, false), udp)
	if sb.Status(context.Background()).Mode != Bubblewrap && (ok || strings.Contains(out, "sent")) {
		t.Errorf("a UDP socket was opened: %q", out)
	}
	udpLn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := udpLn.ReadFromUDP(make([]byte, 16)); err == nil {
		t.Errorf("the host received a %d-byte datagram", n)
	}
	// With the network allowed (shell_exec) the same connection works.
	if out, ok := sh(t, sb, f.spec(true, true), tcp); !ok || !strings.Contains(out, "connected") {
		t.Errorf("with the network allowed the connection failed: %v %q", ok, out)
	}
	if !accepted(30 * time.Second) {
		t.Error("the listener never saw the allowed connection")
	}
}

func TestBubblewrap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("bubblewrap is Linux only")
	}
	sb := &Sandbox{NoLandlock: true}
	if findBin("bwrap") == "" && os.Getenv("HESTIA_REQUIRE_SERVICES") == "1" {
		t.Fatal("bwrap is not installed (.ci/packages.d/sandbox.txt)")
	}
	requireMode(t, sb, Bubblewrap)
	checkConfined(t, sb)
}

func TestLandlock(t *testing.T) {
	sb := &Sandbox{Bwrap: "-", Helper: helper()}
	requireMode(t, sb, Landlock)
	checkConfined(t, sb)
}

// TestFallbacks: without bubblewrap and Landlock the helper still sets
// the limits and cleans the environment, says so, and without a helper
// nothing is wrapped.
func TestFallbacks(t *testing.T) {
	ctx := context.Background()
	sb := &Sandbox{Bwrap: "/nonexistent/bwrap", NoLandlock: true, Helper: helper()}
	st := sb.Status(ctx)
	if st.Mode != RlimitOnly || !strings.Contains(st.Why, "Landlock ruled out") || !strings.Contains(st.String(), "no filesystem or network isolation") {
		t.Fatalf("status %+v", st)
	}
	f := newFixture(t)
	checkLimits(t, sb, f.spec(false, false))
	if out, _ := sh(t, sb, f.spec(false, false), "env"); strings.Contains(out, "sk-leak") || !strings.Contains(out, "TMPDIR=") {
		t.Errorf("environment: %q", out)
	}

	none := &Sandbox{Bwrap: "-"}
	if st := none.Status(ctx); st.Mode != None || !strings.Contains(st.Why, "no sandbox helper") {
		t.Fatalf("status %+v", st)
	}
	argv, _, err := none.Wrap(ctx, f.spec(false, false), []string{"/bin/true"})
	if err != nil || len(argv) != 1 {
		t.Fatalf("%v %v", argv, err)
	}
	// A helper that cannot start leaves the rlimits mode out too.
	broken := &Sandbox{Bwrap: "-", Helper: []string{"/nonexistent/hestia", "sandbox-exec"}}
	if st := broken.Status(ctx); st.Mode != None || !strings.Contains(st.Why, "does not run") {
		t.Fatalf("status %+v", st)
	}
}

func TestWrapRefusesBadSpecs(t *testing.T) {
	sb := &Sandbox{Bwrap: "-", NoLandlock: true, Helper: helper()}
	f := newFixture(t)
	for _, c := range []struct {
		spec Spec
		argv []string
		want string
	}{
		{f.spec(true, false), []string{"true"}, "must be absolute"},
		{Spec{Dir: "work"}, []string{"/bin/true"}, "working folder must be absolute"},
		{Spec{Dir: filepath.Dir(f.key), Hide: []string{filepath.Dir(f.key)}}, []string{"/bin/true"}, "lies in the protected"},
	} {
		if _, _, err := sb.wrap(RlimitOnly, c.spec, c.argv); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v (want %q)", c.spec, err, c.want)
		}
	}
}

func TestHelperRefusesMalformedInvocations(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "usage"},
		{[]string{"--spec", "{", "--", "/bin/true"}, "malformed spec"},
		{[]string{"--spec", `{"mode":"landlock","dir":"/"}`, "--", "true"}, "must be an absolute path"},
		{[]string{"--spec", `{"mode":"chroot","dir":"/"}`, "--", "/bin/true"}, `unknown mode "chroot"`},
	} {
		var b strings.Builder
		if code := Main(c.args, &b); code != 126 || !strings.Contains(b.String(), c.want) {
			t.Errorf("%q: %d %q (want %q)", c.args, code, b.String(), c.want)
		}
	}
}

func matches(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
