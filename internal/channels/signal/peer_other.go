//go:build !linux

package signal

import "net"

// peerUID is not read here: the socket's file mode and folder are then
// the only thing keeping other users from serving or using it.
func peerUID(*net.UnixConn) (int, error) { return 0, errNoPeerCreds }
