// Package tailbuf keeps the last bytes a child process wrote (its stderr),
// for error messages: a chatty child cannot grow it without bound.
package tailbuf

import (
	"strings"
	"sync"
)

// Buffer is an io.Writer that keeps the last Max bytes written. It is safe
// for concurrent use (os/exec copies into it from its own goroutine).
type Buffer struct {
	mu  sync.Mutex // guards b
	b   []byte
	max int
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

func (t *Buffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		// Copy so the dropped head does not stay reachable.
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

// Last returns up to the last n bytes kept as trimmed text, invalid UTF-8
// replaced by repl.
func (t *Buffer) Last(n int, repl string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(strings.ToValidUTF8(string(b), repl))
}

// String returns everything kept, trimmed, invalid UTF-8 shown as "?".
func (t *Buffer) String() string { return t.Last(t.max, "?") }
