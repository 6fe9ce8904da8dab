package signal

import (
	"fmt"
	"net"
	"syscall"
)

// peerUID is the uid of the process serving the socket, as the kernel
// recorded it when the daemon (or systemd, for socket activation)
// listened (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, fmt.Errorf("reading the socket's peer credentials: %w", credErr)
	}
	return int(cred.Uid), nil
}
