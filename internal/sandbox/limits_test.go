package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// confiningSandboxes are the mechanisms this machine has, each with
// per-call cgroups on (as the daemon runs them).
func confiningSandboxes() map[Mode]*Sandbox {
	return map[Mode]*Sandbox{
		Bubblewrap: {NoLandlock: true, Helper: helper(), NoWorker: true, Cgroups: true},
		Landlock:   {Bwrap: "-", Helper: helper(), Cgroups: true},
		RlimitOnly: {Bwrap: "-", NoLandlock: true, Helper: helper(), Cgroups: true},
	}
}

// TestTmpCapped: the private temp folder cannot fill its device: under
// bubblewrap /tmp is a sized tmpfs, and so is the helper's temp folder
// when the daemon runs as root (which can mount one).
func TestTmpCapped(t *testing.T) {
	for mode, sb := range confiningSandboxes() {
		t.Run(string(mode), func(t *testing.T) {
			requireMode(t, sb, mode)
			if mode != Bubblewrap && os.Getuid() != 0 {
				t.Skip("only root can mount a sized temp folder without bubblewrap")
			}
			f := newFixture(t)
			spec := f.spec(false, false)
			spec.Limits = Limits{TmpBytes: 4 << 20}
			out, ok := sh(t, sb, spec, `d=${TMPDIR:-/tmp}; head -c 8000000 /dev/zero > "$d/big" && echo written`)
			if ok || strings.Contains(out, "written") {
				t.Fatalf("8 MB were written into a 4 MiB temp folder: %q", out)
			}
			if !strings.Contains(out, "No space left") {
				t.Errorf("want a full device: %q", out)
			}
			if !strings.Contains(sb.Status(context.Background()).Limits, "tmp 256 MiB (tmpfs") {
				t.Errorf("limits: %s", sb.Status(context.Background()).Limits)
			}
		})
	}
}

// TestDescendantsKilled: a program's background child does not outlive
// the call under bubblewrap (pid namespace) nor, where a cgroup is made
// for each call, under Landlock or the rlimits-only helper.
func TestDescendantsKilled(t *testing.T) {
	type variant struct {
		name string
		mode Mode
		sb   *Sandbox
	}
	var vs []variant
	for mode, sb := range confiningSandboxes() {
		vs = append(vs, variant{string(mode), mode, sb})
	}
	// Without a cgroup the helper reaps the call's processes itself.
	vs = append(vs, variant{"landlock-no-cgroup", Landlock, &Sandbox{Bwrap: "-", Helper: helper()}},
		variant{"rlimits-no-cgroup", RlimitOnly, &Sandbox{Bwrap: "-", NoLandlock: true, Helper: helper()}})
	for _, v := range vs {
		mode, sb := v.mode, v.sb
		t.Run(v.name, func(t *testing.T) {
			requireMode(t, sb, mode)
			st := sb.Status(context.Background())
			cgroup := sb.cg != nil && sb.cg.dir != ""
			if mode != Bubblewrap && !cgroup && !strings.Contains(st.Limits, "descendants killed (the helper stays as their subreaper)") {
				t.Errorf("without a cgroup the helper must reap: %s", st.Limits)
			}
			f := newFixture(t)
			spec := f.spec(true, false)
			// The child writes its pid (as the host sees it, through a
			// file in the work folder), then sleeps.
			argv, cleanup, err := sb.Wrap(context.Background(), spec, []string{"/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid"})
			if err != nil {
				t.Fatal(err)
			}
			if out, err := runArgv(argv, spec.Dir); err != nil {
				cleanup()
				t.Fatalf("%v %q", err, out)
			}
			if mode == Bubblewrap {
				// Inside its pid namespace the pid means nothing here;
				// look for the sleeper by its command line instead.
				cleanup()
				waitGone(t, func() bool { return sleeperRunning(f.work) })
				return
			}
			b, _ := os.ReadFile(spec.Dir + "/bg.pid")
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				cleanup()
				t.Fatalf("no pid: %q", b)
			}
			if cgroup && syscall.Kill(pid, 0) != nil {
				t.Fatalf("the background child %d had already ended", pid)
			}
			if !cgroup {
				// The helper killed it before it exited: gone already,
				// before any cleanup.
				waitGone(t, func() bool { return syscall.Kill(pid, 0) == nil && !zombie(pid) })
			}
			cleanup()
			waitGone(t, func() bool { return syscall.Kill(pid, 0) == nil && !zombie(pid) })
			if cgroup && !strings.Contains(st.Limits, "descendants killed (cgroup)") {
				t.Errorf("limits: %s", st.Limits)
			}
		})
	}
}

// TestCgroupLimits: with the memory and pids controllers delegated, a
// call's processes together stay under memory.max and pids.max.
func TestCgroupLimits(t *testing.T) {
	sb := &Sandbox{Bwrap: "-", Helper: helper(), Cgroups: true}
	st := sb.Status(context.Background())
	if sb.cg == nil || !sb.cg.memory || !sb.cg.pid {
		t.Skipf("no cgroup v2 memory and pids controllers here: %s", st.Limits)
	}
	f := newFixture(t)
	spec := f.spec(true, false)
	spec.Limits = Limits{Procs: 16, CallMemoryBytes: 64 << 20}
	if out, ok := sh(t, sb, spec, "for i in $(seq 40); do sleep 5 & done; wait"); ok {
		t.Errorf("40 processes ran under pids.max 16: %q", out)
	}
	// One process of 100 MB, well under its own address-space limit,
	// over the call's 64 MiB.
	if out, _ := sh(t, sb, spec, `x=$(head -c 100000000 /dev/zero | tr '\0' a); echo ${#x}`); strings.Contains(out, "100000000") {
		t.Errorf("100 MB were held under memory.max 64 MiB: %q", out)
	}
	if !strings.Contains(st.Limits, "memory 1 GiB per call (cgroup)") || !strings.Contains(st.Limits, "processes 128 (cgroup)") {
		t.Errorf("limits: %s", st.Limits)
	}
}

func runArgv(argv []string, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func waitGone(t *testing.T, alive func() bool) {
	t.Helper()
	for range 100 {
		if !alive() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("a background child outlived the call")
}

func zombie(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

// sleeperRunning reports a `sleep 300` whose working folder is dir.
func sleeperRunning(dir string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		cwd, _ := os.Readlink("/proc/" + e.Name() + "/cwd")
		if string(cmd) == "sleep\x00300\x00" && cwd == dir && !zombie(mustAtoi(e.Name())) {
			return true
		}
	}
	return false
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }
