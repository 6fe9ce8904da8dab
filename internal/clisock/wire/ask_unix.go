//go:build unix

package wire

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// Ask sends req to the daemon listening at path and waits for its reply,
// at most timeout for each of connecting, sending and each read.
func Ask(path string, req Request, timeout time.Duration) (Reply, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return Reply{}, fmt.Errorf("connecting to the daemon: %w", err)
	}
	defer syscall.Close(fd)
	syscall.CloseOnExec(fd) // the front execs hestia-fast when no daemon answers
	tv := syscall.NsecToTimeval(timeout.Nanoseconds())
	for _, opt := range []int{syscall.SO_SNDTIMEO, syscall.SO_RCVTIMEO} {
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &tv); err != nil {
			return Reply{}, fmt.Errorf("connecting to the daemon: %w", err)
		}
	}
	if err := syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return Reply{}, ErrNoDaemon
		}
		return Reply{}, fmt.Errorf("connecting to the daemon: %w", err)
	}
	for b := AppendRequest(nil, req); len(b) > 0; {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Reply{}, fmt.Errorf("asking the daemon: %w", timedOut(err))
		}
		b = b[n:]
	}
	buf := make([]byte, 0, 64<<10)
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= MaxReply {
				return Reply{}, fmt.Errorf("reading the daemon's answer: longer than %d bytes", MaxReply)
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Reply{}, fmt.Errorf("reading the daemon's answer: %w", timedOut(err))
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	rep, err := ParseReply(buf)
	if err != nil {
		return Reply{}, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return rep, nil
}

// timedOut names the error a socket timeout gives.
func timedOut(err error) error {
	if errors.Is(err, syscall.EAGAIN) {
		return fmt.Errorf("no answer in time: %w", err)
	}
	return err
}
