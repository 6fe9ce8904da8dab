// Package wire is the front's side of the daemon's command-line socket:
// the request and reply frames and a client that speaks them with plain
// system calls. It imports neither net nor encoding/json: the front links
// it, and every package a process links is initialised at each start
// (0.2 ms of a 1.7 ms query on a small machine).
//
// A request is the magic "hq1\n", the number of arguments, each argument
// and the client's TZ, every count and length a uvarint. A reply is "hr1\n",
// a handled byte, the exit status as a varint, then stdout and stderr, each
// a uvarint length and the bytes. The server closes the connection after
// the reply.
package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// FileName is the socket's name in the data folder.
const FileName = "cli.sock"

// Path is the socket of the home whose data folder is dataDir.
func Path(dataDir string) string { return filepath.Join(dataDir, FileName) }

// Request is one command line, without the program name.
type Request struct {
	Args []string
	// TZ is the client's TZ variable: dates on the command line and in
	// the answer are in the client's local time, not the daemon's.
	TZ string
}

// Reply is what the command printed and its exit status. Handled false
// means the daemon does not answer this command line here; the client runs
// it itself.
type Reply struct {
	Handled bool
	Stdout  []byte
	Stderr  []byte
	Code    int
}

// Limits of one exchange.
const (
	MaxRequest = 64 << 10
	MaxReply   = 64 << 20
)

const (
	requestMagic = "hq1\n"
	replyMagic   = "hr1\n"
)

// Answered reports whether the daemon answers the command line args (the
// read-only queries `mail search|read|thread` and `wiki search`); the
// front sends it nothing else.
func Answered(args []string) bool {
	if len(args) < 2 {
		return false
	}
	switch args[0] {
	case "mail":
		return args[1] == "search" || args[1] == "read" || args[1] == "thread"
	case "wiki":
		return args[1] == "search"
	}
	return false
}

// ErrNoDaemon is returned by Ask when nothing listens on the socket.
var ErrNoDaemon = errors.New("no daemon is listening on this home's socket")

// AppendRequest appends req's frame to b.
func AppendRequest(b []byte, req Request) []byte {
	b = append(b, requestMagic...)
	b = binary.AppendUvarint(b, uint64(len(req.Args)))
	for _, a := range req.Args {
		b = appendBytes(b, a)
	}
	return appendBytes(b, req.TZ)
}

// ReadRequest reads one request frame of at most MaxRequest bytes from r.
func ReadRequest(r io.Reader) (Request, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxRequest), 4096)
	if err := readMagic(br, requestMagic); err != nil {
		return Request{}, err
	}
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return Request{}, fmt.Errorf("reading the argument count: %w", noEOF(err))
	}
	if n == 0 || n > MaxRequest { // each argument takes a byte at least
		return Request{}, fmt.Errorf("%d arguments: want 1 to %d", n, MaxRequest)
	}
	req := Request{Args: make([]string, 0, min(n, 64))}
	for i := range n {
		a, err := readBytes(br, MaxRequest)
		if err != nil {
			return Request{}, fmt.Errorf("reading argument %d: %w", i+1, err)
		}
		req.Args = append(req.Args, string(a))
	}
	tz, err := readBytes(br, MaxRequest)
	if err != nil {
		return Request{}, fmt.Errorf("reading the time zone: %w", err)
	}
	req.TZ = string(tz)
	return req, nil
}

// AppendReply appends rep's frame to b.
func AppendReply(b []byte, rep Reply) []byte {
	b = append(b, replyMagic...)
	h := byte(0)
	if rep.Handled {
		h = 1
	}
	b = append(b, h)
	b = binary.AppendVarint(b, int64(rep.Code))
	b = appendBytes(b, rep.Stdout)
	return appendBytes(b, rep.Stderr)
}

// ParseReply parses a whole reply frame.
func ParseReply(b []byte) (Reply, error) {
	if len(b) < len(replyMagic)+1 || string(b[:len(replyMagic)]) != replyMagic {
		return Reply{}, errors.New("the answer does not start as a reply frame")
	}
	b = b[len(replyMagic):]
	var rep Reply
	switch b[0] {
	case 0:
	case 1:
		rep.Handled = true
	default:
		return Reply{}, fmt.Errorf("handled byte %d: want 0 or 1", b[0])
	}
	b = b[1:]
	code, n := binary.Varint(b)
	if n <= 0 || code < -1<<31 || code > 1<<31-1 {
		return Reply{}, errors.New("bad exit status")
	}
	rep.Code = int(code)
	b = b[n:]
	var err error
	if rep.Stdout, b, err = cutBytes(b); err != nil {
		return Reply{}, fmt.Errorf("reading stdout: %w", err)
	}
	if rep.Stderr, b, err = cutBytes(b); err != nil {
		return Reply{}, fmt.Errorf("reading stderr: %w", err)
	}
	if len(b) != 0 {
		return Reply{}, fmt.Errorf("%d bytes after the reply", len(b))
	}
	return rep, nil
}

func appendBytes[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readMagic(br *bufio.Reader, magic string) error {
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(br, m); err != nil {
		return fmt.Errorf("reading the frame's start: %w", noEOF(err))
	}
	if string(m) != magic {
		return fmt.Errorf("the frame starts %q, want %q", m, magic)
	}
	return nil
}

func readBytes(br *bufio.Reader, max int) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, noEOF(err)
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("length %d over %d", n, max)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, noEOF(err)
	}
	return b, nil
}

func cutBytes(b []byte) (val, rest []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, nil, errors.New("bad length")
	}
	b = b[k:]
	if n > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d, %d bytes left", n, len(b))
	}
	return b[:n:n], b[n:], nil
}

// noEOF makes a frame that ends early an error that says so.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
