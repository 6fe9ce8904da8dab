package docs

import (
	"context"
	"testing"
	"time"
)

// FuzzExtract feeds arbitrary bytes to every parser in-process. Panics are
// turned into errors by Extract; the fuzzer looks for hangs and crashes
// that escape that (stack overflows, runaway allocation). Infinite loops in
// the PDF library are the child process's timeout's job, so PDF inputs get
// a deadline here.
func FuzzExtract(f *testing.F) {
	for name, data := range fixtures() {
		if name == "loop.pdf" || name == "zipbomb.docx" {
			continue
		}
		f.Add(data, uint8(0))
	}
	f.Add([]byte(`{\rtf1 {\*\x}\u-3? \'zz}`), uint8(8))
	f.Add([]byte(`<h1>a<script>`), uint8(7))
	formats := []Format{PDF, DOCX, ODT, PPTX, XLSX, ODS, EPUB, HTML, RTF, Markdown, Text}
	f.Fuzz(func(t *testing.T, data []byte, which uint8) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, format := range formats {
			if which != 0 && formats[int(which)%len(formats)] != format {
				continue
			}
			if format == PDF {
				continue // see FuzzPDFChild
			}
			doc, err := Extract(ctx, data, format, Limits{MaxChars: 100_000, MaxArchiveBytes: 8 << 20})
			if err == nil && doc.Chars() > 100_000 {
				t.Fatalf("%s: %d chars over the cap", format, doc.Chars())
			}
		}
	})
}

// FuzzPDFChild runs mutated PDFs through the child process, where a loop
// or a stack overflow in the PDF library is contained.
func FuzzPDFChild(f *testing.F) {
	f.Add(fixture(f, "contract.pdf"))
	f.Add(fixture(f, "scanned.pdf"))
	f.Add(fixture(f, "loop.pdf"))
	x := childExtractor(Limits{Timeout: time.Second, MemoryBytes: 1 << 30})
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = x.Extract(context.Background(), data, PDF)
	})
}
