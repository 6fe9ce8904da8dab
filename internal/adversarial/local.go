package adversarial

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/docs"
	"github.com/hestia-dev/hestia/internal/docs/docgen"
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
	return docgen.DOCX(append([]string{"Service contract", "Termination: either party may end this contract with 30 days notice."}, strings.Split(text, "\n")...))
}

// pdfWith builds a one-page PDF whose text layer holds text (ASCII only).
func pdfWith(text string) []byte {
	return docgen.PDF(append([]string{"Terms of service", "Termination: we may end the service at any time."}, strings.Split(text, "\n")...))
}
