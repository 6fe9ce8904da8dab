package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FileAdapter watches one file: created, changed (content hash), deleted.
type FileAdapter struct {
	// Check refuses paths the user's path policy protects (nil: none).
	Check func(path string) error
	// MaxHash bounds the bytes hashed; a bigger file is compared by size
	// and modification time only.
	MaxHash int64
}

type fileSnap struct {
	Exists  bool   `json:"exists"`
	Size    int64  `json:"size,omitempty"`
	ModTime int64  `json:"mtime_ms,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
}

// Name implements Adapter.
func (FileAdapter) Name() string { return "file" }

// EventTypes implements Adapter.
func (FileAdapter) EventTypes() []string {
	return []string{"file.created", "file.changed", "file.deleted"}
}

// Validate implements Adapter.
func (f FileAdapter) Validate(ref string) error {
	if !filepath.IsAbs(ref) {
		return fmt.Errorf("%q must be an absolute path", ref)
	}
	if f.Check != nil {
		return f.Check(ref)
	}
	return nil
}

// Snapshot implements Adapter.
func (f FileAdapter) Snapshot(ctx context.Context, ref string) (json.RawMessage, error) {
	if err := f.Validate(ref); err != nil {
		return nil, err
	}
	fi, err := os.Stat(ref)
	if errors.Is(err, fs.ErrNotExist) {
		return json.Marshal(fileSnap{})
	}
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory; watch a file", ref)
	}
	s := fileSnap{Exists: true, Size: fi.Size(), ModTime: fi.ModTime().UnixMilli()}
	limit := f.MaxHash
	if limit <= 0 {
		limit = 64 << 20
	}
	if fi.Size() <= limit {
		fh, err := os.Open(ref)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		h := sha256.New()
		if _, err := io.Copy(h, io.LimitReader(fh, limit)); err != nil {
			return nil, err
		}
		s.SHA256 = hex.EncodeToString(h.Sum(nil))
	}
	return json.Marshal(s)
}

// Events implements Adapter.
func (FileAdapter) Events(prev, cur json.RawMessage) ([]Event, error) {
	var a, b fileSnap
	if err := json.Unmarshal(prev, &a); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(cur, &b); err != nil {
		return nil, err
	}
	switch {
	case !a.Exists && b.Exists:
		return []Event{{Type: "file.created", Key: "created:" + b.SHA256 + fmt.Sprint(b.ModTime), Data: map[string]any{"size": b.Size}, Text: "The file was created."}}, nil
	case a.Exists && !b.Exists:
		return []Event{{Type: "file.deleted", Key: fmt.Sprintf("deleted:%d", a.ModTime), Text: "The file was deleted."}}, nil
	case a.Exists && b.Exists && (a.SHA256 != b.SHA256 || (b.SHA256 == "" && (a.Size != b.Size || a.ModTime != b.ModTime))):
		return []Event{{Type: "file.changed", Key: fmt.Sprintf("changed:%s:%d", b.SHA256, b.ModTime), Data: map[string]any{"size": b.Size, "previous_size": a.Size}, Text: fmt.Sprintf("The file changed (%d → %d bytes).", a.Size, b.Size)}}, nil
	}
	return nil, nil
}

// DefaultExpiry implements Adapter: the user says how long.
func (FileAdapter) DefaultExpiry(json.RawMessage) time.Duration { return 0 }

// Terminal implements Adapter.
func (FileAdapter) Terminal(json.RawMessage) bool { return false }
