//go:build linux

package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// newWorkerSandbox is a bubblewrap sandbox whose workers are this test
// binary (TestMain answers `sandbox-exec --worker`).
func newWorkerSandbox(t *testing.T) *Sandbox {
	t.Helper()
	sb := &Sandbox{NoLandlock: true, Helper: helper()}
	requireMode(t, sb, Bubblewrap)
	t.Cleanup(func() { sb.Close() })
	return sb
}

// warm starts a worker for spec and fails the test if none starts.
func warm(t *testing.T, sb *Sandbox, spec Spec) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sb.Warm(ctx, spec); err != nil {
		t.Fatalf("starting a worker: %v", err)
	}
}

// runW runs a pipeline of shell scripts in a worker, as shell.Runner does:
// pipes between the programs, the last one's stdout and all stderr
// collected. It fails the test when no worker takes the call.
func runW(t *testing.T, sb *Sandbox, spec Spec, timeout time.Duration, scripts ...string) (out string, exits []string) {
	t.Helper()
	out, exits, err := tryRunW(sb, spec, timeout, scripts...)
	if err != nil {
		t.Fatalf("%q: %v", scripts, err)
	}
	return out, exits
}

func tryRunW(sb *Sandbox, spec Spec, timeout time.Duration, scripts ...string) (string, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	outR, outW, err := os.Pipe()
	if err != nil {
		return "", nil, err
	}
	defer outR.Close()
	defer outW.Close()
	jobs := make([]Job, len(scripts))
	for i, s := range scripts {
		shell := "/bin/sh"
		if strings.Contains(s, "/dev/tcp") {
			shell = "/bin/bash"
		}
		jobs[i] = Job{Argv: []string{shell, "-c", s}, Stdout: outW, Stderr: outW}
	}
	var extra []*os.File
	for i := 0; i < len(jobs)-1; i++ {
		pr, pw, err := os.Pipe()
		if err != nil {
			return "", nil, err
		}
		extra = append(extra, pr, pw)
		jobs[i].Stdout, jobs[i+1].Stdin = pw, pr
	}
	defer func() {
		for _, f := range extra {
			f.Close()
		}
	}()
	var b strings.Builder
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); io.Copy(&b, outR) }()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Dir(spec.Dir), "HESTIA_LLM_API_KEY=sk-leak"}
	exits, err := sb.Run(ctx, spec, env, jobs)
	outW.Close()
	for _, f := range extra {
		f.Close()
	}
	if err != nil {
		outR.Close()
		wg.Wait()
		return "", nil, err
	}
	wg.Wait()
	return b.String(), exits, nil
}

// pidNS names the pid namespace a call ran in.
func pidNS(t *testing.T, sb *Sandbox, spec Spec) string {
	t.Helper()
	out, exits := runW(t, sb, spec, 30*time.Second, "readlink /proc/self/ns/pid")
	if exits[0] != "0" || !strings.HasPrefix(out, "pid:[") {
		t.Fatalf("pid namespace: %v %q", exits, out)
	}
	return strings.TrimSpace(out)
}

// TestWorkerServesCalls: calls after the first reuse one worker, which
// is pid 1 of the sandbox; pipelines and exits come back as programs
// give them, and the environment is cleaned.
func TestWorkerServesCalls(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	// Before any worker exists a call is left to the one-shot path, and
	// starts a worker in the background.
	if _, _, err := tryRunW(sb, spec, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("a call without a worker: %v (want ErrNoWorker)", err)
	}
	warm(t, sb, spec)
	ns := pidNS(t, sb, spec)
	for i := range 3 {
		out, exits := runW(t, sb, spec, 30*time.Second, "cat in.txt; echo err >&2", "tr a-z A-Z", "cat; exit 3")
		if out != "err\nHELLO\n" && out != "HELLO\nerr\n" {
			t.Errorf("call %d: %q", i, out)
		}
		if strings.Join(exits, " ") != "0 0 3" {
			t.Errorf("call %d: exits %v", i, exits)
		}
	}
	if got := pidNS(t, sb, spec); got != ns {
		t.Errorf("the calls ran in different namespaces: %s, %s", ns, got)
	}
	if out, _ := runW(t, sb, spec, 30*time.Second, "tr '\\0' ' ' < /proc/1/cmdline"); !strings.Contains(out, "sandbox-exec --worker") {
		t.Errorf("pid 1 is not the worker: %q", out)
	}
	if out, _ := runW(t, sb, spec, 30*time.Second, "env"); strings.Contains(out, "sk-leak") || !strings.Contains(out, "PATH=") {
		t.Errorf("environment: %q", out)
	}
	if n := sb.WorkerCount(); n != 1 {
		t.Errorf("%d workers, want 1", n)
	}
	if n := sb.WorkerCalls(); n < 7 {
		t.Errorf("%d calls served by the worker, want at least 7", n)
	}
	// A program that does not exist fails like a missing command.
	if _, exits := runW(t, sb, spec, 30*time.Second, "true"); exits[0] != "0" {
		t.Fatal(exits)
	}
	j := []Job{{Argv: []string{"/nonexistent/prog"}}}
	if exits, err := sb.Run(context.Background(), spec, nil, j); err != nil || exits[0] != "127" {
		t.Errorf("a missing program: %v %v", exits, err)
	}
}

