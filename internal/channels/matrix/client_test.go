package matrix

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ms     int64
		header string
		want   time.Duration
	}{
		{1500, "", 1500 * time.Millisecond},
		{1500, "9", 1500 * time.Millisecond}, // the body is more precise
		{0, "7", 7 * time.Second},
		{0, "", 5 * time.Second},
		{0, "soon", 5 * time.Second},
		{0, "-3", 5 * time.Second},
		{99_999_999, "", time.Hour}, // never more than an hour
		{0, "86400", time.Hour},
	} {
		if got := retryAfter(tc.ms, tc.header); got != tc.want {
			t.Errorf("retryAfter(%d, %q) = %v, want %v", tc.ms, tc.header, got, tc.want)
		}
	}
}
