//go:build !unix

package calendar

import "time"

func cpuTime() time.Duration { return 0 }
