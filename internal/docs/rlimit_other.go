//go:build !unix

package docs

import "os/exec"

func limitSelf(Limits) error { return nil }

func setProcessGroup(*exec.Cmd) {}
