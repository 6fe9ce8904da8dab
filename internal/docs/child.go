package docs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// ChildEnv is set in the environment of the extraction child. Test binaries
// check it in TestMain (RunChildIfAsked) so they can stand in for hestia.
const ChildEnv = "HESTIA_EXTRACT_CHILD"

// ChildMain is `hestia extract`: it limits its own resources, reads one
// document from stdin, writes the Document as JSON to stdout and returns
// the exit status. Errors go to stderr as one line.
func ChildMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "", "document format")
	maxInput := fs.Int64("max-input", 0, "input cap in bytes")
	maxArchive := fs.Int64("max-archive", 0, "declared ZIP content cap in bytes")
	maxEntries := fs.Int("max-entries", 0, "ZIP entry cap")
	maxChars := fs.Int("max-chars", 0, "extracted character cap")
	timeout := fs.Duration("timeout", 0, "CPU time budget")
	mem := fs.Int64("memory", 0, "address-space limit in bytes")
	stream := fs.Bool("stream", false, "write a JSON header line and the raw page text (the daemon's format) instead of one JSON document")
	formatLine := fs.Bool("format-line", false, "read the format from the first line of stdin (a child started before its document is known)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	lim := Limits{MaxInputBytes: *maxInput, MaxArchiveBytes: *maxArchive, MaxArchiveEntries: *maxEntries, MaxChars: *maxChars, Timeout: *timeout, MemoryBytes: *mem}.WithDefaults()
	// The heap target keeps the collector working well below the hard
	// limit, so most hostile inputs fail with an error, not a kill.
	debug.SetMemoryLimit(lim.MemoryBytes / 2)
	if err := limitSelf(lim); err != nil {
		fmt.Fprintf(stderr, "setting resource limits: %v\n", err)
		return 1
	}
	if *formatLine {
		br := bufio.NewReaderSize(stdin, 64<<10)
		line, err := br.ReadSlice('\n')
		if err != nil || len(line) > 32 {
			fmt.Fprintf(stderr, "reading the format line: no document came\n")
			return 1
		}
		*format = strings.TrimSpace(string(line))
		stdin = br
	}
	data, err := io.ReadAll(io.LimitReader(stdin, lim.MaxInputBytes+1))
	if err != nil {
		fmt.Fprintf(stderr, "reading the document: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout)
	defer cancel()
	doc, err := Extract(ctx, data, Format(*format), lim)
	if err != nil {
		code := 1
		switch {
		case errors.Is(err, ErrNoText):
			code = 3
		case errors.Is(err, ErrTooLarge):
			code = 4
		case errors.Is(err, ErrUnsupported):
			code = 5
		}
		fmt.Fprintln(stderr, oneLine(err.Error()))
		return code
	}
	write := func() error { return json.NewEncoder(stdout).Encode(doc) }
	if *stream {
		write = func() error { return writeStream(stdout, doc) }
	}
	if err := write(); err != nil {
		fmt.Fprintf(stderr, "writing the result: %v\n", err)
		return 1
	}
	return 0
}

// The stream format: one JSON line with everything but the page text
// (each page's byte length instead), then the pages' text back to back.
// Page text is most of a document; sent raw it needs no escaping in the
// child and no unescaping or per-page copies in the daemon.
type streamHeader struct {
	Format   Format       `json:"format"`
	Title    string       `json:"title,omitempty"`
	Pages    []streamPage `json:"pages"`
	Headings []Heading    `json:"headings,omitempty"`
	Warnings []string     `json:"warnings,omitempty"`
}

type streamPage struct {
	Number int    `json:"number"`
	Label  string `json:"label,omitempty"`
	Len    int    `json:"len"`
}

func writeStream(w io.Writer, doc *Document) error {
	h := streamHeader{Format: doc.Format, Title: doc.Title, Headings: doc.Headings, Warnings: doc.Warnings, Pages: make([]streamPage, len(doc.Pages))}
	for i, p := range doc.Pages {
		h.Pages[i] = streamPage{Number: p.Number, Label: p.Label, Len: len(p.Text)}
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	if err := json.NewEncoder(bw).Encode(h); err != nil {
		return err
	}
	for _, p := range doc.Pages {
		if _, err := bw.WriteString(p.Text); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readStream parses the child's stream output. The child is treated as
// untrusted too: lengths must add up exactly, and text that is not valid
// UTF-8 is repaired as the JSON decoder would have.
func readStream(b []byte) (*Document, error) {
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, errors.New("no header line")
	}
	var h streamHeader
	if err := json.Unmarshal(b[:nl], &h); err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	body := b[nl+1:]
	total := 0
	for _, p := range h.Pages {
		if p.Len < 0 || p.Len > len(body)-total {
			return nil, fmt.Errorf("page %d claims %d bytes, more than the %d left", p.Number, p.Len, len(body)-total)
		}
		total += p.Len
	}
	if total != len(body) {
		return nil, fmt.Errorf("the pages hold %d bytes but %d followed the header", total, len(body))
	}
	text := string(body) // one copy; pages are slices of it
	doc := &Document{Format: h.Format, Title: h.Title, Headings: h.Headings, Warnings: h.Warnings, Pages: make([]Page, len(h.Pages))}
	off := 0
	for i, p := range h.Pages {
		t := text[off : off+p.Len]
		off += p.Len
		if !utf8.ValidString(t) {
			t = strings.ToValidUTF8(t, "\uFFFD")
		}
		doc.Pages[i] = Page{Number: p.Number, Label: p.Label, Text: t}
	}
	return doc, nil
}

// RunChildIfAsked runs ChildMain and exits when this process was started as
// an extraction child. The hestia binary dispatches `extract` itself; test
// binaries that stand in for it call this first thing in TestMain.
func RunChildIfAsked() {
	if os.Getenv(ChildEnv) != "1" {
		return
	}
	args := os.Args[1:]
	for i, a := range args {
		if a == "extract" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(ChildMain(args, os.Stdin, os.Stdout, os.Stderr))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

// Extractor runs extraction in a child process of the same binary. Each
// child reads exactly one document and exits.
type Extractor struct {
	// Exe is the binary to run (os.Executable() for hestia); Args come
	// before the flags ("extract").
	Exe    string
	Args   []string
	Limits Limits
	// Prestart keeps one child started and waiting for its document, so an
	// extraction does not wait for a process to start (with this big
	// binary, most of a small document's cold time).
	Prestart bool

	mu       sync.Mutex // guards ready and starting
	ready    *child
	starting chan struct{} // closed when an in-flight Warm is done
}

// child is a started extraction process waiting for its document.
type child struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *capped
	done           chan struct{} // closed once Wait returned
	err            error         // Wait's result
}

func (c *child) kill() {
	if c.cmd.Process != nil {
		killGroup(c.cmd.Process.Pid)
	}
	c.stdin.Close()
}

func (x *Extractor) start() (*child, error) {
	lim := x.Limits.WithDefaults()
	args := append(append([]string(nil), x.Args...),
		"--format-line", "--stream",
		"--max-input", fmt.Sprint(lim.MaxInputBytes), "--max-archive", fmt.Sprint(lim.MaxArchiveBytes),
		"--max-entries", fmt.Sprint(lim.MaxArchiveEntries), "--max-chars", fmt.Sprint(lim.MaxChars),
		"--timeout", lim.Timeout.String(), "--memory", fmt.Sprint(lim.MemoryBytes))
	cmd := exec.Command(x.Exe, args...)
	// The child's environment is empty but for the marker: no provider
	// keys, no HESTIA_* settings reach a parser.
	cmd.Env = []string{ChildEnv + "=1", "GOMAXPROCS=2"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the extractor: %w", err)
	}
	// Raw text plus a header; anything past this is not ours.
	c := &child{cmd: cmd, stdin: stdin, stdout: &capped{max: int64(lim.MaxChars)*4 + 8<<20}, stderr: &capped{max: 8 << 10}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = c.stdout, c.stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the extractor: %w", err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

// take returns the waiting child, or a new one, and starts the next.
func (x *Extractor) take() (*child, error) {
	x.mu.Lock()
	starting := x.starting
	x.mu.Unlock()
	if starting != nil {
		<-starting // a child is being started anyway: use it
	}
	x.mu.Lock()
	c := x.ready
	x.ready = nil
	x.mu.Unlock()
	if c != nil {
		select {
		case <-c.done: // it died waiting (killed from outside); start another
			c = nil
		default:
		}
	}
	if x.Prestart {
		defer func() { go x.Warm() }()
	}
	if c != nil {
		return c, nil
	}
	return x.start()
}

// Warm starts a child to wait for the next document, unless one waits.
func (x *Extractor) Warm() {
	x.mu.Lock()
	if x.ready != nil || x.starting != nil {
		x.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	x.starting = ch
	x.mu.Unlock()
	// A failure here is left for the next extraction, which starts its
	// own child and reports the error.
	c, err := x.start()
	x.mu.Lock()
	x.starting = nil
	if err == nil && x.ready == nil {
		x.ready, c = c, nil
	}
	x.mu.Unlock()
	close(ch)
	if err == nil && c != nil {
		c.kill()
	}
}

// Close stops the waiting child, if any.
func (x *Extractor) Close() {
	x.mu.Lock()
	c := x.ready
	x.ready = nil
	x.mu.Unlock()
	if c != nil {
		c.kill()
		<-c.done
	}
}

// Extract runs a child on data.
func (x *Extractor) Extract(ctx context.Context, data []byte, format Format) (*Document, error) {
	lim := x.Limits.WithDefaults()
	if int64(len(data)) > lim.MaxInputBytes {
		return nil, fmt.Errorf("the file is %d bytes; documents over %d bytes are not read: %w", len(data), lim.MaxInputBytes, ErrTooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	c, err := x.take()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	go func() {
		// A child that stops reading (a refused format) makes the write
		// fail; its exit status says why.
		c.stdin.Write(append([]byte(string(format)+"\n"), data...))
		c.stdin.Close()
	}()
	select {
	case <-c.done:
	case <-ctx.Done():
		c.kill()
		<-c.done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("extraction took longer than %s and was stopped (the file may be malformed or hostile)", lim.Timeout)
		}
		return nil, ctx.Err()
	}
	if err := c.err; err != nil {
		var ee *exec.ExitError
		msg := strings.TrimSpace(c.stderr.String())
		if errors.As(err, &ee) {
			switch {
			case ee.ExitCode() == 3:
				return nil, fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+ErrNoText.Error()), ErrNoText)
			case ee.ExitCode() == 4:
				return nil, fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+ErrTooLarge.Error()), ErrTooLarge)
			case ee.ExitCode() == 5:
				return nil, fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+ErrUnsupported.Error()), ErrUnsupported)
			case ee.ExitCode() < 0 || msg == "" || strings.HasPrefix(msg, "fatal error") || strings.HasPrefix(msg, "runtime:"):
				return nil, fmt.Errorf("the extractor died after %s (%s); the file is too large or malformed to read safely", time.Since(start).Round(time.Millisecond), firstLine(ee.String(), msg))
			}
			return nil, errors.New(msg)
		}
		return nil, fmt.Errorf("running the extractor: %w", err)
	}
	if c.stdout.over {
		return nil, errors.New("the extractor's output exceeded its limit")
	}
	doc, err := readStream(c.stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("reading the extractor's output: %w", err)
	}
	return doc, nil
}

func firstLine(a, b string) string {
	if i := strings.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if b == "" {
		return a
	}
	return a + ": " + b
}

// capped is a buffer that stops growing at max and remembers it did.
type capped struct {
	bytes.Buffer
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if int64(c.Len()+len(p)) > c.max {
		c.over = true
		p = p[:max(0, int(c.max)-c.Len())]
	}
	c.Buffer.Write(p)
	return len(p), nil
}
