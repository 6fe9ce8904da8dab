// Package clisock lets the small front binary hand a read-only query to the
// running daemon over a Unix socket in the home's data folder, so a search
// costs a tiny process plus the daemon's warm answer instead of a process
// that opens the stores, parses their schema and fills a cold page cache.
//
// The socket, not a token, is the credential: it lives in the data folder
// (mode 0700) with mode 0600, so only the home's owner can connect, the
// same person who can read the auth token and the databases. The server
// also checks the peer's uid. A request is one command line; the reply is
// what the command would have printed, and its exit status. The front
// links only the client side, package wire.
package clisock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hestia-dev/hestia/internal/clisock/wire"
)

// Path is the socket of the home whose data folder is dataDir.
func Path(dataDir string) string { return wire.Path(dataDir) }

// Request and Reply are the exchange's (see package wire for the frames
// and the client, wire.Ask).
type (
	Request = wire.Request
	Reply   = wire.Reply
)

// maxActive bounds the requests answered at once.
const maxActive = 8

// Handler answers one request.
type Handler func(ctx context.Context, req Request) Reply

// Server answers requests on a home's socket.
type Server struct {
	Path    string
	Handler Handler
	Logger  *slog.Logger
}

// Run listens until ctx ends, then removes the socket. A socket file left
// by a daemon that died is replaced: the caller holds the home's lock, so
// no other daemon of this home is running.
func (s *Server) Run(ctx context.Context) error {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.Remove(s.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing stale socket %s: %w", s.Path, err)
	}
	ln, err := net.Listen("unix", s.Path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Path, err)
	}
	// The data folder is owner-only already (no one else can reach the
	// socket in the moment before this); the mode says it again.
	if err := os.Chmod(s.Path, 0o600); err != nil {
		ln.Close()
		return fmt.Errorf("restricting %s: %w", s.Path, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	active := make(chan struct{}, maxActive)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accepting on %s: %w", s.Path, err)
		}
		select {
		case active <- struct{}{}:
		case <-ctx.Done():
			conn.Close()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-active }()
			s.serve(ctx, conn.(*net.UnixConn), log)
		}()
	}
}

func (s *Server) serve(ctx context.Context, conn *net.UnixConn, log *slog.Logger) {
	defer conn.Close()
	// A query that panics must not take the daemon down: the front gets no
	// answer and runs the command itself.
	defer func() {
		if p := recover(); p != nil {
			log.Error("cliSocketPanic", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	if err := samePeer(conn); err != nil {
		log.Warn("cliSocketRefused", "err", err)
		return
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	b, err := s.answer(ctx, conn)
	if err != nil {
		log.Warn("cliSocketRequest", "err", err)
		return
	}
	conn.Write(b)
}

// answer reads one request frame from r and returns the encoded reply. A
// request that is not one frame of at most wire.MaxRequest bytes gets none.
func (s *Server) answer(ctx context.Context, r io.Reader) ([]byte, error) {
	req, err := wire.ReadRequest(r)
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	return wire.AppendReply(nil, s.Handler(ctx, req)), nil
}
