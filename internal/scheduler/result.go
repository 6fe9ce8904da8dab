package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/notify"
)

// MaxResult bounds a run's stored result text.
const MaxResult = 8000

type resultKey struct{}

// resultBox carries a run's result from the job's function back to the
// journal; mu guards text because a job may report from its own goroutines.
type resultBox struct {
	mu   sync.Mutex
	text string
}

func (b *resultBox) get() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text
}

// SetResult records what the run in ctx produced (a user job's final
// answer, a built-in job's one-line summary); the last call wins. It is
// journaled with the run, printed by `hestia jobs run --wait` and is the
// text delivered to the user. Outside a run it does nothing.
func SetResult(ctx context.Context, text string) {
	if b, ok := ctx.Value(resultKey{}).(*resultBox); ok {
		b.mu.Lock()
		b.text = strings.TrimSpace(text)
		b.mu.Unlock()
	}
}

// clipText cuts s to at most n bytes on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// SetDeliver stores where a job's results go (nil: the default).
func (s *Scheduler) SetDeliver(ctx context.Context, name string, deliver []string) (Job, error) {
	d, err := notify.ParseDeliver(deliver)
	if err != nil {
		return Job{}, err
	}
	if _, err := s.getJob(ctx, name); err != nil {
		return Job{}, err
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE jobs SET deliver = ? WHERE name = ?`, strings.Join(d, ","), name); err != nil {
		return Job{}, fmt.Errorf("storing the delivery of job %s: %w", name, err)
	}
	return s.Get(ctx, name)
}
