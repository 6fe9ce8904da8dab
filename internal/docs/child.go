package docs

import (
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
	"time"
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
	if err := json.NewEncoder(stdout).Encode(doc); err != nil {
		fmt.Fprintf(stderr, "writing the result: %v\n", err)
		return 1
	}
	return 0
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

// Extractor runs extraction in a child process of the same binary.
type Extractor struct {
	// Exe is the binary to run (os.Executable() for hestia); Args come
	// before the flags ("extract").
	Exe    string
	Args   []string
	Limits Limits
}

// Extract runs the child on data. The child's environment is empty but for
// the marker: no provider keys, no HESTIA_* settings reach a parser.
func (x *Extractor) Extract(ctx context.Context, data []byte, format Format) (*Document, error) {
	lim := x.Limits.WithDefaults()
	if int64(len(data)) > lim.MaxInputBytes {
		return nil, fmt.Errorf("the file is %d bytes; documents over %d bytes are not read: %w", len(data), lim.MaxInputBytes, ErrTooLarge)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	args := append(append([]string(nil), x.Args...),
		"--format", string(format),
		"--max-input", fmt.Sprint(lim.MaxInputBytes), "--max-archive", fmt.Sprint(lim.MaxArchiveBytes),
		"--max-entries", fmt.Sprint(lim.MaxArchiveEntries), "--max-chars", fmt.Sprint(lim.MaxChars),
		"--timeout", lim.Timeout.String(), "--memory", fmt.Sprint(lim.MemoryBytes))
	cmd := exec.CommandContext(ctx, x.Exe, args...)
	cmd.Env = []string{ChildEnv + "=1", "GOMAXPROCS=2"}
	cmd.Stdin = bytes.NewReader(data)
	// JSON escaping can double the text; anything past that is not ours.
	stdout := &capped{max: int64(lim.MaxChars)*8 + 1<<20}
	stderr := &capped{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	setProcessGroup(cmd)
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("extraction took longer than %s and was stopped (the file may be malformed or hostile)", lim.Timeout)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		var ee *exec.ExitError
		msg := strings.TrimSpace(stderr.String())
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
		return nil, fmt.Errorf("starting the extractor: %w", err)
	}
	if stdout.over {
		return nil, errors.New("the extractor's output exceeded its limit")
	}
	var doc Document
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		return nil, fmt.Errorf("reading the extractor's output: %w", err)
	}
	return &doc, nil
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
