package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/hestia-dev/hestia/internal/scheduler"
)

// humanDuration writes d the way a person does: "5m", "1h30m", "2d4h",
// "2.3s", "850ms" — never Go's "5m0s".
func humanDuration(d time.Duration) string {
	neg := ""
	if d < 0 {
		neg, d = "-", -d
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return neg + d.Round(time.Millisecond).String()
	case d < 10*time.Second:
		return neg + fmt.Sprintf("%.1fs", d.Seconds())
	}
	d = d.Round(time.Second)
	var b strings.Builder
	b.WriteString(neg)
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// scheduleText is s.String() with intervals in human form ("every 5m").
func scheduleText(s scheduler.Schedule) string {
	if s.Kind() == "interval" {
		return "every " + humanDuration(s.Every.D())
	}
	return s.String()
}
