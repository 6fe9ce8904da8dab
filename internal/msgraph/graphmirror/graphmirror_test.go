package graphmirror

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hestia-dev/hestia/internal/msgraph"
)

func TestFolderName(t *testing.T) {
	t.Parallel()
	all := []string{"Work", "Family", "a/b", "A.B", "", strings.Repeat("é", 50)}
	for _, tc := range []struct {
		id, name, want string
	}{
		{"1", "Work", "Work"},
		{"2", " Family ", "Family"},
		{"3", "", "4e07408562bedb8b60ce05c1decfe3ad16b72230967de01f640b7e4729b49fce"[:8]},
		{"4", "a\x00/b", "a__b"},
	} {
		if got := FolderName(tc.id, tc.name, all); got != tc.want {
			t.Errorf("FolderName(%q, %q) = %q, want %q", tc.id, tc.name, got, tc.want)
		}
	}
	// Names that make the same segment get their id's hash, so each has
	// its own folder.
	withSame := append(slices.Clone(all), "a_b")
	a, b := FolderName("x", "a/b", withSame), FolderName("y", "a_b", withSame)
	if a == b || !strings.HasPrefix(a, "a_b-") || !strings.HasPrefix(b, "a_b-") {
		t.Errorf("same segment: %q and %q", a, b)
	}
	// A long name is cut at 80 bytes, never inside a character.
	long := FolderName("z", strings.Repeat("é", 50), all)
	if len(long) > 80 || !strings.HasPrefix(strings.Repeat("é", 50), long) {
		t.Errorf("long name: %q (%d bytes)", long, len(long))
	}
}

func TestRound(t *testing.T) {
	t.Parallel()
	// An expired token (410) starts over with a full round; what the
	// first round counted is forgotten.
	var st Stats
	var calls []bool
	err := Round(&st, false, func(full bool) error {
		calls = append(calls, full)
		st.Changed++
		if !full {
			return fmt.Errorf("page 2: %w", msgraph.ErrSyncReset)
		}
		return nil
	})
	if err != nil || !slices.Equal(calls, []bool{false, true}) || !st.Resynced || st.Mode != ModeFull || st.Changed != 1 {
		t.Fatalf("reset: %v, calls %v, %+v", err, calls, st)
	}
	// A full round that is reset is not run again; another error is
	// returned as it is.
	st, calls = Stats{}, nil
	err = Round(&st, true, func(full bool) error { calls = append(calls, full); return msgraph.ErrSyncReset })
	if !errors.Is(err, msgraph.ErrSyncReset) || len(calls) != 1 {
		t.Fatalf("full round reset: %v, calls %v", err, calls)
	}
	boom := errors.New("boom")
	if err := Round(&st, false, func(bool) error { return boom }); err != boom {
		t.Fatalf("other error: %v", err)
	}
	st = Stats{}
	if err := Round(&st, false, func(bool) error { return nil }); err != nil || st.Mode != ModeIncremental || st.Resynced {
		t.Fatalf("incremental: %v %+v", err, st)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var st Stats
	for range 2 { // the second write of the same content is no write
		if err := st.Write(dir, "a.ics", []byte("A")); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Write(dir, "b.vcf", []byte("B")); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(dir, "a.ics", []byte("A2")); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub.ics"), 0o700)
	if got := Files(dir, ".ics"); !slices.Equal(got, []string{"a.ics"}) {
		t.Errorf("Files = %q", got)
	}
	if got := Files(filepath.Join(dir, "missing"), ".ics"); got != nil {
		t.Errorf("Files of a missing folder = %q", got)
	}
	st.Remove(dir, "a.ics")
	st.Remove(dir, "a.ics") // gone already: not counted
	if b, err := os.ReadFile(filepath.Join(dir, "b.vcf")); err != nil || string(b) != "B" {
		t.Errorf("b.vcf: %q %v", b, err)
	}
	if st.Written != 3 || st.Deleted != 1 {
		t.Errorf("written %d, deleted %d", st.Written, st.Deleted)
	}
	for i := range maxWarnings + 5 {
		st.Warn("entry %d", i)
	}
	if len(st.Warnings) != maxWarnings || st.Warnings[0] != "entry 0" {
		t.Errorf("%d warnings, first %q", len(st.Warnings), st.Warnings[0])
	}
}
