package wiki

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hestia-dev/hestia/internal/atomicfile"
)

// MaxPageBytes bounds a page written through the wiki (tools and API);
// files put in the folder by other means may be larger.
const MaxPageBytes = 1 << 20

// ErrBadPath is returned for a write target the wiki refuses.
var ErrBadPath = errors.New("bad wiki path")

// CheckWritePath validates a wiki-relative path for the wiki's own writes:
// a relative .md path inside the folder, no hidden or dot-dot segments, no
// control or look-alike characters, not under sources/ (raw material keeps
// the bytes it came with) and not log.md (the operation trail is appended
// by the wiki itself). It returns the cleaned path.
func CheckWritePath(rel string) (string, error) {
	bad := func(why string) (string, error) { return "", fmt.Errorf("%w %q: %s", ErrBadPath, rel, why) }
	if rel == "" {
		return bad("empty")
	}
	if !utf8.ValidString(rel) || len(rel) > 512 {
		return bad("not valid UTF-8 or too long")
	}
	for _, r := range rel {
		if r < 0x20 || r == 0x7f || r == '\\' || r == ':' || unicode.Is(unicode.Cf, r) || (r >= 0x2024 && r <= 0x2026) || (r >= 0xff00 && r <= 0xffef) {
			return bad(fmt.Sprintf("character %U is not allowed", r))
		}
	}
	if strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, "~") {
		return bad("must be relative to the wiki folder")
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") {
			return bad("empty, dot or hidden path segment")
		}
		if strings.TrimSpace(seg) != seg {
			return bad("a path segment starts or ends with a space")
		}
	}
	clean := path.Clean(rel)
	if strings.ToLower(path.Ext(clean)) != ".md" {
		return bad("wiki pages end in .md")
	}
	if strings.HasPrefix(strings.ToLower(clean), SourcesDir+"/") {
		return bad("sources/ holds imported and mail-derived material; write pages under pages/")
	}
	if strings.EqualFold(clean, LogFile) {
		return bad("log.md is written by the wiki itself")
	}
	return clean, nil
}

// resolveForWrite returns the absolute target, refusing a symlink anywhere
// on the way (an existing link inside the vault could point outside it).
func (w *Wiki) resolveForWrite(rel string) (string, error) {
	full := filepath.Join(w.root, filepath.FromSlash(rel))
	cur := w.root
	for _, seg := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, seg)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("%w %q: %s is a symbolic link", ErrBadPath, rel, seg)
		}
		if cur != full && !fi.IsDir() {
			return "", fmt.Errorf("%w %q: %s is not a folder", ErrBadPath, rel, seg)
		}
		if cur == full && !fi.Mode().IsRegular() {
			return "", fmt.Errorf("%w %q: not a regular file", ErrBadPath, rel)
		}
	}
	return full, nil
}

