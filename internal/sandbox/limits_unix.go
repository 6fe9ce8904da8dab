//go:build unix

package sandbox

import (
	"fmt"
	"syscall"
)

func setLimits(l Limits) error {
	if err := setResourceLimits(l); err != nil {
		return err
	}
	return setProcLimit(l.Procs)
}

// setResourceLimits lowers every limit but the process count, which the
// one-shot helper and the worker set differently.
func setResourceLimits(l Limits) error {
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"CPU", syscall.RLIMIT_CPU, l.CPUSeconds},
		{"address space", syscall.RLIMIT_AS, l.MemoryBytes},
		{"file size", syscall.RLIMIT_FSIZE, l.FileBytes},
		{"open files", syscall.RLIMIT_NOFILE, l.OpenFiles},
	} {
		if err := lower(r.res, r.v); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

// lower sets a limit without ever raising the current one.
func lower(res int, v uint64) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(res, &cur); err != nil {
		return err
	}
	if cur.Max < v {
		v = cur.Max
	}
	return syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v})
}