// TestWorkerConfines: the worker's programs get the one-shot path's
// boundary: no secrets, no writes outside /tmp, no network, the limits.
func TestWorkerConfines(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	spec.Limits = Limits{CPUSeconds: 7, MemoryBytes: 3 << 30, FileBytes: 5 << 20, OpenFiles: 512}
	warm(t, sb, spec)
	ok := func(exits []string) bool { return exits[len(exits)-1] == "0" }
	for _, c := range []struct{ what, script string }{
		{"read ~/.ssh", "cat " + f.key},
		{"read Hestia's data", "cat " + f.token},
		{"read the real /tmp", "cat " + f.tmpMarker},
		{"write the work folder", "echo x > " + filepath.Join(f.work, "new.txt")},
		{"write outside the roots", "echo x > " + filepath.Join(f.outside, "pwned")},
		{"write /", "echo x > /pwned"},
		{"write /dev", "echo x > /dev/pwned"},
	} {
		out, exits := runW(t, sb, spec, 30*time.Second, c.script)
		if ok(exits) || strings.Contains(out, "SECRET") {
			t.Errorf("%s: the worker let it through: %v %q", c.what, exits, out)
		}
	}
	out, exits := runW(t, sb, spec, 30*time.Second, "cat /proc/self/limits")
	if !ok(exits) {
		t.Fatalf("limits: %q", out)
	}
	for _, want := range []string{`Max cpu time\s+7\s+7`, fmt.Sprintf(`Max address space\s+%d\s+%d`, 3<<30, 3<<30), fmt.Sprintf(`Max file size\s+%d`, 5<<20), `Max open files\s+512\s+512`} {
		if !matches(want, out) {
			t.Errorf("limit %q missing in\n%s", want, out)
		}
	}
	if out, exits := runW(t, sb, spec, 30*time.Second, "head -c 6000000 /dev/zero > /tmp/big.bin"); ok(exits) {
		t.Errorf("a 6 MB file was written under a 5 MB limit: %q", out)
	}
	if out, exits := runW(t, sb, spec, 30*time.Second, "exec 3>&-; cat < /dev/null; ulimit -t"); !ok(exits) || strings.TrimSpace(out) != "7" {
		t.Errorf("CPU limit seen by the program: %v %q", exits, out)
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		tcp := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", ln.Addr().(*net.TCPAddr).Port)
		if out, exits := runW(t, sb, spec, 30*time.Second, tcp); ok(exits) || strings.Contains(out, "connected") {
			t.Errorf("a TCP connection was made: %q", out)
		}
		ln.SetDeadline(time.Now().Add(100 * time.Millisecond))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Error("the host's listener was reached")
		}
	}
}

