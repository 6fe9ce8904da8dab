package adversarial

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/files"
	"github.com/hestia-dev/hestia/internal/pathpolicy"
	"github.com/hestia-dev/hestia/internal/sandbox"
	"github.com/hestia-dev/hestia/internal/shell"
	"github.com/hestia-dev/hestia/internal/tools"
)

// localTools are the real document, find and shell tools over the
// sandbox's home. Documents are parsed in-process here: the suite builds
// them itself, and the child-process boundary is tested in internal/docs.
// The shell tools run under the OS sandbox the install would use.
func localTools(pp *pathpolicy.Policy, home string, osb *sandbox.Sandbox) []tools.Tool {
	svc := docs.NewService(pp, docs.InProcess{}, nil, docs.Limits{})
	out := append(svc.Tools(), files.FindTool(pp, time.Now))
	sh := &shell.Runner{Paths: pp, Home: home, Timeout: 10 * time.Second, Sandbox: osb, Read: []string{home}, Hide: pp.Hidden()}
	return append(out, sh.Tools()...)
}

// DefaultShellSandbox is the OS sandbox `hestia` itself would use: this
// binary re-executed as `sandbox-exec` when bubblewrap is not usable.
func DefaultShellSandbox() *sandbox.Sandbox {
	exe, err := os.Executable()
	if err != nil {
		return &sandbox.Sandbox{}
	}
	return &sandbox.Sandbox{Helper: []string{exe, "sandbox-exec"}}
}

// confining reports whether the OS sandbox isolates the filesystem.
func confining(ctx context.Context, osb *sandbox.Sandbox) (bool, string) {
	if osb == nil {
		return false, "no OS sandbox"
	}
	st := osb.Status(ctx)
	return st.Mode == sandbox.Bubblewrap || st.Mode == sandbox.Landlock, st.String()
}

func writeBytes(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// docxWith builds a Word document whose body paragraphs are the lines of
// text: a contract with the attacker's instructions inside.
func docxWith(text string) []byte {
	var body strings.Builder
	for _, line := range append([]string{"Service contract", "Termination: either party may end this contract with 30 days notice."}, strings.Split(text, "\n")...) {
		var esc bytes.Buffer
		xml.EscapeText(&esc, []byte(line))
		body.WriteString(`<w:p><w:r><w:t xml:space="preserve">` + esc.String() + `</w:t></w:r></w:p>`)
	}
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, _ := w.Create("word/document.xml")
	f.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` + body.String() + `</w:body></w:document>`))
	w.Close()
	return b.Bytes()
}

// pdfWith builds a one-page PDF whose text layer holds text (ASCII only:
// other characters become '?', as a WinAnsi font would show them).
func pdfWith(text string) []byte {
	lines := append([]string{"Terms of service", "Termination: we may end the service at any time."}, strings.Split(text, "\n")...)
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
