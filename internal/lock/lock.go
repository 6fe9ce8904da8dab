// Package lock provides the advisory lock file that keeps a second daemon
// from running on the same home. The lock is an flock on the file, so it is
// released by the kernel if the process dies; the PID written inside is only
// informational.
package lock

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ErrHeld is returned when another process holds the lock.
var ErrHeld = errors.New("another hestia daemon is running on this home")

// Lock is a held lock file.
type Lock struct {
	f *os.File
}

// Acquire takes the lock at path without blocking.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		pid := readPID(f)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if pid > 0 {
				return nil, fmt.Errorf("%w (pid %d holds %s)", ErrHeld, pid, path)
			}
			return nil, fmt.Errorf("%w (%s is locked)", ErrHeld, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Held reports whether some process currently holds the lock at path,
// and its PID when known. It never creates the file.
func Held(path string) (bool, int) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true, readPID(f)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, 0
}

func readPID(f *os.File) int {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return pid
}

// Release unlocks and closes the file. The file itself stays, so the path is
// stable for the next daemon.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