// TestWorkerIsolatesCalls: nothing one call leaves behind (a process in
// a new session, a file in /tmp, System V IPC objects) reaches the next, and a program can
// neither reach the worker's descriptors nor stop or kill it.
func TestWorkerIsolatesCalls(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	warm(t, sb, spec)
	ns := pidNS(t, sb, spec)
	// A daemonised leftover and a file in /tmp.
	out, exits := runW(t, sb, spec, 30*time.Second, "echo left > /tmp/left; setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo started")
	if exits[0] != "0" || !strings.Contains(out, "started") {
		t.Fatalf("%v %q", exits, out)
	}
	if _, err := os.Stat("/usr/bin/ipcmk"); err == nil {
		if out, exits := runW(t, sb, spec, 30*time.Second, "ipcmk -M 4096 && ipcmk -Q && ipcmk -S 1"); exits[0] != "0" {
			t.Fatalf("making System V objects: %q", out)
		}
	}
	out, _ = runW(t, sb, spec, 30*time.Second, "find /tmp -type f; for p in /proc/[0-9]*; do cat $p/comm; done; tail -n +2 /proc/sysvipc/shm /proc/sysvipc/msg /proc/sysvipc/sem | grep '[0-9]' && echo ipc-left")
	if strings.Contains(out, "left") || strings.Contains(out, "sleep") {
		t.Errorf("the next call sees what the last one left: %q", out)
	}
	// Only stdin, stdout and stderr are open in a program (the shell
	// opens one more for the listing itself).
	out, _ = runW(t, sb, spec, 30*time.Second, "ls /proc/self/fd")
	if fds := strings.Fields(out); len(fds) > 4 {
		t.Errorf("a program holds more than its three descriptors: %q", out)
	}
	for _, c := range []struct{ what, script string }{
		{"write to the worker's socket", "echo '{\"id\":1,\"kill\":true}' >&3"},
		{"write to descriptor 4", "echo x >&4"},
		{"open the worker's descriptors", "ls /proc/1/fd/ && cat /proc/1/fd/3"},
		{"read the worker's environment", "cat /proc/1/environ"},
		{"read the worker's memory", "head -c 1 /proc/1/mem"},
	} {
		out, exits := runW(t, sb, spec, 30*time.Second, c.script)
		if exits[0] == "0" {
			t.Errorf("%s: succeeded: %q", c.what, out)
		}
	}
	// Signals to the worker do not end it.
	var kills []string
	for _, sig := range strings.Fields("STOP TERM INT HUP USR1 USR2 SEGV BUS ILL FPE ABRT QUIT TRAP SYS PIPE XCPU XFSZ PROF URG CHLD ALRM TSTP TTIN TTOU KILL") {
		kills = append(kills, "kill -"+sig+" 1")
	}
	runW(t, sb, spec, 30*time.Second, strings.Join(kills, "; ")+"; true")
	if got := pidNS(t, sb, spec); got != ns {
		t.Errorf("the worker was replaced after signals: %s, then %s", ns, got)
	}
	if n := sb.WorkerCount(); n != 1 {
		t.Errorf("%d workers, want 1", n)
	}
}

// TestWorkerTimeout: at the deadline the call's programs die, those that
// left their process group too, and the worker serves the next call.
func TestWorkerTimeout(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	warm(t, sb, spec)
	ns := pidNS(t, sb, spec)
	start := time.Now()
	_, exits := runW(t, sb, spec, 500*time.Millisecond, "setsid sleep 300 & sleep 300", "cat")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the call took %s past a 500 ms deadline", d)
	}
	if exits[0] != "signal: killed" {
		t.Errorf("exits after the timeout: %v", exits)
	}
	out, _ := runW(t, sb, spec, 30*time.Second, "for p in /proc/[0-9]*; do cat $p/comm; done")
	if strings.Contains(out, "sleep") {
		t.Errorf("a program outlived its call: %q", out)
	}
	if got := pidNS(t, sb, spec); got != ns {
		t.Errorf("the worker did not survive the timeout: %s, then %s", ns, got)
	}
}

// TestWorkerRestarts: a worker that dies is dropped, the next call runs
// the one-shot way, and a new worker takes over.
func TestWorkerRestarts(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	warm(t, sb, spec)
	ns := pidNS(t, sb, spec)
	sb.workers.mu.Lock()
	w := sb.workers.all[0]
	sb.workers.mu.Unlock()
	w.cmd.Process.Kill()
	<-w.done
	if _, _, err := tryRunW(sb, spec, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("a call after the worker died: %v (want ErrNoWorker)", err)
	}
	warm(t, sb, spec)
	if got := pidNS(t, sb, spec); got == ns {
		t.Errorf("still the dead worker's namespace %s", ns)
	}
}

