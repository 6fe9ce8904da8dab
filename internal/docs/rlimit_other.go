//go:build !unix

package docs

import (
	"os"
	"os/exec"
)

func limitSelf(Limits) error { return nil }

func setProcessGroup(*exec.Cmd) {}

func killGroup(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}
