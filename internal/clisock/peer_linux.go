package clisock

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// samePeer refuses a connection whose other end runs as another user: the
// folder's and the socket's modes already keep others out; this holds if
// either is ever loosened.
func samePeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("reading the peer's credentials: %w", credErr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("the other end runs as uid %d, this process as %d", cred.Uid, os.Getuid())
	}
	return nil
}
