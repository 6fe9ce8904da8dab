package tailbuf

import (
	"strings"
	"testing"
)

func TestKeepsTheTail(t *testing.T) {
	b := New(8)
	b.Write([]byte("  hello "))
	b.Write([]byte("world\xff!"))
	if got := b.String(); got != "world?!" {
		t.Errorf("String() = %q, want the last 8 bytes trimmed with invalid UTF-8 replaced", got)
	}
	if got := b.Last(3, ""); got != "d!" {
		t.Errorf("Last(3) = %q, want the last 3 bytes with the invalid one dropped", got)
	}
	big := New(4)
	big.Write([]byte(strings.Repeat("x", 1000) + "tail"))
	if got := big.String(); got != "tail" {
		t.Errorf("after a large write: %q", got)
	}
}
