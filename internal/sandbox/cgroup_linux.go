package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Per-call cgroups (v2).
//
// Resource limits are per process, and root is exempt from RLIMIT_NPROC,
// so they bound neither a call's total memory nor its process count, and
// nothing of theirs ends a program's background children. A cgroup does
// all three: memory.max and pids.max bound everything the call starts, and
// cgroup.kill (or killing each member) ends whatever is left when the
// call ends. The cgroups are made under the daemon's own cgroup, which
// must be writable (root, or systemd's Delegate=yes); a cgroup holding
// processes cannot hand controllers to children, so the daemon first
// moves itself into a leaf of its own (what systemd asks of delegated
// services).

// cgroupParent is the folder under the daemon's cgroup holding the calls'.
const cgroupParent = "hestia-sandbox"

// cgroups is where this Sandbox makes the calls' cgroups.
type cgroups struct {
	dir         string // the calls' parent; "" when there is none
	memory, pid bool   // the controllers enabled for the calls
	why         string // what is missing, for Status
}

// detectCgroups finds (and prepares) a writable cgroup v2 folder for the
// calls' cgroups.
func detectCgroups() *cgroups {
	c := &cgroups{}
	mnt := cgroup2Mount()
	if mnt == "" {
		c.why = "no cgroup v2 hierarchy is mounted"
		return c
	}
	own, err := ownCgroup()
	if err != nil {
		c.why = err.Error()
		return c
	}
	base := filepath.Join(mnt, own)
	if err := syscall.Access(base, 2 /* W_OK */); err != nil {
		c.why = fmt.Sprintf("the daemon's cgroup %s is not writable (no delegation; under systemd use Delegate=yes)", base)
		return c
	}
	avail := strings.Fields(readTrim(filepath.Join(base, "cgroup.controllers")))
	want := []string{}
	for _, ctl := range []string{"memory", "pids"} {
		if slices.Contains(avail, ctl) {
			want = append(want, "+"+ctl)
		}
	}
	if len(want) > 0 {
		if err := enable(base, want); errors.Is(err, syscall.EBUSY) {
			// Processes in base itself (the daemon): move them to a leaf.
			leaf := filepath.Join(base, "hestia-daemon")
			if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				c.why = fmt.Sprintf("making %s: %v", leaf, err)
				return c
			}
			if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
				c.why = fmt.Sprintf("moving the daemon into %s: %v", leaf, err)
				return c
			}
			err = enable(base, want)
			if err != nil {
				want = nil
				c.why = fmt.Sprintf("enabling the memory and pids controllers in %s: %v", base, err)
			}
		} else if err != nil {
			want = nil
			c.why = fmt.Sprintf("enabling the memory and pids controllers in %s: %v", base, err)
		}
	}
	dir := filepath.Join(base, cgroupParent)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		c.why = fmt.Sprintf("making %s: %v", dir, err)
		return c
	}
	if len(want) > 0 {
		if err := enable(dir, want); err != nil {
			want = nil
			c.why = fmt.Sprintf("enabling the controllers in %s: %v", dir, err)
		}
	}
	c.dir = dir
	c.memory, c.pid = slices.Contains(want, "+memory"), slices.Contains(want, "+pids")
	if c.why == "" && (!c.memory || !c.pid) {
		var missing []string
		if !c.memory {
			missing = append(missing, "memory")
		}
		if !c.pid {
			missing = append(missing, "pids")
		}
		c.why = fmt.Sprintf("the cgroup v2 hierarchy at %s has no %s controller", mnt, strings.Join(missing, " or "))
	}
	return c
}

func enable(dir string, ctl []string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(ctl, " ")), 0)
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted ("" if not).
func cgroup2Mount() string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS…] - FSTYPE SOURCE SUPER
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if f := strings.Fields(pre); len(f) >= 5 && f[3] == "/" {
			return strings.ReplaceAll(f[4], `\040`, " ")
		}
	}
	return ""
}

// ownCgroup is this process's cgroup v2 path ("0::/path").
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return strings.TrimSuffix(p, "/hestia-daemon"), nil // moved there before
		}
	}
	return "", errors.New("this process has no cgroup v2 path")
}

// make creates a call's cgroup with the limits; done kills whatever is
// still in it and removes it.
func (c *cgroups) make(l Limits) (path string, done func(), err error) {
	if c == nil || c.dir == "" {
		return "", func() {}, nil
	}
	// A random name: several Sandboxes (and daemons of other homes)
	// share the parent.
	path, err = os.MkdirTemp(c.dir, "call-")
	if err != nil {
		return "", func() {}, fmt.Errorf("%w: making the call's cgroup: %w", ErrSetup, err)
	}
	done = func() { killCgroup(path) }
	set := func(file string, v uint64) error {
		if err := os.WriteFile(filepath.Join(path, file), []byte(strconv.FormatUint(v, 10)), 0); err != nil {
			return fmt.Errorf("%w: setting %s: %w", ErrSetup, file, err)
		}
		return nil
	}
	if c.memory {
		if err := set("memory.max", l.CallMemoryBytes); err != nil {
			done()
			return "", func() {}, err
		}
		set("memory.swap.max", 0) // absent without swap accounting: best effort
	}
	if c.pid {
		if err := set("pids.max", l.Procs); err != nil {
			done()
			return "", func() {}, err
		}
	}
	return path, done, nil
}

// killCgroup ends every process in a cgroup and removes it.
func killCgroup(path string) {
	if err := os.WriteFile(filepath.Join(path, "cgroup.kill"), []byte("1"), 0); err != nil {
		// Before Linux 5.14: kill the members one by one until none is
		// left (a fork racing the kill is caught on the next pass).
		for range 20 {
			pids := strings.Fields(readTrim(filepath.Join(path, "cgroup.procs")))
			if len(pids) == 0 {
				break
			}
			for _, p := range pids {
				if n, err := strconv.Atoi(p); err == nil {
					syscall.Kill(n, syscall.SIGKILL)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The kernel empties the cgroup once the killed processes have exited.
	for range 200 {
		if err := syscall.Rmdir(path); err == nil || errors.Is(err, syscall.ENOENT) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// joinCgroup moves the calling process into the cgroup at path.
func joinCgroup(path string) error {
	if err := os.WriteFile(filepath.Join(path, "cgroup.procs"), []byte("0"), 0); err != nil {
		return fmt.Errorf("joining the cgroup %s: %w", path, err)
	}
	return nil
}
