//go:build unix

package docs

import (
	"os/exec"
	"syscall"
)

// limitSelf caps the child's address space and CPU seconds. The daemon's
// timeout kills it anyway; the CPU limit is a second line should the
// parent be gone.
func limitSelf(lim Limits) error {
	as := uint64(lim.MemoryBytes)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return err
	}
	cpu := uint64(lim.Timeout.Seconds()) + 2
	return syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu})
}

// setProcessGroup puts the child in its own process group, so killGroup
// reaches anything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills a child's whole process group.
func killGroup(pid int) { syscall.Kill(-pid, syscall.SIGKILL) }