// TestWorkerPerSpec: a call for another spec, or after a hidden path
// appeared, never goes to a worker built for something else.
func TestWorkerPerSpec(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	a := f.spec(false, false)
	aws := filepath.Join(f.home, ".aws")
	a.Hide = append(a.Hide, aws)
	warm(t, sb, a)
	nsA := pidNS(t, sb, a)
	b := a
	b.Limits.CPUSeconds = 9
	if _, _, err := tryRunW(sb, b, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("a call for another spec: %v (want ErrNoWorker)", err)
	}
	warm(t, sb, b)
	if nsB := pidNS(t, sb, b); nsB == nsA {
		t.Errorf("two specs share the namespace %s", nsA)
	}
	if out, _ := runW(t, sb, b, 30*time.Second, "ulimit -t"); strings.TrimSpace(out) != "9" {
		t.Errorf("spec b's CPU limit: %q", out)
	}
	// ~/.aws is created after the worker started: a worker built before
	// would show it, so the call goes elsewhere.
	if err := os.MkdirAll(aws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("AWS-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tryRunW(sb, a, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("a call after a hidden path appeared: %v (want ErrNoWorker)", err)
	}
	warm(t, sb, a)
	if out, _ := runW(t, sb, a, 30*time.Second, "cat "+filepath.Join(aws, "credentials")); strings.Contains(out, "SECRET") {
		t.Errorf("the new hidden folder is readable: %q", out)
	}
	// The worker itself refuses a call for a spec it was not built for.
	w := sb.workers.take(keyOf(a))
	if w == nil {
		t.Fatal("no idle worker for spec a")
	}
	w.sum = "another"
	_, err := w.run(context.Background(), nil, []Job{{Argv: []string{"/bin/true"}}})
	sb.release(w)
	if err == nil || !strings.Contains(err.Error(), "another spec") {
		t.Errorf("a call for another spec: %v", err)
	}
	// Writable or networked specs (shell_exec) never use a worker.
	for _, s := range []Spec{f.spec(true, false), f.spec(false, true)} {
		if _, _, err := tryRunW(sb, s, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
			t.Errorf("%+v: %v (want ErrNoWorker)", s, err)
		}
	}
}

func keyOf(s Spec) string {
	s, _ = normalize(s)
	js, _ := json.Marshal(s)
	k, _ := workerKey(s, js)
	return k
}

// TestWorkerIdleAndClose: an unused worker goes away, and Close stops
// the rest; afterwards calls run the one-shot way.
func TestWorkerIdleAndClose(t *testing.T) {
	sb := newWorkerSandbox(t)
	sb.WorkerIdle = 200 * time.Millisecond
	f := newFixture(t)
	spec := f.spec(false, false)
	warm(t, sb, spec)
	deadline := time.Now().Add(10 * time.Second)
	for sb.WorkerCount() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := sb.WorkerCount(); n != 0 {
		t.Fatalf("%d workers left after the idle time", n)
	}
	sb.WorkerIdle = time.Minute
	warm(t, sb, spec)
	sb.Close()
	if n := sb.WorkerCount(); n != 0 {
		t.Errorf("%d workers after Close", n)
	}
	if _, _, err := tryRunW(sb, spec, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Errorf("a call after Close: %v", err)
	}
}

// TestWorkerRefusesOutsideItsNamespace: started directly (not as pid 1
// of a namespace of its own) the worker refuses to serve, since it kills
// every process it can see after each call.
func TestWorkerRefusesOutsideItsNamespace(t *testing.T) {
	var b strings.Builder
	if code := Main([]string{"--worker", `{"dir":"/"}`}, &b); code != 126 || !strings.Contains(b.String(), "not pid 1") {
		t.Errorf("%d %q", code, b.String())
	}
	for _, args := range [][]string{{"--worker"}, {"--worker", "{"}, {"--worker", `{"dir":"rel"}`}, {"--worker", `{"dir":"/","rw":true}`}, {"--worker", `{"dir":"/","net":true}`}} {
		b.Reset()
		if code := Main(args, &b); code != 126 {
			t.Errorf("%q: %d %q", args, code, b.String())
		}
	}
}

// TestWorkerStartFails: a helper that does not serve (here true(1)) gives
// no worker, and calls keep running the one-shot way.
func TestWorkerStartFails(t *testing.T) {
	sb := &Sandbox{NoLandlock: true, Helper: []string{"/bin/true", "sandbox-exec"}}
	requireMode(t, sb, Bubblewrap)
	t.Cleanup(func() { sb.Close() })
	f := newFixture(t)
	spec := f.spec(false, false)
	if err := sb.Warm(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("warming with a helper that does not serve: %v", err)
	}
	if _, _, err := tryRunW(sb, spec, 30*time.Second, "true"); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("a call: %v (want ErrNoWorker)", err)
	}
	if n := sb.WorkerCount(); n != 0 {
		t.Errorf("%d workers", n)
	}
	if out, ok := sh(t, sb, spec, "cat in.txt"); !ok || out != "hello\n" {
		t.Errorf("the one-shot path: %v %q", ok, out)
	}
}

// TestWorkerConcurrentCalls: calls at the same time never share a worker
// (each gets one of its own or runs the one-shot way), and all succeed.
func TestWorkerConcurrentCalls(t *testing.T) {
	sb := newWorkerSandbox(t)
	f := newFixture(t)
	spec := f.spec(false, false)
	warm(t, sb, spec)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 8 {
				out, exits, err := tryRunW(sb, spec, 30*time.Second, "cat in.txt", "cat")
				switch {
				case errors.Is(err, ErrNoWorker):
					time.Sleep(20 * time.Millisecond) // the one-shot call's time
				case err != nil:
					errs <- fmt.Errorf("goroutine %d call %d: %w", g, i, err)
				case out != "hello\n" || strings.Join(exits, " ") != "0 0":
					errs <- fmt.Errorf("goroutine %d call %d: %v %q", g, i, exits, out)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := sb.WorkerCount(); n > maxWorkers {
		t.Errorf("%d workers, at most %d", n, maxWorkers)
	}
	t.Logf("%d calls served by %d workers", sb.WorkerCalls(), sb.WorkerCount())
}
