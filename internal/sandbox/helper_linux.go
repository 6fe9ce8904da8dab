package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock system calls are made directly with x/sys/unix: the
// go-landlock module restricts every thread through libcap's psx, which
// would change how the whole hestia binary links, while the helper only
// needs its own thread confined before exec.

func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

func addPathRule(ruleset int, fd uintptr, rights uint64) error {
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// fsRights are the filesystem rights each Landlock ABI handles.
func fsRights(abi int) uint64 {
	switch {
	case abi >= 9:
		return 1<<17 - 1
	case abi >= 5:
		return 1<<16 - 1
	case abi >= 3:
		return 1<<15 - 1
	case abi == 2:
		return 1<<14 - 1
	default:
		return 1<<13 - 1
	}
}

const (
	readRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fileRights are the rights a rule on a file (not a folder) may carry.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// restrict confines the calling thread (and so the program it executes):
// Landlock for the filesystem, TCP and scopes; seccomp for new sockets.
func restrict(spec Spec) error {
	abi := landlockABI()
	if abi < 1 {
		return errors.New("the kernel has no Landlock")
	}
	handled := fsRights(abi)
	// No net-port rule is added, so with the TCP rights handled every
	// bind and connect is refused.
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	if abi >= 4 && !spec.Net {
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 6 {
		// Signals to and abstract sockets of processes outside the
		// sandbox (the daemon, the user's session) are refused.
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	// The size passed is the part of the struct this ABI knows; the
	// quiet fields (ABI 10) stay off.
	size := unsafe.Sizeof(uint64(0)) * 3
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("creating the Landlock ruleset: %w", errno)
	}
	fd := int(r)
	defer syscall.Close(fd)
	rw := handled &^ unix.LANDLOCK_ACCESS_FS_REFER
	add := func(path string, rights uint64) error {
		f, err := os.OpenFile(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil // a missing path grants nothing
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && !st.IsDir() {
			rights &= fileRights
		}
		if err := addPathRule(fd, f.Fd(), rights&handled); err != nil {
			return fmt.Errorf("adding the Landlock rule for %s: %w", path, err)
		}
		return nil
	}
	hide := resolveAll(spec.Hide)
	for _, d := range systemRead {
		if err := add(d, readRights); err != nil {
			return err
		}
	}
	listOnly := func(p string) error { return add(p, unix.LANDLOCK_ACCESS_FS_READ_DIR) }
	with := func(rights uint64) func(string) error {
		return func(p string) error { return add(p, rights) }
	}
	for _, r := range spec.Read {
		if err := grant(r, hide, with(readRights), listOnly); err != nil {
			return err
		}
	}
	dirRights := uint64(readRights)
	if spec.Writable {
		dirRights = rw
	}
	if err := grant(spec.Dir, hide, with(dirRights), listOnly); err != nil {
		return err
	}
	if spec.Tmp != "" {
		if err := add(spec.Tmp, rw); err != nil {
			return err
		}
	}
	// The process's own /proc entry (the pid survives exec): df reads its
	// mountinfo. Other processes' entries, the daemon's environ among
	// them, stay unreadable.
	if err := add(fmt.Sprintf("/proc/%d", os.Getpid()), readRights); err != nil {
		return err
	}
	for _, dev := range []string{"/dev/null", "/dev/zero", "/dev/full"} {
		if err := add(dev, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE|unix.LANDLOCK_ACCESS_FS_TRUNCATE); err != nil {
			return err
		}
	}
	for _, dev := range []string{"/dev/urandom", "/dev/random"} {
		if err := add(dev, unix.LANDLOCK_ACCESS_FS_READ_FILE); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if !spec.Net {
		if err := denySockets(); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("restricting with Landlock (restrict_self): %w", errno)
	}
	return nil
}

// setProcLimit bounds the processes the program may add. RLIMIT_NPROC
// counts every process of the user, so the limit is the current count
// plus the allowance.
func setProcLimit(n uint64) error {
	uid := os.Getuid()
	if uid == 0 {
		return nil // root is not bound by RLIMIT_NPROC
	}
	var count uint64
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var owner, threads int = -1, 1
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					owner, _ = strconv.Atoi(f[0])
				}
			} else if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if owner == uid {
			count += uint64(max(threads, 1))
		}
	}
	return lower(unix.RLIMIT_NPROC, count+n)
}

// mountTmp mounts a tmpfs of size bytes on dir in a new mount namespace
// of the calling thread (locked to it; the program executed from it keeps
// the namespace), after making every mount private so nothing propagates
// back to the host.
func mountTmp(dir string, size uint64) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("new mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return nil
}
