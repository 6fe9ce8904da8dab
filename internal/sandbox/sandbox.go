// Package sandbox confines the programs the shell tools start with what the
// operating system offers, as a second wall behind the argument checks in
// internal/shell.
//
// Three mechanisms are tried in order, each only when a trial run shows it
// works on this machine:
//
//   - bubblewrap (bwrap): new user, mount, pid, ipc, uts and network
//     namespaces; system folders and the allowed roots bound read-only,
//     the working folder writable only when asked, credential folders and
//     Hestia's data covered by empty mounts, a private /tmp. Resource
//     limits are set inside by prlimit(1).
//   - Landlock: `hestia sandbox-exec` (a hidden subcommand of this binary)
//     sets the limits, restricts itself with a Landlock ruleset (read-only
//     except the working folder and a private temp folder, TCP bind and
//     connect denied without network, signals and abstract sockets scoped),
//     adds a seccomp filter refusing new sockets without network, then
//     executes the program. Nothing in the daemon itself is restricted.
//   - rlimits only: the same helper, without Landlock (another kernel or
//     operating system); the argument checks remain the boundary.
//
// Every mechanism clears the environment down to a safe list and applies
// the resource limits (CPU time, address space, file size, open files,
// processes).
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// OS confinement of the shell tools' programs, picked by a trial run: bubblewrap (namespaces,
// system dirs and file roots read-only, credential dirs and Hestia's data covered (a hidden path
// inside another gets no cover of its own: bubblewrap cannot make its mount point in a read-only
// cover), private /tmp as a sized tmpfs, no network unless granted (`shell_exec` too: only a call
// with `"network": true`, which its card states and a trust rule's pattern must name as
// `[network]`, or `shell.Runner.ExecNetwork`, off; so the daemon's loopback API is out of reach),
// limits via prlimit), else `hestia sandbox-exec` (hidden subcommand) applying rlimits, Landlock
// (read-only except the working dir and a private temp dir; TCP denied; signals and abstract
// sockets scoped) and a seccomp filter refusing new sockets, then exec; else rlimits only.
// Bubblewrap drops every capability (a root daemon would otherwise leave them to the program).
// `shell_run`'s read-only, offline programs are started by a long-lived worker per spec instead of
// a bwrap + prlimit per program (10–20 ms each): one bwrap with the same mounts plus read-only `/`
// and `/dev`, running `hestia sandbox-exec --worker` as pid 1, which gets pipelines (argv, env,
// three descriptors per program) over a socketpair, holds the limits itself so the programs
// inherit them, serves one call at a time, and after each kills everything else in its pid
// namespace (`kill(-1)`) and empties `/tmp`; it is not dumpable, holds only close-on-exec
// descriptors, and ignores signals from inside. Workers are keyed by the spec and the inodes of
// the paths it mounts, start in the background on the first call (which runs the one-shot way, as
// do shell_exec, Landlock and rlimits), and stop after a minute idle, on `Close`, or with the
// daemon. Landlock calls go through `x/sys/unix` directly: go-landlock's syscall package pulls
// libcap's psx (all-thread syscalls), which would change how the whole binary links, while the
// helper only confines its own thread before exec. With `Cgroups` (the daemon) each call and each
// worker gets a cgroup v2 under the daemon's own (`cgroup_linux.go`; the daemon moves itself into
// a leaf `hestia-daemon` when its cgroup must hand controllers down): `memory.max` for the call's
// processes together, `pids.max` (root is exempt from RLIMIT_NPROC), and `cgroup.kill` when the
// call ends; the helper joins it (`sandbox-exec --join CG -- bwrap …` for one-shot bubblewrap),
// the worker is started in it. Run as root, the helper's temp folder is a sized tmpfs in a mount
// namespace of its own. Without a cgroup, the helper runs itself again (`sandbox-exec --supervised
// …`) under a supervisor that stays outside Landlock (it reads `/proc`, which the program may not)
// as the call's child subreaper: whatever the program leaves behind (`&`, double forks, `setsid`)
// is reparented to it and killed when the program ends. `Status.Limits` says which of these really
// bind here. `hestia doctor` (`shell.sandbox`) runs `true` through `shell_run` and `shell_exec`
// with the tools' own runner and names the mechanism and the limits in force; every tool result
// names the mechanism.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Mode names the mechanism in use.
type Mode string

// The mechanisms, strongest first.
const (
	Bubblewrap Mode = "bubblewrap"
	Landlock   Mode = "landlock"
	RlimitOnly Mode = "rlimits"
	None       Mode = "none"
)

