package devices

import (
	"fmt"
	"strings"

	qrcode "github.com/skip2/go-qrcode"
)

// QRQuiet is the quiet zone in modules that the QR specification asks for
// around a symbol; scanners fail more often without it.
const QRQuiet = 4

// QRMatrix encodes text (medium error correction) and returns its modules,
// true for dark, with the quiet zone included.
//
// The encoder is skip2/go-qrcode: it has no package init work, where the
// previous one decoded a Kanji table at start in every hestia process
// (every CLI command paid for it, not just pairing).
func QRMatrix(text string) ([][]bool, error) {
	code, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("encoding QR code: %w", err)
	}
	code.DisableBorder = true
	inner := code.Bitmap()
	n := len(inner) + 2*QRQuiet
	m := make([][]bool, n)
	for y := range m {
		m[y] = make([]bool, n)
		if iy := y - QRQuiet; iy >= 0 && iy < len(inner) {
			copy(m[y][QRQuiet:], inner[iy])
		}
	}
	return m, nil
}

// TerminalQR renders text as a QR code for a terminal: two modules per
// character cell with half blocks, drawn black on an explicit white
// background (ANSI colours) so it scans on dark and light terminal themes.
func TerminalQR(text string) (string, error) {
	m, err := QRMatrix(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for y := 0; y < len(m); y += 2 {
		b.WriteString("\x1b[30;47m")
		for x := range m[y] {
			top := m[y][x]
			bottom := y+1 < len(m) && m[y+1][x]
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString("\x1b[0m\n")
	}
	return b.String(), nil
}
