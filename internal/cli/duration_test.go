package cli

import (
	"testing"
	"time"

	"github.com/hestia-dev/hestia/internal/scheduler"
)

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{850 * time.Millisecond, "850ms"},
		{2300 * time.Millisecond, "2.3s"},
		{45 * time.Second, "45s"},
		{5 * time.Minute, "5m"},
		{65 * time.Second, "1m5s"},
		{90 * time.Minute, "1h30m"},
		{2 * time.Hour, "2h"},
		{52 * time.Hour, "2d4h"},
		{-5 * time.Minute, "-5m"},
	}
	for _, c := range cases {
		if got := humanDuration(c.d); got != c.want {
			t.Errorf("humanDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := scheduleText(scheduler.Schedule{Every: scheduler.Duration(5 * time.Minute)}); got != "every 5m" {
		t.Errorf("scheduleText = %q, want every 5m", got)
	}
}