// Limits bound one sandboxed program. Zero fields take the defaults.
type Limits struct {
	CPUSeconds  uint64 `json:"cpu,omitempty"`
	MemoryBytes uint64 `json:"mem,omitempty"`
	FileBytes   uint64 `json:"fsize,omitempty"`
	OpenFiles   uint64 `json:"nofile,omitempty"`
	Procs       uint64 `json:"nproc,omitempty"`
	// CallMemoryBytes bounds the memory of everything one call starts,
	// together (a cgroup's memory.max); MemoryBytes is per process.
	CallMemoryBytes uint64 `json:"callmem,omitempty"`
	// TmpBytes bounds the private temporary folder (a sized tmpfs).
	TmpBytes uint64 `json:"tmp,omitempty"`
}

func (l Limits) withDefaults() Limits {
	if l.CPUSeconds == 0 {
		l.CPUSeconds = 60
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = 4 << 30
	}
	if l.FileBytes == 0 {
		l.FileBytes = 256 << 20
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = 1024
	}
	if l.Procs == 0 {
		l.Procs = 128
	}
	if l.CallMemoryBytes == 0 {
		l.CallMemoryBytes = 1 << 30
	}
	if l.TmpBytes == 0 {
		l.TmpBytes = 256 << 20
	}
	return l
}

// Spec is what one program may do.
type Spec struct {
	// Dir is the working folder.
	Dir string `json:"dir"`
	// Writable makes Dir writable (shell_exec); otherwise everything is
	// read-only.
	Writable bool `json:"rw,omitempty"`
	// Read are the folders the program may read besides the system ones
	// (the file roots). Empty means the home folder.
	Read []string `json:"read,omitempty"`
	// Hide are paths inside Read (or Dir) that stay unreadable:
	// credentials and Hestia's own data.
	Hide []string `json:"hide,omitempty"`
	// Net allows the network.
	Net bool `json:"net,omitempty"`
	// Tmp is the private temporary folder (set by Wrap for the helper).
	Tmp    string `json:"tmp,omitempty"`
	Limits Limits `json:"limits"`
}

// Status says which mechanism is active and why stronger ones are not.
type Status struct {
	Mode   Mode
	Detail string // what it enforces
	Why    string // why a stronger mechanism is unavailable; empty for bubblewrap
	Limits string // which resource limits really bind, and how
}

func (s Status) String() string {
	out := fmt.Sprintf("%s (%s", s.Mode, s.Detail)
	if s.Why != "" {
		out += "; " + s.Why
	}
	out += ")"
	if s.Limits != "" {
		out += "; limits: " + s.Limits
	}
	return out
}

// Sandbox wraps commands in the best mechanism this machine offers. The
// zero value detects lazily with the defaults; set fields to force or
// rule out a mechanism (tests use that to exercise the fallbacks).
type Sandbox struct {
	// Helper starts `hestia sandbox-exec`: the binary and the arguments
	// before the helper's own ([exe, "sandbox-exec"]). Empty: no helper,
	// so neither Landlock nor rlimits.
	Helper []string
	// Bwrap is bubblewrap's path; empty looks in the system folders, "-"
	// rules it out.
	Bwrap string
	// NoLandlock rules Landlock out.
	NoLandlock bool
	// NoWorker gives every program its own bubblewrap. Otherwise Run
	// serves read-only, offline specs from long-lived workers (see
	// worker.go); Helper must then answer `sandbox-exec --worker`.
	NoWorker bool
	// WorkerIdle is how long an unused worker is kept (default a minute).
	WorkerIdle time.Duration
	// Cgroups puts each call (and each worker) in a cgroup of its own
	// under this process's, bounding its memory and processes together
	// and killing what it leaves behind (see cgroup_linux.go). It may
	// move this process into a leaf cgroup, so only the daemon sets it.
	Cgroups bool

	workers pool
	cg      *cgroups // nil without Cgroups

	once   sync.Once
	status Status
	bwrap  string
	prlim  string
	abi    int
}

// ErrSetup is wrapped when a sandboxed command could not be prepared.
var ErrSetup = errors.New("sandbox setup failed")

// binDirs are where bwrap, prlimit and trial programs are looked up; never
// the daemon's PATH.
var binDirs = []string{"/usr/bin", "/bin", "/usr/local/bin"}

