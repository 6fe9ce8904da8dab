//go:build !unix

package sandbox

func setLimits(Limits) error { return nil }