// Current returns a page's bytes for a write preview, and whether it
// exists. A missing page is "" and false.
func (w *Wiki) Current(rel string) (string, bool, error) {
	rel, err := CheckWritePath(rel)
	if err != nil {
		return "", false, err
	}
	full, err := w.resolveForWrite(rel)
	if err != nil {
		return "", false, err
	}
	f, err := os.OpenFile(full, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if fi.Size() > MaxPageBytes {
		return "", true, fmt.Errorf("%s is %d bytes, over the %d the wiki edits", rel, fi.Size(), MaxPageBytes)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return "", true, err
	}
	return string(b), true, nil
}

// WriteResult says what a write did.
type WriteResult struct {
	Path    string `json:"path"`
	Created bool   `json:"created"`
	Bytes   int    `json:"bytes"`
	Diff    string `json:"diff,omitempty"`
}

// Write creates or replaces a page with content (atomically: temporary
// file, then rename), indexes it and records the operation in log.md. who
// names the writer for the log ("agent", "user", "mail-promoter").
func (w *Wiki) Write(ctx context.Context, rel, content, who string) (WriteResult, error) {
	rel, err := CheckWritePath(rel)
	if err != nil {
		return WriteResult{}, err
	}
	if !utf8.ValidString(content) {
		return WriteResult{}, errors.New("page content is not valid UTF-8")
	}
	if len(content) > MaxPageBytes {
		return WriteResult{}, fmt.Errorf("page content is %d bytes, over the %d limit", len(content), MaxPageBytes)
	}
	old, existed, err := w.Current(rel)
	if err != nil {
		return WriteResult{}, err
	}
	if err := w.writeFile(rel, []byte(content)); err != nil {
		return WriteResult{}, err
	}
	op := "update"
	if !existed {
		op = "create"
	}
	w.appendLog(op, rel, who)
	if err := w.IndexPath(ctx, rel); err != nil {
		return WriteResult{}, fmt.Errorf("indexing %s: %w", rel, err)
	}
	return WriteResult{Path: rel, Created: !existed, Bytes: len(content), Diff: UnifiedDiff(rel, old, content)}, nil
}

// Edit replaces exactly one occurrence of old with new in a page.
func (w *Wiki) Edit(ctx context.Context, rel, old, new, who string) (WriteResult, error) {
	next, err := w.EditPreview(rel, old, new)
	if err != nil {
		return WriteResult{}, err
	}
	return w.Write(ctx, rel, next, who)
}

// EditPreview returns the page text an Edit would write.
func (w *Wiki) EditPreview(rel, old, new string) (string, error) {
	if old == "" {
		return "", errors.New("old_text is empty")
	}
	cur, existed, err := w.Current(rel)
	if err != nil {
		return "", err
	}
	if !existed {
		return "", fmt.Errorf("%w: no wiki page %q (use wiki_write to create one)", ErrNotFound, rel)
	}
	switch n := strings.Count(cur, old); n {
	case 0:
		return "", fmt.Errorf("old_text does not occur in %s", rel)
	case 1:
	default:
		return "", fmt.Errorf("old_text occurs %d times in %s; include more context so it is unique", n, rel)
	}
	return strings.Replace(cur, old, new, 1), nil
}

// writeFile writes bytes to a wiki path through a temporary file and a
// rename, creating folders as needed.
func (w *Wiki) writeFile(rel string, b []byte) error {
	full, err := w.resolveForWrite(rel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return fmt.Errorf("creating folder for %s: %w", rel, err)
	}
	// Folders were just created; check again that none of them is a link
	// swapped in meanwhile.
	if _, err := w.resolveForWrite(rel); err != nil {
		return err
	}
	if err := atomicfile.Write(full, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	return nil
}

// appendLog adds one line to log.md. A failure is logged, not returned:
// the trail is a convenience, the write itself already happened.
func (w *Wiki) appendLog(op, rel, who string) {
	full := filepath.Join(w.root, LogFile)
	if fi, err := os.Lstat(full); err == nil && !fi.Mode().IsRegular() {
		w.log.Warn("wikiLog", "err", "log.md is not a regular file")
		return
	}
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		w.log.Warn("wikiLog", "err", err)
		return
	}
	defer f.Close()
	line := fmt.Sprintf("- %s %s [[%s]] (%s)\n", w.now().UTC().Format("2006-01-02 15:04"), op, strings.TrimSuffix(rel, ".md"), who)
	if _, err := f.WriteString(line); err != nil {
		w.log.Warn("wikiLog", "err", err)
	}
}

// WriteSource writes raw material under sources/ — the mail promoter's
// canonical thread notes and the attachments it keeps — atomically, then
// indexes it and logs the operation. The agent's tools cannot reach it.
func (w *Wiki) WriteSource(ctx context.Context, rel string, b []byte, who string) error {
	if !strings.HasPrefix(rel, SourcesDir+"/") || len(rel) > 512 || !utf8.ValidString(rel) {
		return fmt.Errorf("%w %q: not under sources/", ErrBadPath, rel)
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.HasPrefix(seg, ".") || strings.ContainsAny(seg, "\\\x00") {
			return fmt.Errorf("%w %q: empty, dot or hidden path segment", ErrBadPath, rel)
		}
	}
	_, err := os.Lstat(filepath.Join(w.root, filepath.FromSlash(rel)))
	existed := err == nil
	if err := w.writeFile(rel, b); err != nil {
		return err
	}
	op := "update"
	if !existed {
		op = "create"
	}
	w.appendLog(op, rel, who)
	return w.IndexPath(ctx, rel)
}
