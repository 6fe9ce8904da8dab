package sandbox

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// auditArch is the seccomp architecture tag of the native system calls.
var auditArch = map[string]uint32{"amd64": unix.AUDIT_ARCH_X86_64, "arm64": unix.AUDIT_ARCH_AARCH64}

// denySockets installs a seccomp filter on the calling thread that makes
// socket(2) and io_uring_setup(2) (whose requests can open sockets past
// the filter) fail with EACCES, and refuses foreign-architecture calls.
// Landlock covers TCP only, and UDP, raw, netlink and pathname UNIX
// sockets would otherwise stay open to the program.
func denySockets() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return nil // Landlock's TCP rules remain
	}
	const (
		ldAbs  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = 0x7fff0000
		errno  = 0x00050000
		denied = errno | uint32(unix.EACCES)
	)
	filter := []unix.SockFilter{
		{Code: ldAbs, K: 4}, // seccomp_data.arch
		{Code: jeq, Jt: 1, K: arch},
		{Code: ret, K: denied},
		{Code: ldAbs, K: 0},               // seccomp_data.nr
		{Code: jge, Jt: 3, K: 0x40000000}, // x32 calls
		{Code: jeq, Jt: 2, K: unix.SYS_SOCKET},
		{Code: jeq, Jt: 1, K: unix.SYS_IO_URING_SETUP},
		{Code: ret, K: allow},
		{Code: ret, K: denied},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp filter: %w", err)
	}
	runtime.KeepAlive(filter)
	return nil
}
