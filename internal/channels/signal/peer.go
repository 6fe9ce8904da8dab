package signal

import "errors"

// errNoPeerCreds: the platform does not tell who serves a UNIX socket.
var errNoPeerCreds = errors.New("peer credentials are not available on this platform")
