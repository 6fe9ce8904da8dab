// Package graphmirror is what the Microsoft Graph mirrors share (graphcal
// mirrors calendars, graphcards contact folders, each into a folder of
// files that is then indexed like any vdir): the report of a pass, the
// mirror folder's name, the delta round started over when Graph lets the
// stored token expire, and writing and removing the mirror's files.
package graphmirror

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/hestia-dev/hestia/internal/atomicfile"
	"github.com/hestia-dev/hestia/internal/msgraph"
)

// Modes of a pass.
const (
	ModeFull        = "full"        // a new delta round: everything listed
	ModeIncremental = "incremental" // the changes since the last round
)

// Stats reports one pass.
type Stats struct {
	Mode    string `json:"mode"`
	Changed int    `json:"changed"` // entries added or updated
	Removed int    `json:"removed"` // entries removed (@removed)
	Written int    `json:"written"` // files written
	Deleted int    `json:"deleted"` // files removed
	Files   int    `json:"files"`   // files the folder holds after the pass
	Skipped int    `json:"skipped"` // entries left out (malformed)
	// Resynced is set when the stored delta token had expired (410) and
	// the pass started a new round.
	Resynced bool     `json:"resynced,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// maxWarnings bounds the warnings a pass reports: a mailbox of malformed
// entries says so in a few lines, not thousands.
const maxWarnings = 50

// Warn adds a warning, up to maxWarnings.
func (st *Stats) Warn(format string, args ...any) {
	if len(st.Warnings) < maxWarnings {
		st.Warnings = append(st.Warnings, fmt.Sprintf(format, args...))
	}
}

// Round runs a pass's delta round into st: round(full) continues the
// stored round unless full, and when Graph answers that the stored token
// has expired (410 Gone, msgraph.ErrSyncReset) it runs again from scratch
// with st started over and marked Resynced. It sets st.Mode.
func Round(st *Stats, full bool, round func(full bool) error) error {
	err := round(full)
	if errors.Is(err, msgraph.ErrSyncReset) && !full {
		*st, full = Stats{Resynced: true}, true
		err = round(true)
	}
	if err != nil {
		return err
	}
	st.Mode = ModeIncremental
	if full {
		st.Mode = ModeFull
	}
	return nil
}

// Write puts data in dir/name unless the file holds it already (an
// unchanged entry leaves its file, and the index's view of it, alone),
// counting a write in Written.
func (st *Stats) Write(dir, name string, data []byte) error {
	path := filepath.Join(dir, name)
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	if err := atomicfile.Write(path, data, 0o600); err != nil {
		return err
	}
	st.Written++
	return nil
}

// Remove deletes dir/name, counting it in Deleted when it was there.
func (st *Stats) Remove(dir, name string) {
	if err := os.Remove(filepath.Join(dir, name)); err == nil {
		st.Deleted++
	}
}

// Files lists the names of dir's files ending in ext: a full round clears
// those no entry holds, such as the files of a pass that crashed between
// writing them and saving its state.
func Files(dir, ext string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ext) {
			out = append(out, e.Name())
		}
	}
	return out
}

// FolderName is the mirror folder of the collection id named name among
// its siblings (every collection's name, its own included): the name
// made one safe path segment, with a short hash of the id when it is
// empty or another collection's name makes the same segment.
func FolderName(id, name string, siblings []string) string {
	seg := safeSegment(name)
	dup := 0
	for _, o := range siblings {
		if safeSegment(o) == seg {
			dup++
		}
	}
	if seg == "" || dup > 1 {
		sum := sha256.Sum256([]byte(id))
		seg = strings.Trim(seg+"-"+hex.EncodeToString(sum[:4]), "-")
	}
	return seg
}

func safeSegment(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == '.' || unicode.IsControl(r) {
			return '_'
		}
		return r
	}, strings.TrimSpace(s))
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "")
	}
	return s
}
