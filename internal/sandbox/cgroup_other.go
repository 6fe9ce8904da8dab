//go:build !linux

package sandbox

import "errors"

// cgroups: none outside Linux.
type cgroups struct {
	dir         string
	memory, pid bool
	why         string
}

func detectCgroups() *cgroups { return &cgroups{why: "cgroups are Linux only"} }

func (c *cgroups) make(Limits) (string, func(), error) { return "", func() {}, nil }

func joinCgroup(string) error { return errors.New("cgroups are Linux only") }
