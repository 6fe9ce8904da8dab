package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// RunHelperIfAsked makes a test binary, started as the helper by code
// under test (its Helper is [os.Executable(), "sandbox-exec"]), act as
// `hestia sandbox-exec` and exit; otherwise it returns. Tests call it
// first in TestMain.
func RunHelperIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == "sandbox-exec" {
		os.Exit(Main(os.Args[2:], os.Stderr))
	}
}

// Main is `hestia sandbox-exec --spec JSON -- PROGRAM ARGS…`, or
// `hestia sandbox-exec --worker SPEC` (a long-lived worker inside
// bubblewrap, see worker.go). The first confines
// its own process (limits, then Landlock and seccomp where the spec's
// mode asks for them) and executes the program in its place, so the
// confinement holds for the program and everything it starts. It returns
// only on failure, with the exit status to use (126: could not confine or
// start; the program never ran).
func Main(args []string, stderr io.Writer) int {
	// Landlock's restrict_self and the seccomp filter apply to the calling
	// thread; exec must happen on that same thread.
	runtime.LockOSThread()
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "hestia sandbox-exec: "+format+"\n", a...)
		return 126
	}
	if len(args) > 0 && args[0] == "--worker" {
		return serveWorker(args[1:], stderr)
	}
	if len(args) > 3 && args[0] == "--join" && args[2] == "--" {
		// `--join CGROUP -- bwrap …`: bubblewrap started inside the
		// call's cgroup, with this environment (already clean).
		if err := joinCgroup(args[1]); err != nil {
			return fail("%v", err)
		}
		if !filepath.IsAbs(args[3]) {
			return fail("program %q must be an absolute path", args[3])
		}
		err := syscall.Exec(args[3], args[3:], os.Environ())
		return fail("starting %s: %v", args[3], err)
	}
	supervised := len(args) > 0 && args[0] == "--supervised"
	if supervised {
		args = args[1:]
	}
	if len(args) < 4 || args[0] != "--spec" || args[2] != "--" {
		return fail("usage: sandbox-exec --spec JSON -- PROGRAM [ARGS…]")
	}
	var hs helperSpec
	if err := json.Unmarshal([]byte(args[1]), &hs); err != nil {
		return fail("malformed spec: %v", err)
	}
	argv := args[3:]
	if !filepath.IsAbs(argv[0]) {
		return fail("program %q must be an absolute path", argv[0])
	}
	if hs.Mode != Landlock && hs.Mode != RlimitOnly {
		return fail("unknown mode %q", hs.Mode)
	}
	if hs.Cgroup == "" && !supervised {
		// No cgroup to end the call's processes with: a supervisor stays
		// as their subreaper and kills what the program leaves behind.
		if status, ok := supervise(args); ok {
			return status
		}
	}
	env := CleanEnv(os.Environ())
	if hs.Tmp != "" {
		env = append(env, "TMPDIR="+hs.Tmp)
	}
	if hs.Cgroup != "" {
		if err := joinCgroup(hs.Cgroup); err != nil {
			return fail("%v", err)
		}
	}
	if hs.Tmp != "" && os.Getuid() == 0 {
		// Root can give the temp folder a size: a tmpfs in a mount
		// namespace of this thread's own, which exec carries over.
		if err := mountTmp(hs.Tmp, hs.Limits.withDefaults().TmpBytes); err != nil {
			return fail("capping the temp folder: %v", err)
		}
	}
	if err := setLimits(hs.Limits.withDefaults()); err != nil {
		return fail("setting limits: %v", err)
	}
	if hs.Mode == Landlock {
		if err := restrict(hs.Spec); err != nil {
			return fail("confining: %v", err)
		}
	}
	err := syscall.Exec(argv[0], argv, env)
	return fail("starting %s: %v", argv[0], err)
}
