package fast

import (
	"context"
	"io"
	"testing"

	"github.com/hestia-dev/hestia/internal/mail"
)

// A search, read or thread opens the mirror with a small page cache (see
// queryCachePages); an import keeps SQLite's.
func TestQueriesOpenWithASmallCache(t *testing.T) {
	home := t.TempDir()
	env := &Env{Stdout: io.Discard, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "HESTIA_HOME" {
			return home
		}
		return ""
	}}
	ctx := context.Background()
	cacheSize := func(st *mail.Store) int {
		t.Helper()
		var n int
		if err := st.DB().QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	st, done, err := env.mailStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := cacheSize(st); n != queryCachePages {
		t.Errorf("a query's cache_size = %d, want %d", n, queryCachePages)
	}
	done()
	if st, err = env.OpenMailStore(ctx); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n := cacheSize(st); n != -2000 {
		t.Errorf("an import's cache_size = %d, want SQLite's -2000", n)
	}
}
