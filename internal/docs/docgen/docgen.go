// Package docgen builds small real documents (a one-page PDF with a text
// layer, a Word document) from lines of text, for the suites that need
// documents whose content they know: the adversarial suite plants
// injections in them, the evaluation suite facts to find.
package docgen

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// DOCX is a Word document whose body paragraphs are lines.
func DOCX(lines []string) []byte {
	var body strings.Builder
	for _, line := range lines {
		var esc bytes.Buffer
		_ = xml.EscapeText(&esc, []byte(line))
		body.WriteString(`<w:p><w:r><w:t xml:space="preserve">` + esc.String() + `</w:t></w:r></w:p>`)
	}
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, _ := w.Create("word/document.xml")
	_, _ = f.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`))
	_ = w.Close()
	return b.Bytes()
}

// PDF is a one-page PDF whose text layer holds lines. Only ASCII is kept:
// other characters become '?', as a WinAnsi font would show them.
func PDF(lines []string) []byte {
	var cs strings.Builder
	cs.WriteString("BT /F1 10 Tf 50 780 Td\n")
	for i, l := range lines {
		l = strings.Map(func(r rune) rune {
			if r < 0x20 || r > 0x7e {
				return '?'
			}
			return r
		}, l)
		l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l)
		if i > 0 {
			cs.WriteString("0 -12 Td ")
		}
		fmt.Fprintf(&cs, "(%s) Tj\n", l)
	}
	cs.WriteString("ET")
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", cs.Len(), cs.String()),
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, x)
	return b.Bytes()
}
