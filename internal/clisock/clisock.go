// Package clisock is the daemon's Unix socket for the command line: the
// daemon serves its HTTP API (the very same handlers as on its TCP
// listener) on DATA/cli.sock, and `hestia` on the same machine asks it
// there, so a query is answered from the daemon's warm stores and gives
// exactly what the API gives.
//
// The socket is reachable only by the home's owner: it lives in the data
// folder (mode 0700) with mode 0600, and both ends check the other's uid
// (SO_PEERCRED), which holds if either mode is ever loosened. Requests
// still carry the home's token, so the API's authentication is unchanged.
//
// Design notes (the package map in ARCHITECTURE.md points here):
//
// the daemon's Unix socket for the command line's queries: `DATA/cli.sock`, mode 0600 in the
// owner-only data folder, both ends checking the other's uid (SO_PEERCRED); the daemon serves its
// HTTP handler chain there (`app/clisock.go`), the CLI (`cli/daemonclient.Socket`) sends the API's
// requests with the home's token; `ErrNoDaemon` when nothing listens (no file, or one a dead
// daemon left) sends the command to the stores.
package clisock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// FileName is the socket's name in the data folder.
const FileName = "cli.sock"

// Path is the socket of the home whose data folder is dataDir.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// ErrNoDaemon means no daemon listens on the socket: the file is missing,
// or left by a daemon that died.
var ErrNoDaemon = errors.New("no daemon is listening on the socket")

// Listen opens the socket at path, owner-only, accepting only connections
// from this process's uid. A socket file left by a daemon that died is
// replaced: the caller holds the home's lock, so no other daemon of this
// home is running. Closing the listener removes the file.
func Listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("removing stale socket %s: %w", path, err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	// The data folder is owner-only already (no one else can reach the
	// socket in the moment before this); the mode says it again.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(true)
	return &ownerListener{UnixListener: ul}, nil
}

// ownerListener drops connections from other users before any byte of
// theirs is read.
type ownerListener struct {
	*net.UnixListener
	log *slog.Logger
}

func (l *ownerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if err := samePeer(c); err != nil {
			c.Close()
			if l.log != nil {
				l.log.Warn("cliSocketRefused", "err", err)
			}
			continue
		}
		return c, nil
	}
}

// Serve answers HTTP requests with h on the socket at path until ctx
// ends, then shuts down like the TCP listener: in-flight requests get up
// to grace to finish, and streams still open are closed.
func Serve(ctx context.Context, path string, h http.Handler, log *slog.Logger, grace time.Duration) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := Listen(path)
	if err != nil {
		return err
	}
	ln.(*ownerListener).log = log
	hs := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serving on %s: %w", path, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close() // streams (SSE) do not end on their own
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", path, err)
	}
	return nil
}

// Dial connects to the daemon's socket at path and checks that the
// daemon runs as this user. It returns ErrNoDaemon when nothing listens
// there, so the caller can do the work itself.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w (%s)", ErrNoDaemon, path)
		}
		return nil, fmt.Errorf("connecting to the daemon at %s: %w", path, err)
	}
	if err := samePeer(c.(*net.UnixConn)); err != nil {
		c.Close()
		return nil, fmt.Errorf("the socket %s: %w", path, err)
	}
	return c, nil
}
