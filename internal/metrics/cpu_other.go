//go:build !unix

package metrics

import "math"

// processCPU is not measured on this platform.
func processCPU() float64 { return math.NaN() }
