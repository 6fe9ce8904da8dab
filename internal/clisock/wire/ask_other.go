//go:build !unix

package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Ask sends req to the daemon listening at path and waits for its reply,
// at most timeout in all.
func Ask(path string, req Request, timeout time.Duration) (Reply, error) {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return Reply{}, ErrNoDaemon
		}
		return Reply{}, fmt.Errorf("connecting to the daemon: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(AppendRequest(nil, req)); err != nil {
		return Reply{}, fmt.Errorf("asking the daemon: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(conn, MaxReply+1))
	if err != nil {
		return Reply{}, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	if len(b) > MaxReply {
		return Reply{}, fmt.Errorf("reading the daemon's answer: longer than %d bytes", MaxReply)
	}
	rep, err := ParseReply(b)
	if err != nil {
		return Reply{}, fmt.Errorf("reading the daemon's answer: %w", err)
	}
	return rep, nil
}