func findBin(name string) string {
	for _, d := range binDirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// Status detects (once) and reports the active mechanism.
func (s *Sandbox) Status(ctx context.Context) Status {
	// The result is kept, so a caller's cancellation must not turn into
	// a failed trial and a weaker mechanism for good.
	s.once.Do(func() { s.status = s.detect(context.WithoutCancel(ctx)) })
	return s.status
}

func (s *Sandbox) detect(ctx context.Context) Status {
	st := s.detectMode(ctx)
	st.Limits = s.limitsInForce(st.Mode)
	return st
}

// limitsInForce says which limits really bind under mode, for doctor and
// the tests.
func (s *Sandbox) limitsInForce(m Mode) string {
	if m == None {
		return "no limits"
	}
	l := Limits{}.withDefaults()
	var out []string
	cg := s.cg
	if cg == nil {
		cg = &cgroups{why: "per-call cgroups are off"}
	}
	joins := cg.dir != "" && (m != Bubblewrap || len(s.Helper) > 0)
	if joins && cg.memory {
		out = append(out, fmt.Sprintf("memory %s per call (cgroup)", size(l.CallMemoryBytes)))
	} else {
		out = append(out, fmt.Sprintf("no memory cap per call, only %s of address space per process (rlimit; %s)", size(l.MemoryBytes), cg.why))
	}
	switch {
	case joins && cg.pid:
		out = append(out, fmt.Sprintf("processes %d (cgroup)", l.Procs))
	case os.Getuid() == 0:
		out = append(out, "processes not limited (root is exempt from RLIMIT_NPROC)")
	default:
		out = append(out, fmt.Sprintf("processes %d more (RLIMIT_NPROC, counted per user)", l.Procs))
	}
	switch {
	case m == Bubblewrap:
		out = append(out, fmt.Sprintf("tmp %s (tmpfs)", size(l.TmpBytes)))
	case os.Getuid() == 0 && runtime.GOOS == "linux":
		out = append(out, fmt.Sprintf("tmp %s (tmpfs in a mount namespace)", size(l.TmpBytes)))
	default:
		out = append(out, fmt.Sprintf("tmp not capped (only %s per file)", size(l.FileBytes)))
	}
	switch {
	case m == Bubblewrap:
		out = append(out, "descendants killed (pid namespace)")
	case joins:
		out = append(out, "descendants killed (cgroup)")
	case runtime.GOOS == "linux" && len(s.Helper) > 0:
		out = append(out, "descendants killed (the helper stays as their subreaper)")
	default:
		out = append(out, "descendants not killed: a program's background children may outlive the call")
	}
	return strings.Join(out, ", ")
}

func size(n uint64) string {
	if n >= 1<<30 && n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

func (s *Sandbox) detectMode(ctx context.Context) Status {
	if s.Cgroups {
		s.cg = detectCgroups()
	}
	var why []string
	trueBin := findBin("true")
	if s.Bwrap != "-" {
		s.bwrap = s.Bwrap
		if s.bwrap == "" {
			s.bwrap = findBin("bwrap")
		}
		s.prlim = findBin("prlimit")
		switch {
		case s.bwrap == "":
			why = append(why, "bubblewrap is not installed")
		case s.prlim == "":
			why = append(why, "bubblewrap needs prlimit (util-linux) for the limits, which is missing")
		case trueBin == "":
			why = append(why, "no true(1) for the bubblewrap trial run")
		default:
			if err := s.trial(ctx, Bubblewrap, trueBin); err != nil {
				why = append(why, fmt.Sprintf("bubblewrap does not run here (%v; unprivileged user namespaces may be off)", err))
			} else {
				return Status{Mode: Bubblewrap, Detail: "namespaces: read-only system and roots, credentials hidden, private /tmp, no network unless granted, rlimits"}
			}
		}
	} else {
		why = append(why, "bubblewrap ruled out")
	}
	if len(s.Helper) == 0 {
		why = append(why, "no sandbox helper")
		return Status{Mode: None, Detail: "clean environment only", Why: strings.Join(why, "; ")}
	}
	abi := landlockABI()
	switch {
	case s.NoLandlock:
		why = append(why, "Landlock ruled out")
	case abi < 1:
		why = append(why, "the kernel has no Landlock")
	case trueBin == "":
		why = append(why, "no true(1) for the Landlock trial run")
	default:
		s.abi = abi
		if err := s.trial(ctx, Landlock, trueBin); err != nil {
			why = append(why, fmt.Sprintf("the Landlock helper does not run (%v)", err))
		} else {
			net := "network: TCP denied, new sockets refused by seccomp"
			if abi < 4 {
				net = "network: new sockets refused by seccomp (Landlock ABI < 4 has no TCP rules)"
			}
			return Status{Mode: Landlock, Detail: fmt.Sprintf("Landlock ABI %d: read-only except the working folder and a private temp folder, credentials unreadable, %s, rlimits", abi, net), Why: strings.Join(why, "; ")}
		}
	}
	s.abi = 0
	if trueBin != "" {
		if err := s.trial(ctx, RlimitOnly, trueBin); err != nil {
			why = append(why, fmt.Sprintf("the helper does not run (%v)", err))
			return Status{Mode: None, Detail: "clean environment only", Why: strings.Join(why, "; ")}
		}
	}
	return Status{Mode: RlimitOnly, Detail: "resource limits and a clean environment; no filesystem or network isolation", Why: strings.Join(why, "; ")}
}

// trial runs true(1) under a mechanism with a minimal spec.
func (s *Sandbox) trial(ctx context.Context, m Mode, trueBin string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // generous: a loaded machine starts programs slowly
	defer cancel()
	dir, err := os.MkdirTemp("", "hestia-sandbox-trial-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	argv, cleanup, err := s.wrap(m, Spec{Dir: dir, Read: []string{dir}}, []string{trueBin})
	if err != nil {
		return err
	}
	defer cleanup()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 200 {
			msg = msg[:200]
		}
		if msg != "" {
			return fmt.Errorf("%w: %s", err, msg)
		}
		return err
	}
	return nil
}

// Wrap returns the argv that runs argv (argv[0] absolute) under the active
// mechanism, and a cleanup to call once the program has ended.
func (s *Sandbox) Wrap(ctx context.Context, spec Spec, argv []string) ([]string, func(), error) {
	st := s.Status(ctx)
	return s.wrap(st.Mode, spec, argv)
}

func (s *Sandbox) wrap(m Mode, spec Spec, argv []string) ([]string, func(), error) {
	nothing := func() {}
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return nil, nothing, fmt.Errorf("%w: the program path must be absolute", ErrSetup)
	}
	spec, err := normalize(spec)
	if err != nil {
		return nil, nothing, err
	}
	switch m {
	case Bubblewrap:
		out := s.bwrapArgs(spec, argv)
		if len(s.Helper) == 0 {
			return out, nothing, nil
		}
		// The helper joins the call's cgroup and executes bubblewrap.
		cg, done, err := s.cg.make(spec.Limits)
		if err != nil || cg == "" {
			return out, nothing, err
		}
		return append(append(append([]string(nil), s.Helper...), "--join", cg, "--"), out...), done, nil
	case Landlock, RlimitOnly:
		tmp, err := os.MkdirTemp("", "hestia-sh-")
		if err != nil {
			return nil, nothing, fmt.Errorf("%w: private temp folder: %w", ErrSetup, err)
		}
		spec.Tmp = tmp
		cg, done, err := s.cg.make(spec.Limits)
		if err != nil {
			os.RemoveAll(tmp)
			return nil, nothing, err
		}
		cleanup := func() {
			done() // first: a program still running could hold tmp
			os.RemoveAll(tmp)
		}
		js, err := json.Marshal(helperSpec{Mode: m, Spec: spec, Cgroup: cg})
		if err != nil {
			cleanup()
			return nil, nothing, fmt.Errorf("%w: %w", ErrSetup, err)
		}
		out := append(append([]string(nil), s.Helper...), "--spec", string(js), "--")
		return append(out, argv...), cleanup, nil
	default:
		return argv, nothing, nil
	}
}

// normalize checks a spec and fills in the defaults (limits, the home as
// the folder to read).
func normalize(spec Spec) (Spec, error) {
	if spec.Dir == "" || !filepath.IsAbs(spec.Dir) {
		return spec, fmt.Errorf("%w: the working folder must be absolute", ErrSetup)
	}
	spec.Limits = spec.Limits.withDefaults()
	if len(spec.Read) == 0 {
		if home, err := os.UserHomeDir(); err == nil {
			spec.Read = []string{home}
		}
	}
	for _, h := range spec.Hide {
		if within(spec.Dir, h) {
			return spec, fmt.Errorf("%w: the working folder %s lies in the protected %s", ErrSetup, spec.Dir, h)
		}
	}
	return spec, nil
}

// helperSpec is what the parent hands `hestia sandbox-exec`.
type helperSpec struct {
	Mode Mode `json:"mode"`
	Spec
	// Cgroup is the call's cgroup, which the helper joins first.
	Cgroup string `json:"cgroup,omitempty"`
}

// systemRead are the folders programs need to start (libraries, locale,
// time zones, the passwd file for ls -l).
var systemRead = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/opt/homebrew"}

// safeEnv are the variables that survive into the program.
var safeEnv = map[string]bool{"PATH": true, "HOME": true, "LANG": true, "LC_ALL": true, "LC_CTYPE": true, "TERM": true, "NO_COLOR": true, "TZ": true, "USER": true, "LOGNAME": true}

// CleanEnv keeps only the safe variables of env.
func CleanEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if ok && safeEnv[k] {
			out = append(out, kv)
		}
	}
	return out
}

