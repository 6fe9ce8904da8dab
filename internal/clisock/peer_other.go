//go:build !linux

package clisock

import "net"

// samePeer relies on the folder's and the socket's modes where the peer's
// credentials are not read.
func samePeer(*net.UnixConn) error { return nil }
