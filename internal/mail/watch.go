package mail

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch keeps root mirrored with low latency until ctx ends: filesystem
// events mark directories dirty and, after a short quiet period, only those
// directories are reconciled. Events are an optimisation; the periodic
// Reconcile stays the authority, so a missed event only delays a change.
func (s *Store) Watch(ctx context.Context, root string, opts ImportOptions, quiet time.Duration) error {
	if quiet <= 0 {
		quiet = 500 * time.Millisecond
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("starting mail watcher: %w", err)
	}
	defer w.Close()
	// addTree watches dir and everything below it and returns the
	// directories, so a folder created with mail already inside is scanned.
	addTree := func(dir string) []string {
		var dirs []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if n := d.Name(); p != dir && (n == "tmp" || n == ".notmuch" || n == ".git") {
				return filepath.SkipDir
			}
			if err := w.Add(p); err != nil {
				s.log.Warn("mailWatchAdd", "path", p, "err", err)
			}
			dirs = append(dirs, p)
			return nil
		})
		return dirs
	}
	addTree(root)
	dirty := map[string]bool{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			s.log.Warn("mailWatch", "err", err)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					for _, d := range addTree(ev.Name) {
						dirty[d] = true
					}
				}
			}
			dirty[filepath.Dir(ev.Name)] = true
			timer.Reset(quiet)
		case <-timer.C:
			dirs := make([]string, 0, len(dirty))
			for d := range dirty {
				dirs = append(dirs, d)
			}
			sort.Strings(dirs)
			clear(dirty)
			o := opts
			o.Dirs = dirs
			if _, err := s.sync(ctx, root, o, true); err != nil && ctx.Err() == nil {
				s.log.Warn("mailWatchSync", "err", err)
			}
		}
	}
}
