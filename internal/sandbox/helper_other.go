//go:build !linux

package sandbox

import "errors"

func landlockABI() int { return 0 }

func restrict(Spec) error { return errors.New("Landlock is Linux only") }

func setProcLimit(uint64) error { return nil }

func mountTmp(string, uint64) error { return nil }

func supervise([]string) (int, bool) { return 0, false }
