package lock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestAcquireTwice(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hestia.lock")
	l, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	if held, pid := Held(path); !held || pid != os.Getpid() {
		t.Fatalf("Held = %v, %d", held, pid)
	}
	// flock locks belong to the open file description, so a second open in
	// the same process conflicts just like another process would.
	if _, err := Acquire(path); !errors.Is(err, ErrHeld) {
		t.Fatalf("second Acquire err = %v, want ErrHeld", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if held, _ := Held(path); held {
		t.Fatal("lock still held after release")
	}
	l2, err := Acquire(path)
	if err != nil {
		t.Fatalf("re-acquire after release: %v", err)
	}
	l2.Release()
}

func TestHeldMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.lock")
	if held, _ := Held(path); held {
		t.Fatal("missing lock reported held")
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("Held created the file")
	}
}
