package devices

import (
	"strings"
	"testing"
)

func TestQRMatrixShape(t *testing.T) {
	t.Parallel()
	m, err := QRMatrix("https://hestia.example:4317/pair#code=ABCDEFGH23")
	if err != nil {
		t.Fatal(err)
	}
	n := len(m)
	// Version sizes are 21+4k modules, plus the quiet zone on both sides.
	if (n-2*QRQuiet-21)%4 != 0 {
		t.Fatalf("size %d is not a QR version", n)
	}
	// The three finder patterns: a dark 7x7 ring at the corners.
	for _, c := range [][2]int{{QRQuiet, QRQuiet}, {n - QRQuiet - 7, QRQuiet}, {QRQuiet, n - QRQuiet - 7}} {
		x, y := c[0], c[1]
		if !m[y][x] || !m[y][x+6] || !m[y+6][x] || m[y+1][x+1] || !m[y+3][x+3] {
			t.Fatalf("no finder pattern at %v", c)
		}
	}
	for i := 0; i < n; i++ {
		if m[0][i] || m[i][0] || m[n-1][i] || m[i][n-1] {
			t.Fatal("quiet zone is not light")
		}
	}
	if _, err := QRMatrix(strings.Repeat("x", 8000)); err == nil {
		t.Fatal("text longer than any QR version was encoded")
	}
}

func TestTerminalQR(t *testing.T) {
	t.Parallel()
	s, err := TerminalQR("https://example/pair#code=X")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := QRMatrix("https://example/pair#code=X")
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) != (len(m)+1)/2 || !strings.Contains(s, "█") || !strings.HasPrefix(lines[0], "\x1b[30;47m") {
		t.Fatalf("%d lines for %d modules", len(lines), len(m))
	}
}
