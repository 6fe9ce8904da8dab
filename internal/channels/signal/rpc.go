package signal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"
)

// maxLine bounds one line from signal-cli. Envelopes are small; the
// largest line is getAttachment's base64 answer for a voice note (the
// relay refuses notes over 20 MB, 27 MB in base64).
const maxLine = 48 << 20

// maxQueued bounds notifications waiting for the handler. The queue is
// not bounded by a channel's capacity because the handler itself makes
// calls on the connection (fetching a voice note), whose answers the
// reader must be free to deliver.
const maxQueued = 10000

// JSON-RPC 2.0 error codes (the specification's, then signal-cli's own).
const (
	codeParse          = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeUserError      = -1 // UserErrorException: what was asked cannot be done
	codeIOError        = -3 // IOErrorException: network or server trouble
	codeUntrustedKey   = -4 // UntrustedKeyErrorException: a safety number changed
	codeRateLimit      = -5 // RateLimitErrorException (newer signal-cli)
)

// RPCError is a JSON-RPC error object signal-cli answered a call with.
type RPCError struct {
	Method  string
	Code    int
	Message string
	// Data is signal-cli's error data: for a failed send,
	// {"response": {"timestamp": …, "results": […]}}.
	Data json.RawMessage
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("signal-cli %s failed: %s (code %d)", e.Method, e.Message, e.Code)
}

// rpcMessage is any line of the protocol: a request or notification
// (method set), or a response (id set, result or error).
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error,omitempty"`
}

// rpcConn is one connection to the daemon: calls are matched to their
// answers by id, notifications are queued for the receive loop.
type rpcConn struct {
	c   net.Conn
	log *slog.Logger

	wmu sync.Mutex // serializes writes: one request per line

	mu      sync.Mutex // guards the fields below
	pending map[string]chan rpcMessage
	next    int
	queue   []json.RawMessage
	err     error // why the reader stopped

	wake chan struct{} // a notification was queued
	done chan struct{} // closed when the reader stops
}

func newRPCConn(c net.Conn, log *slog.Logger) *rpcConn {
	rc := &rpcConn{c: c, log: log, pending: map[string]chan rpcMessage{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go rc.read()
	return rc
}

// close ends the connection; pending calls fail.
func (rc *rpcConn) close() { _ = rc.c.Close() }

// failure is why the connection ended (after done is closed).
func (rc *rpcConn) failure() error {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.err
}

func (rc *rpcConn) read() {
	r := bufio.NewReaderSize(rc.c, 64<<10)
	err := rc.readLoop(r)
	if errors.Is(err, io.EOF) {
		err = errors.New("signal-cli closed the connection")
	}
	rc.mu.Lock()
	rc.err = err
	rc.pending = map[string]chan rpcMessage{} // waiters see done and report err
	rc.mu.Unlock()
	_ = rc.c.Close()
	close(rc.done)
}

func (rc *rpcConn) readLoop(r *bufio.Reader) error {
	for {
		line, err := readLine(r, maxLine)
		if err != nil {
			return err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil {
			// One bad line is signal-cli's (or an impostor's) problem,
			// not a reason to drop the messages after it.
			rc.log.Warn("signal-cli sent a line that is not JSON; ignored", "err", err, "bytes", len(line))
			continue
		}
		switch {
		case m.Method == "receive":
			if !rc.enqueue(m.Params) {
				return fmt.Errorf("over %d notifications waiting for the handler", maxQueued)
			}
		case m.Method != "":
			rc.log.Debug("signal-cli notification ignored", "method", m.Method)
		case len(m.ID) > 0:
			rc.answer(m)
		default:
			rc.log.Warn("signal-cli sent a message that is neither a notification nor an answer; ignored")
		}
	}
}

// readLine reads one '\n'-terminated line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			return nil, fmt.Errorf("a line from signal-cli is over %d bytes", max)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(bytes.TrimSpace(buf)) > 0:
			return buf, nil // a last line without its newline
		default:
			return nil, err
		}
	}
}

func (rc *rpcConn) enqueue(params json.RawMessage) bool {
	rc.mu.Lock()
	if len(rc.queue) >= maxQueued {
		rc.mu.Unlock()
		return false
	}
	rc.queue = append(rc.queue, params) // Unmarshal copied it
	rc.mu.Unlock()
	select {
	case rc.wake <- struct{}{}:
	default:
	}
	return true
}

// drain takes the queued notifications.
func (rc *rpcConn) drain() []json.RawMessage {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	q := rc.queue
	rc.queue = nil
	return q
}

func (rc *rpcConn) answer(m rpcMessage) {
	id := string(m.ID)
	if s, err := strconv.Unquote(id); err == nil {
		id = s
	}
	rc.mu.Lock()
	ch, ok := rc.pending[id]
	delete(rc.pending, id)
	rc.mu.Unlock()
	if !ok {
		rc.log.Debug("signal-cli answered a call nobody waits for", "id", id)
		return
	}
	ch <- m // buffered: never blocks the reader
}

// errConnLost says the connection ended while a call waited: the daemon
// may have acted on it (a message sent) without being able to say so.
var errConnLost = errors.New("the connection to signal-cli ended before it answered; the request may have been carried out")

// call sends one request and decodes its result into out (when non-nil).
func (rc *rpcConn) call(ctx context.Context, method string, params, out any) error {
	rc.mu.Lock()
	if rc.err != nil {
		err := rc.err
		rc.mu.Unlock()
		return fmt.Errorf("signal-cli %s: not connected: %w", method, err)
	}
	rc.next++
	id := "h" + strconv.Itoa(rc.next)
	ch := make(chan rpcMessage, 1)
	rc.pending[id] = ch
	rc.mu.Unlock()
	forget := func() {
		rc.mu.Lock()
		delete(rc.pending, id)
		rc.mu.Unlock()
	}
	line, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
		ID      string `json:"id"`
	}{"2.0", method, params, id})
	if err != nil {
		forget()
		return fmt.Errorf("signal-cli %s: encoding the request: %w", method, err)
	}
	rc.wmu.Lock()
	_ = rc.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err = rc.c.Write(append(line, '\n'))
	rc.wmu.Unlock()
	if err != nil {
		forget()
		rc.close()
		return fmt.Errorf("signal-cli %s: writing the request: %w", method, err)
	}
	select {
	case <-ctx.Done():
		forget()
		return fmt.Errorf("signal-cli %s: %w", method, ctx.Err())
	case <-rc.done:
		// An answer may have raced the end of the connection.
		select {
		case m := <-ch:
			return decodeAnswer(method, m, out)
		default:
		}
		return fmt.Errorf("signal-cli %s: %w (%v)", method, errConnLost, rc.failure())
	case m := <-ch:
		return decodeAnswer(method, m, out)
	}
}

func decodeAnswer(method string, m rpcMessage, out any) error {
	if m.Error != nil {
		return &RPCError{Method: method, Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}
	}
	if out == nil {
		return nil
	}
	if len(m.Result) == 0 {
		return fmt.Errorf("signal-cli %s: the answer has no result", method)
	}
	if err := json.Unmarshal(m.Result, out); err != nil {
		return fmt.Errorf("signal-cli %s: reading the answer: %w", method, err)
	}
	return nil
}