func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

func (s *Sandbox) bwrapArgs(spec Spec, argv []string) []string {
	a := s.bwrapMounts(spec)
	l := spec.Limits
	a = append(a, "--chdir", spec.Dir, "--", s.prlim,
		fmt.Sprintf("--cpu=%d", l.CPUSeconds), fmt.Sprintf("--as=%d", l.MemoryBytes),
		fmt.Sprintf("--fsize=%d", l.FileBytes), fmt.Sprintf("--nofile=%d", l.OpenFiles),
		fmt.Sprintf("--nproc=%d", l.Procs), "--")
	return append(a, argv...)
}

// bwrapMounts is bubblewrap and its options up to the working folder and
// the command: the namespaces and the view of the filesystem. The one-shot
// path and the worker share it, so both see the same mounts.
func (s *Sandbox) bwrapMounts(spec Spec) []string {
	// --cap-drop ALL: run by root, bubblewrap would leave the program
	// every capability, enough to unmount the covers of the hidden paths.
	a := []string{s.bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"}
	if spec.Net {
		a = append(a, "--share-net")
	}
	for _, d := range systemRead {
		a = append(a, "--ro-bind-try", d, d)
	}
	a = append(a, "--proc", "/proc", "--dev", "/dev", "--size", strconv.FormatUint(spec.Limits.withDefaults().TmpBytes, 10), "--tmpfs", "/tmp")
	for _, r := range spec.Read {
		a = append(a, "--ro-bind-try", r, r)
	}
	a = append(a, "--ro-bind-try", spec.Dir, spec.Dir)
	if spec.Writable {
		grant(spec.Dir, resolveAll(spec.Hide), func(p string) error {
			a = append(a, "--bind", p, p)
			return nil
		}, func(string) error { return nil })
	}
	for _, h := range outermost(spec.Hide) {
		st, err := os.Stat(h)
		switch {
		case err != nil:
			continue
		case st.IsDir():
			a = append(a, "--tmpfs", h, "--remount-ro", h)
		default:
			a = append(a, "--ro-bind", "/dev/null", h)
		}
	}
	return a
}

// outermost drops the hidden paths that lie inside another one: their
// cover would have to be made inside a read-only cover (bubblewrap fails
// with "Can't mkdir DATA/logs: Read-only file system"), and the outer
// cover already hides them.
func outermost(hide []string) []string {
	clean := make([]string, 0, len(hide))
	for _, h := range hide {
		clean = append(clean, filepath.Clean(h))
	}
	var out []string
	for i, h := range clean {
		inside := false
		for j, o := range clean {
			if j != i && within(h, o) && (h != o || j < i) {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, h)
		}
	}
	return out
}

// grant applies whole to root, except beneath the hidden paths: a folder
// holding a hidden path gets listOnly (its names may be listed) and each
// of its entries is granted the same way. Landlock can only add rights,
// and a writable bind mount cannot leave holes, so both mechanisms need
// the split; new entries directly in a split folder cannot be created.
func grant(root string, hide []string, whole, listOnly func(string) error) error {
	root = filepath.Clean(root)
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	inside := false
	for _, h := range hide {
		if within(root, h) {
			return nil // the whole root is hidden
		}
		if within(h, root) {
			inside = true
		}
	}
	if !inside {
		return whole(root)
	}
	if err := listOnly(root); err != nil {
		return err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if err := grant(filepath.Join(root, e.Name()), hide, whole, listOnly); err != nil {
			return err
		}
	}
	return nil
}

func resolveAll(paths []string) []string {
	out := make([]string, 0, len(paths)*2)
	for _, p := range paths {
		out = append(out, filepath.Clean(p))
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}
